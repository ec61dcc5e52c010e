"""``python -m prefect_agentenv.agents.llm --host 127.0.0.1 --port 9003`` serves the llm agent.

The model endpoint comes from the process environment — ``OPENAI_BASE_URL``, optional
``OPENAI_API_KEY``, and ``AGENTENV_MODEL`` — which is how a launcher hands it over.
"""

import os

from prefect_agentenv.agents.llm.agent import LlmAgent, ModelAccess
from prefect_agentenv.agents.server import main

if __name__ == "__main__":
    main(LlmAgent.with_model(ModelAccess.from_environment(os.environ)))
