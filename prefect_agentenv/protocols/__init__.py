"""Wire clients: how the package talks to envs, agents and models, and reads what they send.

* ``env`` — the env protocol, client side: card, JSON-RPC data plane, clock, triggers.
* ``mcp`` — MCP over streamable HTTP, an env's tools.
* ``a2a`` / ``a2a_card`` / ``a2a_reply`` — prompting agents over A2A 1.0 and 0.3, their cards and
  replies as typed models.
* ``agentenv_ext`` — the AgentEnv configuration extensions an agent's card declares.
* ``steering`` — a follow-up message into an A2A task that is still working.
* ``openai`` — OpenAI-compatible ``/chat/completions``.
* ``probes`` — what of the env or agent protocol a running peer speaks.
* ``jsonrpc`` / ``parts`` / ``wire`` / ``tls`` — JSON-RPC framing, A2A-style parts, liberal reading
  with errors that name the peer, one TLS context per process.
"""
