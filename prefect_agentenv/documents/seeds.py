"""Benchmark seed rows: values for ``<name>`` placeholders, written inline or read from a CSV file."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefect_agentenv.documents.benchmarks.document import CsvSeeds, SeedRows
from prefect_agentenv.documents.loading import _PLACEHOLDER, NAME_PATTERN
from prefect_agentenv.documents.problems import Problem

SeedRow = dict[str, str]
"""One row, every value as text: that is what a placeholder becomes."""

_NAME = re.compile(NAME_PATTERN)


def load_seed_rows(seeds: SeedRows | CsvSeeds | None, base_dir: Path) -> tuple[list[SeedRow], list[Problem]]:
    """The seed rows of a benchmark and the problems found reading them.

    Every row must have the same columns, and a column must be a placeholder name without a dot
    (a dot separates an entity from its field in ``<entity.field>``).
    """
    if seeds is None:
        return [], []
    if isinstance(seeds, CsvSeeds):
        rows, problems = _read_csv(seeds.csv, base_dir)
        path = "$.seeds.csv"
    else:
        rows = [{k: _text(v) for k, v in row.items()} for row in seeds]
        problems, path = [], "$.seeds"
    if not problems and not rows:
        problems.append(Problem("the seeds have no row", path=path, hint="add at least one row, or remove seeds"))
    problems += _check_columns(rows, path, isinstance(seeds, CsvSeeds))
    return (rows if not problems else []), problems


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _read_csv(relative: str, base_dir: Path) -> tuple[list[SeedRow], list[Problem]]:
    path = "$.seeds.csv"
    if Path(relative).is_absolute():
        return [], [Problem(f"the seeds file {relative!r} is an absolute path", path=path,
                            hint="write it relative to the benchmark file, so the benchmark runs anywhere")]
    try:
        text = (base_dir / relative).read_text(encoding="utf-8")
    except OSError as exc:
        return [], [Problem(f"cannot read the seeds file {relative}: {exc.strerror or exc}", path=path,
                            hint="the path is relative to the benchmark file")]
    except UnicodeDecodeError as exc:
        return [], [Problem(f"the seeds file {relative} is not UTF-8 text: {exc.reason}", path=path)]
    return _parse_csv(text, relative)


def _parse_csv(text: str, name: str) -> tuple[list[SeedRow], list[Problem]]:
    """Rows keyed by the header; a line with too many or too few values is a problem (with its line)."""
    try:
        lines = list(_records(text))
    except csv.Error as exc:
        return [], [Problem(f"the seeds file {name} is not valid CSV: {exc}", path="$.seeds.csv")]
    if not lines:
        return [], [Problem(f"the seeds file {name} is empty", path="$.seeds.csv",
                            hint="the first line names the columns, each further line is one row")]
    (_, header), body = lines[0], lines[1:]
    rows: list[SeedRow] = []
    problems: list[Problem] = []
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        problems.append(Problem(f"{name}: the header repeats column(s) {', '.join(repeated)}", path="$.seeds.csv",
                                hint="give every column its own name"))
    for line, values in body:
        if len(values) != len(header):
            problems.append(Problem(f"{name} line {line}: {len(values)} value(s) for {len(header)} column(s)",
                                    path="$.seeds.csv",
                                    hint=f"every line needs one value per column: {', '.join(header)}"))
            continue
        rows.append(dict(zip(header, values, strict=True)))
    return rows, problems


def _records(text: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, values) of every non-blank CSV record."""
    reader = csv.reader(io.StringIO(text), strict=True)
    start = 1
    for values in reader:
        if any(v.strip() for v in values):
            yield start, [v.strip() for v in values]
        start = reader.line_num + 1


def _check_columns(rows: list[SeedRow], path: str, from_csv: bool) -> list[Problem]:
    if not rows:
        return []
    problems: list[Problem] = []
    columns = list(rows[0])
    for column in columns:
        if not _NAME.match(column):
            problems.append(Problem(f"seed column {column!r} cannot be a placeholder name", path=path,
                                    hint="use letters, digits, '_' and '-', starting with a letter or '_' "
                                         "(a '.' is kept for <entity.field>)"))
    if from_csv:
        return problems
    for i, row in enumerate(rows[1:], start=1):
        if set(row) != set(columns):
            problems.append(Problem(f"row {i} has columns {sorted(row)} but row 0 has {sorted(columns)}",
                                    path=f"{path}[{i}]", hint="give every row the same columns"))
    return problems


def placeholder_names(value: Any) -> set[str]:
    """Every ``<name>`` used in the strings of a value (keys are not filled, so not counted)."""
    found: set[str] = set()
    if isinstance(value, str):
        found.update(m.group(1) for m in _PLACEHOLDER.finditer(value))
    elif isinstance(value, list):
        for item in value:
            found |= placeholder_names(item)
    elif isinstance(value, dict):
        for item in value.values():
            found |= placeholder_names(item)
    return found
