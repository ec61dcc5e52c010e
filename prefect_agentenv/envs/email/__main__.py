"""``python -m prefect_agentenv.envs.email --host 127.0.0.1 --port 8123`` serves the email env."""

from prefect_agentenv.envs.email.env import EmailEnv
from prefect_agentenv.envs.server import main

if __name__ == "__main__":
    main(EmailEnv)
