"""What ``nightly_scale.py`` watches while a benchmark runs: memory, the UI's reads, the results file.

* :class:`Sampler` -- every few seconds, the resident memory (``VmRSS``) of the flow process and
  of the Prefect server (its process group, its PostgreSQL cluster's included) beside the number
  of results written so far, so memory can be fitted against task runs (a leak shows as a slope);
* :class:`UiReader` -- about once a second, the API calls the Prefect UI makes for the flow-runs
  list and for a flow-run page (the benchmark's own and its newest child's), each timed;
* :func:`read_lines` / :func:`check_results` -- the run's ``results.jsonl`` read back, and lost
  and duplicated results counted by task key, seed and epoch.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

RERUN_OUTCOMES = {"FAILED", "TIMED_OUT"}
"""Outcomes a resume runs again (with status ``crashed`` and infrastructure failures)."""


def group_rss_kb(pgid: int) -> int:
    """Resident memory of every process in a process group, in KB."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:
                continue
            total += rss_kb(int(stat.parent.name))
        except (OSError, ValueError):
            continue
    return total


def rss_kb(pid: int) -> int:
    """``VmRSS`` of one process in KB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def machine_busy_s() -> float:
    """CPU seconds the whole machine spent busy since boot (``/proc/stat``: all but idle and iowait)."""
    import os

    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def read_lines(path: Path | None) -> list[dict[str, Any]]:
    """Every result line of a run's ``results.jsonl`` (an absent file: none)."""
    if path is None or not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def count_lines(path: Path | None) -> int:
    """How many results a run's ``results.jsonl`` holds, without parsing them (polled twice a second)."""
    try:
        return path.read_bytes().count(b"\n") if path is not None else 0
    except OSError:
        return 0


def run_key(line: dict[str, Any]) -> tuple[str, int, int]:
    return (line["task_id"], int(line.get("seed_index", 0)), int(line.get("epoch", 0)))


def finished(line: dict[str, Any]) -> bool:
    """A result a resume keeps (it does not run that key again)."""
    return (line.get("status") != "crashed" and line.get("outcome") not in RERUN_OUTCOMES
            and (line.get("failure") or {}).get("kind") != "infrastructure")


