"""The ``user-sim`` reference agent: plays the user in a prompt_agent conversation.

Serve it with ``python -m prefect_agentenv.agents.user_sim --host 127.0.0.1 --port 9002``.

Each prompt it receives is the assistant's latest reply; it answers with the JSON **text**
``{"message": "...", "done": false}`` — ``message`` is the user's next prompt, ``done: true``
ends the conversation. The trailing data part carries the same two keys next to ``usage``,
so a client may read either.

Configuration (agent-config): ``replies`` — the user's messages, one per turn of a context;
``done_after`` — the turn (1-based) whose answer says ``done: true`` (default: the turn after
the last reply). Past its replies, and with no configuration at all, it thanks the assistant;
so by default the first answer is a thank-you with ``done: true``.
"""

from prefect_agentenv.agents.user_sim.agent import UserSimulator

__all__ = ["UserSimulator"]
