"""Reference servers shipped in the package (envs and agents): a module run as
``python -m <module> --host H --port P``, resolved when no block names the id."""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class ReferenceServer:
    """A reference env or agent."""

    id: str
    version: str
    module: str
    description: str
    uses_model: bool = True
    """False for a server known to call no model: no mock model is started for it."""

    def command(self) -> list[str]:
        """argv template; ``{host}`` and ``{port}`` are filled by the launcher."""
        return [sys.executable, "-m", self.module, "--host", "{host}", "--port", "{port}"]

    def install_paths(self) -> list[str]:
        """Folders the server's code lives in beyond its Python and this package (a confined agent sees
        only these, its sandbox and the system): none for the package's own servers."""
        return []
