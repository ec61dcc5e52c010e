"""Runs a run_code script in its own process: ``python -P script_runner.py FOLDER ENTRY_FILE ENTRYPOINT``.

The folder holds ``input.json`` and the script's files; the entry file defines
``def run(input)`` (or another entrypoint, sync or async) returning JSON. The result is written
to ``output.json``. Standard library only, so any Python 3 can run it (``-P``: the runner's own
folder stays off ``sys.path``; the script's folder is put first instead, so it can import its
siblings).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import runpy
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    folder, entry_file, entrypoint = Path(argv[0]), argv[1], argv[2]
    payload = json.loads((folder / "input.json").read_text(encoding="utf-8"))
    script = folder / entry_file
    sys.path.insert(0, str(script.parent))
    namespace = runpy.run_path(str(script), run_name="agentenv_run_code")
    function = namespace.get(entrypoint)
    if not callable(function):
        print(f"{entry_file} does not define {entrypoint}(input)", file=sys.stderr)
        return 3
    result = function(payload)
    if inspect.isawaitable(result):
        result = asyncio.run(_awaited(result))
    try:
        text = json.dumps(result)
    except (TypeError, ValueError) as exc:
        print(f"{entrypoint}() returned something that is not JSON: {exc}", file=sys.stderr)
        return 4
    (folder / "output.json").write_text(text, encoding="utf-8")
    return 0


async def _awaited(result: object) -> object:
    return await result  # type: ignore[misc]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