def check_results(lines: list[dict[str, Any]], expected: int, before: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Lost and duplicated results of a run of ``expected`` task runs; with ``before`` (the lines
    when the run was killed), also which finished task runs a resume ran again."""
    by_key: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for line in lines:
        by_key.setdefault(run_key(line), []).append(line)
    duplicated = sum(1 for rows in by_key.values() if len(rows) > 1 and finished(rows[0]))
    outcomes: dict[str, int] = {}
    for rows in by_key.values():
        outcomes[rows[-1].get("outcome", "?")] = outcomes.get(rows[-1].get("outcome", "?"), 0) + 1
    out: dict[str, Any] = {"lines": len(lines), "distinct_keys": len(by_key), "expected": expected,
                           "lost": max(expected - len(by_key), 0), "duplicated": duplicated,
                           "final_outcomes": outcomes,
                           "not_passed": [{k: line.get(k) for k in ("task_id", "seed_index", "epoch", "status", "outcome",
                                                                     "error", "failure", "attempts", "retried", "flow_run_id")}
                                          for line in lines if line.get("outcome") != "PASSED"][:20]}
    if before is not None:
        done_before = {run_key(line) for line in before if finished(line)}
        count_before: dict[tuple[str, int, int], int] = {}
        for line in before:
            count_before[run_key(line)] = count_before.get(run_key(line), 0) + 1
        out["finished_before_kill"] = len(done_before)
        out["lines_before_kill"] = len(before)
        out["finished_rerun_after_resume"] = sum(1 for k in done_before if len(by_key.get(k, [])) > count_before[k])
        out["run_by_resume"] = len(lines) - len(before)
    return out


def fit_slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y over x (None with fewer than 3 points or no spread in x)."""
    if len(points) < 3:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


@dataclass
class Sample:
    t_s: float
    results: int
    flow_rss_kb: int
    server_rss_kb: int


@dataclass
class Sampler:
    """Samples memory and the results count every ``every_s`` seconds in a thread of its own."""

    flow_pid: Callable[[], int | None]
    server_pgids: list[int]
    results: Callable[[], int]
    every_s: float = 3.0
    samples: list[Sample] = field(default_factory=list)
    t0: float = field(default_factory=time.monotonic)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            pid = self.flow_pid()
            self.samples.append(Sample(round(time.monotonic() - self.t0, 2), self.results(),
                                       rss_kb(pid) if pid else 0, sum(group_rss_kb(g) for g in self.server_pgids)))
            self._stop.wait(self.every_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self, expected: int) -> dict[str, Any]:
        """Peaks, and the slope of memory over results after the first 10 % of this leg (the pools filling)."""
        first = self.samples[0].results if self.samples else 0  # a resume starts with results in
        steady = [s for s in self.samples if s.results >= first + max((expected - first) // 10, 1) and s.flow_rss_kb]
        out: dict[str, Any] = {"samples": len(self.samples)}
        for name in ("flow_rss_kb", "server_rss_kb"):
            values = [getattr(s, name) for s in self.samples if getattr(s, name)]
            out[name.replace("_kb", "_peak_mb")] = round(max(values) / 1024, 1) if values else None
            slope = fit_slope([(s.results, getattr(s, name)) for s in steady])
            out[name.replace("rss_kb", "kb_per_task_run")] = None if slope is None else round(slope, 2)
            if steady:
                out[name.replace("rss_kb", "rss_mb_at_10pct_and_end")] = [round(getattr(steady[0], name) / 1024, 1),
                                                                          round(getattr(steady[-1], name) / 1024, 1)]
        return out


FLOW_RUNS_LIST = [
    ("POST", "/flow_runs/paginate", lambda ids: {"page": 1, "limit": 10, "sort": "START_TIME_DESC",
                                                 "flow_runs": {"operator": "and_"}}),
    ("POST", "/flow_runs/count", lambda ids: {"flow_runs": {"operator": "and_"}}),
    ("POST", "/ui/flow_runs/history", lambda ids: {"history_start": "2020-01-01T00:00:00Z",
                                                   "history_end": "2100-01-01T00:00:00Z",
                                                   "history_interval_seconds": 86400 * 365 * 10}),
]
"""The flow-runs list: a page of the newest runs, the total and the bar chart's history."""


def _page(kind: str) -> list[tuple[str, str, Callable[[str], Any]]]:
    """The calls a flow-run page makes for one flow run (``{id}`` in the path)."""
    return [
        ("GET", "/flow_runs/{id}", lambda i: None),
        ("GET", "/flow_runs/{id}/graph-v2", lambda i: None),
        ("POST", "/task_runs/filter", lambda i: {"task_runs": {"flow_run_id": {"any_": [i]}}, "limit": 50,
                                                 "sort": "EXPECTED_START_TIME_DESC"}),
        ("POST", "/logs/filter", lambda i: {"logs": {"flow_run_id": {"any_": [i]}}, "limit": 200,
                                            "sort": "TIMESTAMP_ASC"}),
        ("POST", "/artifacts/filter", lambda i: {"artifacts": {"flow_run_id": {"any_": [i]}}, "limit": 50}),
        ("POST", "/flow_runs/count", lambda i: {"flow_runs": {"parent_flow_run_id": {"any_": [i]}}}),
    ]


@dataclass
class UiReader:
    """The Prefect UI's reads, about once a second, each call timed (its status kept)."""

    api: str
    every_s: float = 1.0
    calls: dict[str, list[float]] = field(default_factory=dict)
    pages: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> UiReader:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _call(self, client: httpx.Client, name: str, method: str, path: str, body: Any) -> Any:
        t0 = time.monotonic()
        try:
            r = client.request(method, self.api + path, json=body, timeout=60)
            ok = r.status_code == 200
        except httpx.HTTPError:
            r, ok = None, False
        self.calls.setdefault(name, []).append(time.monotonic() - t0)
        if not ok:
            key = f"{name} {r.status_code if r is not None else 'transport error'}"
            self.errors[key] = self.errors.get(key, 0) + 1
            return None
        return r.json()

    def _run(self) -> None:
        with httpx.Client() as client:
            while not self._stop.is_set():
                t0 = time.monotonic()
                self.round(client)
                self._stop.wait(max(self.every_s - (time.monotonic() - t0), 0.05))

    def round(self, client: httpx.Client) -> None:
        t0 = time.monotonic()
        listed = None
        for method, path, body in FLOW_RUNS_LIST:
            got = self._call(client, f"list {path}", method, path, body([]))
            listed = got if path.endswith("paginate") else listed
        self.pages.setdefault("flow-runs list", []).append(time.monotonic() - t0)
        runs = (listed or {}).get("results", [])
        bench = self._call(client, "find benchmark", "POST", "/flow_runs/filter",
                           {"flow_runs": {"parent_task_run_id": {"is_null_": True}}, "sort": "START_TIME_DESC",
                            "limit": 1})
        targets = {"benchmark flow-run page": (bench or [{}])[0].get("id"),
                   "task-run flow-run page": next((r["id"] for r in runs if r.get("parent_task_run_id")), None)}
        for page, flow_run_id in targets.items():
            if not flow_run_id:
                continue
            t1 = time.monotonic()
            for method, path, body in _page(page):
                self._call(client, f"page {path}", method, path.replace("{id}", flow_run_id), body(flow_run_id))
            self.pages.setdefault(page, []).append(time.monotonic() - t1)

    def summary(self) -> dict[str, Any]:
        def stats(values: list[float]) -> dict[str, Any]:
            ordered = sorted(values)
            return {"n": len(ordered), "p50_ms": round(1000 * ordered[len(ordered) // 2], 1),
                    "p95_ms": round(1000 * ordered[min(int(len(ordered) * 0.95), len(ordered) - 1)], 1),
                    "max_ms": round(1000 * ordered[-1], 1)}

        return {"pages": {k: stats(v) for k, v in self.pages.items() if v},
                "calls": {k: stats(v) for k, v in self.calls.items() if v}, "errors": self.errors}
