"""Imported by every Python a grading command starts (docs/security.md, "Grading apart"): its folder is first on
``PYTHONPATH``, and ``PYTHONSAFEPATH=1`` keeps the folder a command starts in off the front of the import path.

The command's own folder (a script's folder, else the working folder for ``-m`` and ``-c``) is put back **at the
end**, after the standard library and the installed packages: a solution's modules stay importable by the
task's tests, and none of them can stand in for a module of the library. Standard library only.
"""

import os
import sys


def _command_folder() -> str:
    first = sys.argv[0] if sys.argv else ""
    if first and first not in ("-c", "-m", "-"):
        return os.path.dirname(os.path.abspath(first))
    return os.getcwd()


if getattr(sys.flags, "safe_path", False):
    try:
        _folder = _command_folder()
    except OSError:
        _folder = ""
    if _folder and _folder not in sys.path:
        sys.path.append(_folder)
