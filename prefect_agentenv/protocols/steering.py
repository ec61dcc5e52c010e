"""Live steering over A2A: a follow-up message into a task that is still working.

A2A lets a client send a message naming an existing ``taskId`` (and its ``contextId``). An agent
that declares :data:`STEERING_EXTENSION` in its card's ``capabilities.extensions`` takes such a
message while the task is ``working``: it answers at once with the task as it is (still
``working``) and hands the text to the running turn at its next safe point (between tool calls,
before it replies). The task's final reply is the one answer to both messages. An agent without
the extension queues or refuses such a message as its A2A server does.
"""

from __future__ import annotations

from prefect_agentenv.protocols.a2a_card import A2ACard

STEERING_EXTENSION = "urn:prefect-agentenv:a2a-steering/v1"
"""The card extension an agent declares when it takes messages into a working task."""


def declares_steering(card: A2ACard) -> bool:
    """Whether the card declares live steering (this extension, or another whose URI names steering)."""
    return any(e.get("uri") == STEERING_EXTENSION or "steer" in str(e.get("uri", "")).lower()
               for e in card.extensions)
