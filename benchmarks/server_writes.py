#!/usr/bin/env python
"""What one recorded task run writes into the Prefect server's database: rows and bytes per table.

The server's CPU per task run is mostly the writes it makes (``benchmarks/README.md``, round 15),
and CPU-seconds on a shared 2-core machine swing by 2–3x from one day to the next for the same
code. Rows and bytes do not: this counts them, so two source trees can be compared exactly.

For each ``--code`` tree it starts a fresh ``prefect server start`` (SQLite), runs a pooled
``bench`` of 1 task run (a warm-up: the flow and the artifact keys are created once), one of 1 and
then one of 1 + N (``task_overhead.py``'s reference pair and
documents), waits for the server to write everything down (its event persister and task-run
recorder work behind the requests), and reads each table's rows and bytes (SQLite's ``dbstat``,
indexes included) after each. The difference of the two, divided by N, is what one more task run
writes.

    python benchmarks/server_writes.py --code . --code OLD-TREE --runs 8 --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from task_overhead import RECORDINGS, Bench, PrefectServer, reference_pair  # noqa: E402

DRAIN_S = 8.0
"""Seconds to wait after a bench before reading: the event persister flushes on a timer."""


Sizes = dict[str, tuple[int, int]]
"""``table:<name>`` → (rows, bytes), ``event:<name>`` → (events of that name, 0)."""


def db_sizes(db: Path) -> Sizes:
    """Rows and bytes (index pages included) of each table, and events by name, read from a
    second connection."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        owners = dict(con.execute("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')"))
        sizes: dict[str, list[int]] = {}
        for name, pages in con.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            table = owners.get(name, name)
            if not table.startswith("sqlite_"):
                sizes.setdefault(table, [0, 0])[1] += int(pages)
        for table in sizes:
            sizes[table][0] = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
        out: Sizes = {f"table:{t}": (r, b) for t, (r, b) in sizes.items()}
        events = con.execute("SELECT event, count(*) FROM events GROUP BY event")
        out.update({f"event:{name}": (n, 0) for name, n in events})
        return out
    finally:
        con.close()


def settled_sizes(server: PrefectServer, db: Path) -> tuple[Sizes, float]:
    """The database once the server has written down what it was sent, and the server's CPU then."""
    time.sleep(DRAIN_S)
    server.settle()
    return db_sizes(db), server.cpu_s()


def difference(after: Sizes, before: Sizes) -> Sizes:
    zero = (0, 0)
    return {k: (after.get(k, zero)[0] - before.get(k, zero)[0], after.get(k, zero)[1] - before.get(k, zero)[1])
            for k in set(after) | set(before)}


@dataclass
class TreeWrites:
    """What one more task run of one source tree writes."""

    code: str
    ok: bool
    """Every task run of the three benches passed."""
    per_task_run: dict[str, tuple[float, float]]
    """``table:<name>`` → (rows, bytes), ``event:<name>`` → (events, 0)."""
    server_cpu_s: float
    """For information only: CPU-seconds move with the machine's speed."""

    def total(self, kind: str) -> tuple[float, float]:
        """Rows and bytes of all tables (``table``), or the count of all events (``event``)."""
        chosen = [v for k, v in self.per_task_run.items() if k.startswith(f"{kind}:")]
        return sum(r for r, _ in chosen), sum(b for _, b in chosen)

    def cell(self, key: str) -> str:
        rows, size = self.per_task_run.get(key, (0.0, 0.0))
        return f"{rows:.2f}" if key.startswith("event:") else f"{rows:.2f} / {size / 1024:.1f}"


def measure_tree(code: Path, runs: int, recording: str, tmp: Path) -> TreeWrites:
    """What one more task run writes: (bench of 1 + N less bench of 1) / N, per table and per event."""
    home = tmp / f"server-{len(list(tmp.iterdir()))}"
    server = PrefectServer(home)
    server.start()
    try:
        args = SimpleNamespace(shell=False)
        bench = Bench(args, tmp, server, reference_pair(), code=code,  # type: ignore[arg-type]
                      label=f"tree-{len(list(tmp.iterdir()))}", recording=recording)
        bench.prepare()
        db = home / "prefect.db"
        warm_ok = bench.bench(1, 1, pool=True).ok  # creates what is created once (the flow, artifact keys)
        start, cpu0 = settled_sizes(server, db)
        one_ok = bench.bench(1, 1, pool=True).ok
        after_one, cpu1 = settled_sizes(server, db)
        many_ok = bench.bench(1 + runs, 1, pool=True).ok
        after_many, cpu2 = settled_sizes(server, db)
    finally:
        server.stop()
    extra = difference(difference(after_many, after_one), difference(after_one, start))
    per_run = {k: (rows / runs, size / runs) for k, (rows, size) in sorted(extra.items()) if (rows, size) != (0, 0)}
    return TreeWrites(code=str(code), ok=warm_ok and one_ok and many_ok, per_task_run=per_run,
                      server_cpu_s=((cpu2 - cpu1) - (cpu1 - cpu0)) / runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--code", type=Path, action="append", required=True,
                        help="a source tree to measure (repeatable; `.` for this one)")
    parser.add_argument("--runs", type=int, default=8, help="extra task runs per tree (default 8)")
    parser.add_argument("--recording", default="full", choices=sorted(RECORDINGS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="server-writes-"))
    results = [measure_tree(code.resolve(), args.runs, args.recording, tmp) for code in args.code]
    keys = sorted({k for r in results for k in r.per_task_run})
    print("\none more task run: rows / KB written, by table, and events by name")
    print("| table | " + " | ".join(r.code for r in results) + " |")
    print("|---|" + "---|" * len(results))
    for key in keys:
        print(f"| {key} | " + " | ".join(r.cell(key) for r in results) + " |")
    tables = [r.total("table") for r in results]
    print("| **all tables** | " + " | ".join(f"{rows:.2f} / {size / 1024:.1f}" for rows, size in tables) + " |")
    print("| **all events** | " + " | ".join(f"{r.total('event')[0]:.2f}" for r in results) + " |")
    print("| server CPU (s, for information) | " + " | ".join(f"{r.server_cpu_s:.3f}" for r in results) + " |")
    print("| all task runs passed | " + " | ".join(str(r.ok) for r in results) + " |")
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "recording": args.recording,
                                         "results": [asdict(r) for r in results]}, indent=1) + "\n")
        print(f"\nwritten: {args.json}")


if __name__ == "__main__":
    main()
