"""Reading task documents: JSON or YAML text, seeds for ``<name>`` placeholders, ``${VAR}``.

Parsing is bounded, so a hostile or broken document costs seconds, never the machine: at most
``MAX_DOCUMENT_BYTES`` of text, ``MAX_DEPTH`` levels of nesting, ``MAX_YAML_ALIASES`` YAML
aliases and ``MAX_NODES`` values once aliases are expanded (a "billion laughs" document is
refused while it is read). The same limits hold for task and benchmark documents.
"""

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
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]*$"
"""Entity ids and seed columns: what a ``<placeholder>`` can name (a dot separates entity fields)."""
_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
"""Largest document read (16 MiB)."""
MAX_DEPTH = 64
"""Deepest nesting of lists and objects."""
MAX_YAML_ALIASES = 1000
"""Most ``*alias`` references in one YAML document."""
MAX_NODES = 1_000_000
"""Most values (strings, numbers, lists, objects) in a document after YAML aliases are expanded."""


class ParseError(Exception):
    """The text is not valid JSON/YAML (or the folder not a valid Harbor task); ``.problem`` says where,
    ``.problems`` lists every problem when there are several (a Harbor task's ``task.toml``)."""

    def __init__(self, problem: Problem, problems: list[Problem] | None = None) -> None:
        super().__init__(problem.render())
        self.problem = problem
        self.problems = problems or [problem]


def parse_text(text: str, source: str = "<document>") -> Any:
    """Parse JSON (or YAML when the text is not JSON-looking or the file is .yaml/.yml), within the limits.

    Raises:
        ParseError: the text is not valid, or passes one of the module's limits.
    """
    if len(text) > MAX_DOCUMENT_BYTES:
        raise ParseError(_too_big(f"the document is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB"))
    data = _parse(text, source)
    check_bounds(data)
    return data


def _parse(text: str, source: str) -> Any:
    is_yaml = source.endswith((".yaml", ".yml")) or not text.lstrip().startswith(("[", "{"))
    if not is_yaml:
        try:
            return json.loads(text)
        except RecursionError:
            raise ParseError(_too_big(f"the document is nested more than {MAX_DEPTH} levels deep")) from None
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
        return yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 - a SafeLoader with limits
    except _LimitError as exc:
        raise ParseError(_too_big(str(exc))) from None
    except RecursionError:
        raise ParseError(_too_big(f"the document is nested more than {MAX_DEPTH} levels deep")) from None
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
    """Read and parse a document file (refused unread when it is larger than the limit).

    A folder is a Harbor task (a ``task.toml`` in it: its compiled task document) or a Harbor dataset
    (a folder of task folders: a benchmark of them), read by :mod:`prefect_agentenv.documents.harbor`.
    """
    p = Path(path)
    if p.is_dir():
        return _harbor_folder(p)
    if p.is_file() and p.stat().st_size > MAX_DOCUMENT_BYTES:
        raise ParseError(_too_big(f"the file is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB"))
    return parse_text(p.read_text(encoding="utf-8"), str(p))


def _harbor_folder(folder: Path) -> Any:
    from prefect_agentenv.documents.harbor.compile import dataset_benchmark_data, task_document_data
    from prefect_agentenv.documents.harbor.folder import HarborTaskError, is_dataset_folder, is_task_folder

    if is_task_folder(folder):
        try:
            return task_document_data(folder)
        except HarborTaskError as exc:
            raise ParseError(exc.problems[0], exc.problems) from None
    if is_dataset_folder(folder):
        return dataset_benchmark_data(folder)
    raise ParseError(Problem(f"{folder} is a folder with no task.toml and no task folders in it", path=str(folder),
                             hint="give a Harbor task folder, a folder of them, or a task document file"))


class _LimitError(Exception):
    pass


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, counting aliases and nesting while it composes the document.

    A date written without quotes stays text, as in JSON: free-form fields (agent_config, trigger
    data) take JSON values only, and the fields typed as times parse ISO 8601 text themselves."""

    yaml_implicit_resolvers = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise _LimitError(f"the document uses more than {MAX_YAML_ALIASES} YAML aliases")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _LimitError(f"the document is nested more than {MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def check_bounds(data: Any) -> None:
    """Refuse data nested deeper than ``MAX_DEPTH`` or holding more than ``MAX_NODES`` values.

    Iterative and stopping at the first limit, so YAML aliases that expand a small file into
    billions of values are refused in bounded time.

    Raises:
        ParseError: a limit is passed.
    """
    stack: list[tuple[Any, int]] = [(data, 1)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise ParseError(_too_big(f"the document holds more than {MAX_NODES:,} values (YAML aliases count "
                                      "once per use)"))
        if isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                raise ParseError(_too_big(f"the document is nested more than {MAX_DEPTH} levels deep"))
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))


def _too_big(message: str) -> Problem:
    return Problem(message, hint="split the document, or write it without deep nesting and repeated YAML aliases")


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
