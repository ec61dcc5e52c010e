"""What keeping a Harbor workdir for rescore costs a trial, and what putting it back costs a rescore.

On the local docker daemon (`make docker-up`) and its test image: a container whose workdir holds W MB
of files (many small ones and a few large, half compressible), kept as the verifier keeps it
(``docker cp CONTAINER:/app -`` to a file), gzipped as the submission stores it, masked for one secret
value (member by member), and put back into a fresh container (``docker cp -a -``). Medians of N.

    .venv/bin/python benchmarks/harbor_rescore.py [--sizes 1,20,100] [--reps 3]

Writes benchmarks/results/harbor_rescore.json.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from prefect_agentenv.redaction import Redactor
from prefect_agentenv.runtime.harbor.environment import exec_in, remove_environment, start_environment
from prefect_agentenv.runtime.harbor.kept import archive_in, archive_out, masked_archive

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "agentenv-test/python:bookworm-1"
RESULTS = ROOT / "benchmarks" / "results" / "harbor_rescore.json"


def fill(megabytes: int) -> str:
    """A shell command writing ~``megabytes`` MB under /app: 1000 small text files, the rest in 1 MB files,
    half of them random (not compressible)."""
    big = max(0, megabytes - 1)
    return ("mkdir -p /app/src && for i in $(seq 1000); do printf 'line %s\\n%.0s' $(seq 40) > /app/src/f$i.txt; done; "
            f"for i in $(seq {big}); do if [ $((i % 2)) = 0 ]; then head -c 1048576 /dev/urandom > /app/b$i.bin; "
            "else yes agentenv | head -c 1048576 > /app/b$i.txt; fi; done")


async def measure(megabytes: int, scratch: Path) -> dict[str, Any]:
    source = await start_environment(IMAGE, workdir="/app", env={}, network="none", run_id=f"bench-{uuid.uuid4().hex[:6]}")
    fresh = await start_environment(IMAGE, workdir="/app", env={}, network="none", run_id=f"bench-{uuid.uuid4().hex[:6]}")
    try:
        await exec_in(source, fill(megabytes), user="root", timeout=600)
        t0 = time.monotonic()
        assert await archive_out(source, "/app", scratch / "app.tar")
        keep = time.monotonic() - t0
        raw = (scratch / "app.tar").read_bytes()
        t0 = time.monotonic()
        masked = masked_archive(raw, Redactor({"a-secret-value-123"}))
        mask = time.monotonic() - t0
        t0 = time.monotonic()
        stored = gzip.compress(masked, compresslevel=6)
        gz = time.monotonic() - t0
        t0 = time.monotonic()
        await archive_in(fresh, "/app", gzip.decompress(stored))
        restore = time.monotonic() - t0
        return {"tar_mb": round(len(raw) / 1e6, 1), "stored_mb": round(len(stored) / 1e6, 1), "keep_s": keep,
                "mask_s": mask, "gzip_s": gz, "restore_s": restore}
    finally:
        await remove_environment(source)
        await remove_environment(fresh)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,20,100")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="agentenv-bench-") as folder:
        for size in (int(s) for s in args.sizes.split(",")):
            rows = [await measure(size, Path(folder)) for _ in range(args.reps)]
            out[f"{size}MB"] = {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
