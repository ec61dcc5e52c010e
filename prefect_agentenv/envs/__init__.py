"""The reference envs shipped in the package: ``email`` and ``records``.

Both are built on ``server`` (card, JSON-RPC data plane, MCP, clock and triggers); ``catalog``
maps env ids to them when no block names one.
"""
