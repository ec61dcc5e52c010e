"""``python -m prefect_agentenv.agents.user_sim --host 127.0.0.1 --port 9002`` serves the user simulator."""

from prefect_agentenv.agents.server import main
from prefect_agentenv.agents.user_sim.agent import UserSimulator

if __name__ == "__main__":
    main(UserSimulator)
