"""An MCP-only server built with the ``mcp`` package's FastMCP (1.x, from the peers' venv): no env
card, no data plane, just tools over streamable HTTP at ``/mcp``.

It stands for the MCP servers users already run. Run with the peers' interpreter:
``.venv-peers/bin/python tests/peers/mcp_only_server.py --port N``.
"""

from __future__ import annotations

import argparse

from mcp.server.fastmcp import FastMCP


def build(host: str, port: int) -> FastMCP:
    server = FastMCP("calculator", host=host, port=port, log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two whole numbers."""
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        """The text in capitals."""
        return text.upper()

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    build(args.host, args.port).run(transport="streamable-http")
