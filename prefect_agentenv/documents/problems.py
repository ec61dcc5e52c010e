"""Problems found in a document, and the JSON paths that say where.

:class:`Problem` itself is defined at the bottom of the package (:mod:`prefect_agentenv.problems`),
beside the exception tree that carries it; the validators here import it from this module.
"""

from __future__ import annotations

from prefect_agentenv.problems import Problem

__all__ = ["Problem", "json_path"]


def json_path(prefix: str, loc: tuple[str | int, ...]) -> str:
    """Render a location tuple as a JSON path under ``prefix``."""
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out
