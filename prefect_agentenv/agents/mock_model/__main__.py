"""``python -m prefect_agentenv.agents.mock_model --host 127.0.0.1 --port 8400`` serves the mock model."""

from prefect_agentenv.agents.mock_model.app import main

if __name__ == "__main__":
    main()
