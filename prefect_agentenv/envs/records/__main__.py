"""``python -m prefect_agentenv.envs.records --host 127.0.0.1 --port 8123`` serves the records env."""

from prefect_agentenv.envs.records.env import RecordsEnv
from prefect_agentenv.envs.server import main

if __name__ == "__main__":
    main(RecordsEnv)
