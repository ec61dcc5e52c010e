"""The ``email`` reference env: one account's mailbox, in memory, with a virtual clock.

Serve it with ``python -m prefect_agentenv.envs.email --host 127.0.0.1 --port 8123``.

Seed (``data/add``): each part is a data part — or a JSON file/text part — holding::

    {
      "account": {"address": "me@example.com", "name": "Sam"},          # optional
      "emails": [{"id": "m1", "from": "dana@example.com", "to": ["me@example.com"],
                  "cc": [], "subject": "Q3 numbers", "body": "...",
                  "date": "2026-03-02T09:00:00Z", "folder": "inbox", "read": false,
                  "in_reply_to": null}],
      "sent": [...]                                                        # filed in "sent"
    }

Only ``from`` is required in an email. ``id`` defaults to ``msg-N``, ``date`` to the
clock's now, ``folder`` to ``inbox``; ``to``/``cc`` also accept one comma-separated string;
other members are kept as given. Unknown top-level keys and ids already present are refused
(-32602 / -32000 ``duplicate_id``).

Export (``data/get``): one data part ``{"account": {...}, "emails": [...], "sent": [...]}``
— ``emails`` is every message outside the ``sent`` folder, ``sent`` what was sent (by the
agent or seeded) — the same shape as the seed, so a snapshot loads back as it was. A sent
mail looks like ``{"id": "msg-3", "from": <account>, "to": [...], "cc": [...], "subject",
"body", "date": <virtual clock at sending>, "folder": "sent", "read": true, "in_reply_to"}``.

MCP tools: ``email_search(query="", folder=None, limit=20)``, ``email_read(id)`` (marks the
email read), ``send(to, subject, body, in_reply_to=None, cc=None)``, ``list_sent()``,
``list_folders()``.

Trigger action ``deliver_email``: ``{"at": ISO time, "action": "deliver_email", "data":
<email>}`` files the email (dated ``at`` unless it has a date) once the clock reaches ``at``.
"""

from prefect_agentenv.envs.email.env import EmailEnv

__all__ = ["EmailEnv"]
