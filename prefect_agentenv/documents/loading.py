"""Reading task documents: JSON or YAML text, seeds for ``<name>`` placeholders, ``${VAR}``."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from prefect_agentenv.documents.problems import Problem

_PLACEHOLDER = re.compile(r"<([A-Za-z_][A-Za-z0-9_.-]*)>")
_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ParseError(Exception):
    """The text is not valid JSON/YAML; ``.problem`` says where."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.render())
        self.problem = problem


def parse_text(text: str, source: str = "<document>") -> Any:
    """Parse JSON (or YAML when the text is not JSON-looking or the file is .yaml/.yml)."""
    is_yaml = source.endswith((".yaml", ".yml")) or not text.lstrip().startswith(("[", "{"))
    if not is_yaml:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParseError(
                Problem(
                    f"invalid JSON: {exc.msg}",
                    line=exc.lineno,
                    column=exc.colno,
                    hint="check for a missing comma, quote or bracket just before this position",
                )
            ) from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ParseError(
            Problem(
                f"invalid YAML: {getattr(exc, 'problem', None) or exc}",
                line=mark.line + 1 if mark else None,
                column=mark.column + 1 if mark else None,
                hint="check the indentation and quoting near this position",
            )
        ) from exc


def read_document(path: str | Path) -> Any:
    """Read and parse a document file."""
    p = Path(path)
    return parse_text(p.read_text(encoding="utf-8"), str(p))


def fill_placeholders(value: Any, seeds: Mapping[str, Any]) -> Any:
    """Replace ``<name>`` in every string with ``seeds[name]``; unknown names are left as they are."""
    if not seeds:
        return value
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: str(seeds[m.group(1)]) if m.group(1) in seeds else m.group(0), value)
    if isinstance(value, list):
        return [fill_placeholders(v, seeds) for v in value]
    if isinstance(value, dict):
        return {k: fill_placeholders(v, seeds) for k, v in value.items()}
    return value


def resolve_env_vars(value: Any, environ: Mapping[str, str] | None = None, used: set[str] | None = None) -> Any:
    """Replace ``${VAR}`` / ``${VAR:-default}`` from the environment.

    Args:
        environ: the environment (``os.environ`` when omitted).
        used: collects every substituted value, so reports can redact them.

    Raises:
        KeyError: a variable is unset and has no default.
    """
    env = os.environ if environ is None else environ
    if isinstance(value, str):
        def sub(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if name in env:
                resolved = env[name]
            elif default is not None:
                return default
            else:
                raise KeyError(name)
            if used is not None and resolved:
                used.add(resolved)
            return resolved

        return _ENV_VAR.sub(sub, value)
    if isinstance(value, list):
        return [resolve_env_vars(v, env, used) for v in value]
    if isinstance(value, dict):
        return {k: resolve_env_vars(v, env, used) for k, v in value.items()}
    return value


def env_var_names(value: Any) -> set[str]:
    """Names of the ``${VAR}`` references without a default in a value."""
    names: set[str] = set()
    if isinstance(value, str):
        names.update(m.group(1) for m in _ENV_VAR.finditer(value) if m.group(2) is None)
    elif isinstance(value, list):
        for v in value:
            names |= env_var_names(v)
    elif isinstance(value, dict):
        for v in value.values():
            names |= env_var_names(v)
    return names
