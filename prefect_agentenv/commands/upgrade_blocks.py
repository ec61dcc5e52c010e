"""``prefect-agentenv upgrade-blocks``: save the package's blocks again under their current schema."""

from __future__ import annotations

import typer


def upgrade_blocks_command() -> None:
    """Save env, agent, model and store blocks again under their current schema (masks secret_env values
    of blocks saved by earlier versions)."""
    # Imported here so the other commands do not pay for asyncio and Prefect's block machinery.
    import asyncio

    from prefect_agentenv.blocks.upgrade import upgrade_blocks
    from prefect_agentenv.commands._prefect_server import use_prefect_server

    use_prefect_server()

    upgraded = asyncio.run(upgrade_blocks())
    for name in upgraded:
        typer.echo(f"upgraded {name}")
    typer.echo(f"{len(upgraded)} block(s) upgraded" if upgraded else "every block is up to date")
