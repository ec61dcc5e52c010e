"""``python -m prefect_agentenv.agents.scripted --host 127.0.0.1 --port 9001`` serves the scripted agent."""

from prefect_agentenv.agents.scripted.agent import ScriptedAgent
from prefect_agentenv.agents.server import main

if __name__ == "__main__":
    main(ScriptedAgent)
