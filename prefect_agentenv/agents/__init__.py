"""The reference agents shipped in the package, and the built-in mock model.

``scripted``, ``llm``, ``judge`` and ``user_sim`` are A2A servers built on ``server`` (the A2A
scaffolding with the AgentEnv extensions), ``state`` (an agent's MCP servers, config, skills and
trajectories) and ``steering``; ``catalog`` maps agent ids to them when no block names one.
``mock_model`` is the labelled stand-in for a real model (chat completions, Responses, Anthropic
Messages). ``harnesses`` installs the coding-agent harnesses AgentEnv wraps (OpenCode, Codex CLI,
pi, OpenHands, Claude Code, Gemini CLI) and says how an installed one launches.
"""
