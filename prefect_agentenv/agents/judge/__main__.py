"""``python -m prefect_agentenv.agents.judge --host 127.0.0.1 --port 9004`` serves the judge agent.

The model endpoint comes from the process environment — ``OPENAI_BASE_URL``, optional
``OPENAI_API_KEY``, and ``AGENTENV_MODEL`` — which is how a launcher hands it over.
"""

import os

from prefect_agentenv.agents.judge.agent import JudgeAgent
from prefect_agentenv.agents.llm.agent import ModelAccess
from prefect_agentenv.agents.server import main

if __name__ == "__main__":
    main(JudgeAgent.with_model(ModelAccess.from_environment(os.environ)))
