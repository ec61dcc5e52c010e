"""Checks on output paths, made before a run starts so it never fails at the very end."""

from __future__ import annotations

import os
from pathlib import Path


def writable_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written as a file (``None`` when it can).

    The check creates missing parent folders and opens the file for appending (removed again
    when it did not exist), so a directory, a name too long for the filesystem, a read-only
    folder or a missing drive are all found now.
    """
    try:
        if path.is_dir():
            return "is a directory; give a file name"
        existed = path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    if not existed:
        try:
            os.unlink(path)
        except OSError:
            pass
    return None
