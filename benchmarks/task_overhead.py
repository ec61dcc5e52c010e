#!/usr/bin/env python
"""What one real task costs on top of its wire work: ``run`` and ``bench`` against bare asyncio.

One task on real local servers — start the env, load its seed, start the agent beside it, one
prompt (the agent sends one email over MCP), check the env's state, stop everything — run three
ways, interleaved, in one invocation, against one real ``prefect server start`` on a free loopback
port:

* ``bare``  -- ``benchmarks/_bare.py``: the same servers driven by a small asyncio program (httpx
               only; blocking A2A send; no engine, no report). The floor.
* ``run``   -- ``prefect-agentenv run TASK --report R`` from a fresh process, CLI start included.
* ``bench`` -- ``prefect-agentenv bench B --epochs N --concurrency C`` (and ``bare`` with N runs
               at concurrency C for its floor).

Every mode is a child process whose CPU (the whole tree it reaped: the servers it started
included) is read with ``wait4``; the Prefect server's CPU is read from ``/proc`` for its process
group, after it went idle again. Then a **per-phase breakdown of one task**: ``_phases.py``
runs the same CLI ``run`` with timers wrapped around the package's phases (imports, flow start,
each step's Prefect task and body, launch, ready, data plane, config, prompt, verify, teardown,
report, Prefect artifacts) and the median run's timeline is printed.

Usage::

    python benchmarks/task_overhead.py [--reps 3] [--bench-runs 8] [--concurrency 4] [--json OUT]
    python benchmarks/task_overhead.py --shell --outcome --modes bare,run,phases   # as a shell sees `run`

``--outcome`` gives the task an ``env_outcome_verifier`` (``_verify_sent.py``, a verify script in a
process of its own) and the bare driver the same script run the same way; ``--shell`` runs every
command with the environment as inherited (``PYTHONDONTWRITEBYTECODE`` kept) and without waiting
for the Prefect server to go idle between commands, as commands typed one after the other do.

Pairs (``--pairs``): ``reference`` (the email env + the scripted agent shipped in the package) and
``sdk`` (an env and an agent written with the AgentEnv framework's SDKs, ``tests/peers/``, run on
the peers' interpreter from ``make peers`` and registered as blocks).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
CLI = str(Path(PY).parent / "prefect-agentenv")

PLAN = {"tool_calls": [{"tool": "send", "arguments": {
    "to": "dana@northwind.example", "subject": "Re: Q3 numbers", "in_reply_to": "m1",
    "body": "Hi Dana,\n\nThe September total double-counted two invoices; it is corrected.\n\nBest regards,\nSam"}}],
    "reply": "I replied to Dana."}


@dataclass
class Pair:
    """One env + agent pair: how the bare driver runs it, and the same task as a document."""

    name: str
    bare: dict[str, Any]
    steps: list[dict[str, Any]]
    seed: tuple[str, str, Path]
    """(artifact id, environment name, file) published to the store before the rounds."""
    register: list[list[str]] = field(default_factory=list)
    """CLI arguments that register the pair's blocks (none for reference servers)."""
    files: list[tuple[str, Path]] = field(default_factory=list)
    """(artifact id, file) published as file artifacts before the rounds (verify scripts)."""


OUTCOME_SCRIPT = HERE / "_verify_sent.py"


def with_outcome(pair: Pair) -> Pair:
    """The pair's task with an ``env_outcome_verifier`` beside its state check (the shell measure of
    issue 30 had one): the step runs ``_verify_sent.py`` in a process of its own, and so does the
    bare driver."""
    if pair.name != "reference":
        raise SystemExit("--outcome has a verify script for the reference pair's email env only")
    step = {"id": "outcome", "type": "env_outcome_verifier", "env_id": "email", "verifier_id": "outcome",
            "script_artifact_id": "verify-sent", "depends_on": ["reply"]}
    return Pair(pair.name, {**pair.bare, "outcome_script": str(OUTCOME_SCRIPT)}, [*pair.steps, step], pair.seed,
                pair.register, [*pair.files, ("verify-sent", OUTCOME_SCRIPT)])


def reference_pair() -> Pair:
    """The reference email env + the scripted agent (it sends one email over MCP)."""
    bare = {
        "env_command": [PY, "-m", "prefect_agentenv.envs.email", "--host", "{host}", "--port", "{port}"],
        "env_ready_path": "/.well-known/agent-env.json", "env_name": "email",
        "agent_command": [PY, "-m", "prefect_agentenv.agents.scripted", "--host", "{host}", "--port", "{port}"],
        "agent_ready_path": "/.well-known/agent-card.json",
        "mcp_config_path": "/ext/mcp-config", "agent_config_path": "/ext/agent-config",
        "seed_file": str(ROOT / "examples/artifacts/inbox.json"),
        "agent_config": {"plan": PLAN}, "prompt": "Reply to Dana.", "check": {"resource": "sent", "count": 1},
    }
    steps = [
        {"id": "email", "type": "deploy_env", "env_id": "email", "depends_on": []},
        {"id": "inbox", "type": "load_artifact", "env_id": "email", "artifact_id": "inbox", "depends_on": ["email"]},
        {"id": "assistant", "type": "deploy_agent", "a2a_agent_id": "scripted", "agent_name": "assistant",
         "env_ids": ["email"], "agent_config": {"plan": PLAN}, "depends_on": ["email"]},
        {"id": "reply", "type": "prompt_agent", "agent_name": "assistant", "prompt_id": "reply",
         "prompt": "Reply to Dana.", "depends_on": ["inbox", "assistant"]},
        {"id": "sent", "type": "env_state_verifier", "env_id": "email", "verifier_id": "sent", "depends_on": ["reply"],
         "assertions": [{"assert": "record_count", "id": "one_email_sent", "resource": "sent", "equals": 1}]},
    ]
    return Pair("reference", bare, steps, ("inbox", "email", ROOT / "examples/artifacts/inbox.json"))


PEERS_PY = ROOT / ".venv-peers" / "bin" / "python"
PEERS = ROOT / "tests" / "peers"


def sdk_pair(tmp: Path) -> Pair:
    """The AgentEnv-SDK notes env + the AgentEnv-SDK tool-calling agent (tests/peers), on their own
    interpreter, registered as blocks the way a user registers them."""
    seed = tmp / "notes.json"
    seed.write_text(json.dumps({"notes": [{"id": "n-1", "text": "call Dana"}]}))
    bare = {
        "env_command": [str(PEERS_PY), str(PEERS / "sdk_env.py")], "env_env": {"MCP_HOST": "{host}", "MCP_PORT": "{port}"},
        "env_ready_path": "/.well-known/agent-env.json", "env_name": "notes-sdk",
        "agent_command": [str(PEERS_PY), str(PEERS / "sdk_agent.py")],
        "agent_env": {"A2A_HOST": "{host}", "A2A_PORT": "{port}"},
        "agent_ready_path": "/.well-known/agent-card.json", "mcp_config_path": "/ext/mcp-config",
        "seed_file": str(seed), "prompt": 'add_note {"text": "buy milk"}', "check": {"resource": "notes", "count": 2},
    }
    steps = [
        {"id": "env", "type": "deploy_env", "env_id": "notes-sdk", "depends_on": []},
        {"id": "seed", "type": "load_artifact", "env_id": "notes-sdk", "artifact_id": "notes-seed", "depends_on": ["env"]},
        {"id": "agent", "type": "deploy_agent", "a2a_agent_id": "sdk-tool-caller", "agent_name": "caller",
         "env_ids": ["notes-sdk"], "depends_on": ["env"]},
        {"id": "ask", "type": "prompt_agent", "agent_name": "caller", "prompt_id": "ask",
         "prompt": 'add_note {"text": "buy milk"}', "depends_on": ["seed", "agent"]},
        {"id": "state", "type": "env_state_verifier", "env_id": "notes-sdk", "verifier_id": "state", "depends_on": ["ask"],
         "assertions": [{"assert": "record_count", "id": "two_notes", "resource": "notes", "equals": 2}]},
    ]
    register = [
        ["env", "register", "notes-sdk", "--command", f"{PEERS_PY} {PEERS / 'sdk_env.py'}", "--env", "MCP_HOST={host}",
         "--env", "MCP_PORT={port}", "--startup-timeout", "60", "--overwrite"],
        ["agent", "register", "sdk-tool-caller", "--command", f"{PEERS_PY} {PEERS / 'sdk_agent.py'}",
         "--env", "A2A_HOST={host}", "--env", "A2A_PORT={port}", "--startup-timeout", "60", "--overwrite"],
    ]
    return Pair("sdk", bare, steps, ("notes-seed", "notes-sdk", seed), register)


# --------------------------------------------------------------------------- processes and CPU


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_TICK = os.sysconf("SC_CLK_TCK")


def group_cpu_s(pgid: int) -> float:
    """CPU seconds of every live process in a process group (plus what they reaped)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            total += sum(int(x) for x in fields[11:15])
    return total / _TICK


@dataclass
class Measure:
    mode: str
    wall_s: float
    client_cpu_s: float
    server_cpu_s: float
    ok: bool
    detail: dict[str, Any] = field(default_factory=dict)
    pair: str = "reference"


def wait_until(proc: subprocess.Popen[bytes], name: str, limit_s: float, ready: Callable[[], bool]) -> None:
    """Poll ``ready`` every 0.2 s until it says yes; exit if the process dies or ``limit_s`` passes."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if ready():
            return
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited with {proc.returncode}")
        time.sleep(0.2)
    raise SystemExit(f"{name} was not ready in {limit_s:.0f} s")


def stop_group(proc: subprocess.Popen[bytes] | None, sig: signal.Signals, grace_s: float) -> None:
    """Stop a process started in its own session by its handle: ``sig`` to its group, then SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, sig)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class Postgres:
    """A throw-away PostgreSQL cluster on a free loopback port, for a Prefect server's database.

    ``initdb`` and ``postgres`` from ``PATH``; PostgreSQL refuses to run as root, so under root
    the cluster runs as the ``postgres`` user (``setpriv``, which execs in place: the handle is the
    postmaster itself). Settings are the defaults.
    """

    def __init__(self, home: Path) -> None:
        self.port = free_port()
        self.data = home / "pgdata"
        self.url = f"postgresql+asyncpg://prefect@127.0.0.1:{self.port}/postgres"
        home.mkdir(parents=True, exist_ok=True)
        self.log = (home / "postgres.log").open("wb")
        self.proc: subprocess.Popen[bytes] | None = None
        self.as_user = (["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
                        if os.geteuid() == 0 else [])

    def start(self) -> None:
        for binary in ("initdb", "postgres"):
            if not shutil.which(binary):
                raise SystemExit(f"--databases postgres needs `{binary}` on PATH")
        self.data.mkdir()
        if self.as_user:
            for d in (self.data.parent.parent, self.data.parent, self.data):
                os.chmod(d, 0o755)
            shutil.chown(self.data, "postgres", "postgres")
        subprocess.run([*self.as_user, "initdb", "-D", str(self.data), "-U", "prefect", "--auth=trust", "-E", "UTF8"],
                       check=True, stdout=self.log, stderr=subprocess.STDOUT)
        self.proc = subprocess.Popen([*self.as_user, "postgres", "-D", str(self.data), "-p", str(self.port),
                                      "-h", "127.0.0.1", "-k", str(self.data)], stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(self.proc, "postgres", 60.0, self._listening)

    def _listening(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def cpu_s(self) -> float:
        return group_cpu_s(self.proc.pid) if self.proc else 0.0

    def stop(self) -> None:
        stop_group(self.proc, signal.SIGINT, 30.0)  # SIGINT: PostgreSQL's "fast" shutdown


class PrefectServer:
    """A real ``prefect server start`` on a free loopback port, in its own process group.

    Its database is SQLite in its home (Prefect's default), or a PostgreSQL cluster of its own.
    """

    def __init__(self, home: Path, database: str = "sqlite") -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/api"
        self.database = database
        self.env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                    "PREFECT_UI_ENABLED": "false", "PREFECT_API_URL": ""}
        home.mkdir(parents=True, exist_ok=True)
        self.postgres = Postgres(home) if database == "postgres" else None
        if self.postgres:
            self.env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = self.postgres.url
        self.log = (home / "server.log").open("wb")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        t0 = time.monotonic()
        if self.postgres:
            self.postgres.start()
        self.proc = subprocess.Popen([str(Path(PY).parent / "prefect"), "server", "start", "--host", "127.0.0.1",
                                      "--port", str(self.port), "--no-ui"], env=self.env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(self.proc, "prefect server", 120.0, self._healthy)
        return time.monotonic() - t0

    def _healthy(self) -> bool:
        import httpx

        try:
            return httpx.get(self.url + "/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def cpu_s(self) -> float:
        """The server's CPU, its database's included."""
        return (group_cpu_s(self.proc.pid) if self.proc else 0.0) + (self.postgres.cpu_s() if self.postgres else 0.0)

    def settle(self, max_s: float = 30.0) -> float:
        """Wait until the server used ≤ 10 % of a core over two 0.25 s windows in a row."""
        t0, quiet, last = time.monotonic(), 0, self.cpu_s()
        while time.monotonic() - t0 < max_s and quiet < 2:
            time.sleep(0.25)
            now = self.cpu_s()
            quiet = quiet + 1 if now - last <= 0.025 else 0
            last = now
        return time.monotonic() - t0

    def stop(self) -> None:
        stop_group(self.proc, signal.SIGTERM, 15.0)
        if self.postgres:
            self.postgres.stop()


LAST_PEAK_RSS_MB = [0.0]
"""Peak resident memory of the last child process itself (not its own children), in MB."""

LAST_SPAN = [0.0, 0.0]
"""When the last child was spawned and when it was reaped (``time.time()``), to place its reports in it."""


class PeakRss:
    """Samples a process's peak RSS (``VmHWM``) from ``/proc`` until it exits."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kb, self._done = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))
            except (OSError, ValueError):
                pass
            self._done.wait(0.2)

    def stop(self) -> float:
        self._done.set()
        self._thread.join()
        return round(self.peak_kb / 1024, 1)


def run_child(argv: list[str], env: dict[str, str], server: PrefectServer, cwd: Path,
              settle: bool = True) -> tuple[float, float, float, int, str]:
    """Run one child to completion: wall, CPU of its reaped tree, server CPU, exit code, stdout."""
    if settle:
        server.settle()
    s0 = server.cpu_s()
    out = tempfile.TemporaryFile()
    if "BENCH_SPANS" in env:  # the instrumented child measures its phases from its spawn
        env = {**env, "BENCH_T0": repr(time.time())}
    t0 = time.monotonic()
    LAST_SPAN[0] = time.time()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    sampler = PeakRss(proc.pid)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    LAST_SPAN[1] = time.time()
    LAST_PEAK_RSS_MB[0] = sampler.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if settle:
        server.settle()
    out.seek(0)
    return wall, usage.ru_utime + usage.ru_stime, server.cpu_s() - s0, proc.returncode, out.read().decode(errors="replace")


# --------------------------------------------------------------------------- the modes


RECORDINGS: dict[str, dict[str, Any]] = {
    "full": {},
    "lean": {"step_task_runs": False},
    "tasks": {"task_runs_as": "tasks"},
}
"""The benchmark document's fields for each way of recording it in Prefect."""


class Bench:
    """The modes for one pair, in its own folder, against the shared Prefect server."""

    def __init__(self, args: argparse.Namespace, tmp: Path, server: PrefectServer, pair: Pair,
                 code: Path | None = None, label: str | None = None, recording: str = "full") -> None:
        self.args, self.server, self.pair = args, server, pair
        self.label = label or pair.name
        """How this bench's measurements are named: the pair, and ``(before)`` for the ``--before`` tree."""
        self.tmp = tmp / "".join(c for c in self.label.replace(" ", "-") if c not in "()[]")
        self.tmp.mkdir(parents=True, exist_ok=True)
        # Bytecode is cached, as it is for an installed package: with PYTHONDONTWRITEBYTECODE set
        # (some shells and containers set it) an editable install's modules are compiled again in
        # every process, on both sides. With --shell the environment is the shell's, as it is.
        inherited = {k: v for k, v in os.environ.items() if args.shell or k != "PYTHONDONTWRITEBYTECODE"}
        self.settle = not args.shell
        """Wait for the Prefect server to go idle around each command (not with --shell: a shell does not)."""
        self.env = {**inherited, **({"PYTHONPATH": str(code.resolve())} if code else {}),
                    "PREFECT_API_URL": server.url, "PREFECT_HOME": str(tmp / "client-prefect"),
                    "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_AGENTENV_HOME": str(tmp / "agentenv")}
        self.pair_file = self.tmp / "pair.json"
        self.pair_file.write_text(json.dumps(pair.bare))
        self.task_file = self.tmp / "task.json"
        self.task_file.write_text(json.dumps({"id": f"{pair.name}-task", "steps": pair.steps}, indent=1))
        self.bench_file = self.tmp / "bench.json"
        self.bench_file.write_text(json.dumps({"name": "task overhead", "slug": f"task-overhead-{pair.name}", "version": 1,
                                               "tasks": [{"id": f"{pair.name}-task", "path": "task.json"}],
                                               "epochs": 1, "concurrency": 1,
                                               **RECORDINGS[recording]}))
        self.bench_pool_file = self.tmp / "bench-pool.json"
        self.bench_pool_file.write_text(json.dumps({**json.loads(self.bench_file.read_text()), "pool": True}))
        self.n = 0

    def prepare(self) -> None:
        """Publish the seed and register the pair's blocks."""
        artifact_id, env_name, path = self.pair.seed
        code = ("import sys; from pathlib import Path; from prefect_agentenv.artifacts import get_artifact_store\n"
                "with get_artifact_store() as s: s.publish_environment(sys.argv[1], sys.argv[2], Path(sys.argv[3]).name, "
                "Path(sys.argv[3]))")
        subprocess.run([PY, "-c", code, artifact_id, env_name, str(path)], env=self.env, check=True)
        for argv in self.pair.register:
            subprocess.run([CLI, *argv], env=self.env, check=True, stdout=subprocess.DEVNULL)
        for artifact_id, file in self.pair.files:
            subprocess.run([CLI, "artifact", "put", artifact_id, str(file)], env=self.env, check=True,
                           stdout=subprocess.DEVNULL)

    def bare(self, runs: int, concurrency: int, *, pool: bool = False) -> Measure:
        wall, cpu, scpu, code, out = run_child([PY, str(HERE / "_bare.py"), str(self.pair_file), "--runs", str(runs),
                                                "--concurrency", str(concurrency), *(["--pool"] if pool else [])],
                                               self.env, self.server, self.tmp, settle=self.settle)
        mode = "bare-pool" if pool else "bare" if runs == 1 else "bare-bench"
        return Measure(mode, wall, cpu, scpu, code == 0, _last_json(out))

    def run(self) -> Measure:
        self.n += 1
        report = self.tmp / "reports" / f"run-{self.n}.json"
        wall, cpu, scpu, code, out = run_child([CLI, "run", str(self.task_file), "--report", str(report)], self.env,
                                               self.server, self.tmp, settle=self.settle)
        ok, detail = _report_ok(report)
        return Measure("run", wall, cpu, scpu, code == 0 and ok, detail or {"output": out[-2000:]})

    def bench(self, runs: int, concurrency: int, *, pool: bool = False, mode: str = "bench") -> Measure:
        self.n += 1
        rdir = self.tmp / "reports" / f"bench-{self.n}"
        wall, cpu, scpu, code, out = run_child([CLI, "bench", str(self.bench_pool_file if pool else self.bench_file),
                                                "--epochs", str(runs),
                                                "--concurrency", str(concurrency), "--report-dir", str(rdir)],
                                               self.env, self.server, self.tmp, settle=self.settle)
        reports = [json.loads(p.read_text()) for p in rdir.glob("*-epoch*.json")] if rdir.exists() else []
        passed = sum(1 for r in reports if r.get("outcome") == "PASSED")
        return Measure(mode, wall, cpu, scpu, code == 0 and passed == runs,
                       {"passed": passed, "runs": runs, "concurrency": concurrency,
                        "flow_process_peak_rss_mb": LAST_PEAK_RSS_MB[0], **head_and_tail(reports),
                        **({} if passed == runs else {"output": out[-2000:]})})

    def cli(self) -> list[Measure]:
        """The light commands, each from a fresh process: ``--help``, ``validate TASK``, ``schema``."""
        out = []
        for name, argv in (("cli --help", ["--help"]), ("cli validate", ["validate", str(self.task_file)]),
                           ("cli schema", ["schema"])):
            wall, cpu, scpu, code, _ = run_child([CLI, *argv], self.env, self.server, self.tmp, settle=False)
            out.append(Measure(name, wall, cpu, scpu, code == 0))
        return out

    def api_calls(self, runs: int) -> dict[str, Any]:
        """Prefect API requests and events of ``run`` and of pooled ``bench`` with 1 and 1 + ``runs``
        task runs (``_api_calls.py``); the difference of the two benches, per task run, is what one
        more task run costs the API."""
        out: dict[str, Any] = {}
        for name, argv in (("run", ["run", str(self.task_file)]),
                           ("bench-pool-1", ["bench", str(self.bench_pool_file), "--epochs", "1", "--concurrency", "1"]),
                           ("bench-pool", ["bench", str(self.bench_pool_file), "--epochs", str(1 + runs),
                                           "--concurrency", "1"])):
            self.n += 1
            calls = self.tmp / f"api-{self.n}.json"
            wall, _, _, code, output = run_child([PY, str(HERE / "_api_calls.py"), *argv], {**self.env,
                                                 "BENCH_API_CALLS": str(calls)}, self.server, self.tmp)
            data = json.loads(calls.read_text()) if calls.exists() else {"counts": {}, "events": {}}
            out[name] = {"wall_s": wall, "ok": code == 0, "counts": data["counts"], "events": data["events"],
                         "calls": data.get("calls", []),
                         **({} if code == 0 else {"output": output[-2000:]})}
        one, many = out["bench-pool-1"], out["bench-pool"]
        out["per_extra_task_run"] = {
            "requests": {k: (many["counts"].get(k, 0) - one["counts"].get(k, 0)) / runs
                         for k in sorted(set(many["counts"]) | set(one["counts"]))},
            "events": {k: (many["events"].get(k, 0) - one["events"].get(k, 0)) / runs
                       for k in sorted(set(many["events"]) | set(one["events"]))}}
        return out

    def phases(self) -> tuple[Measure, dict[str, Any]]:
        self.n += 1
        report, spans = self.tmp / "reports" / f"phases-{self.n}.json", self.tmp / f"spans-{self.n}.json"
        env = {**self.env, "BENCH_SPANS": str(spans)}
        wall, cpu, scpu, code, out = run_child([PY, str(HERE / "_phases.py"), "run", str(self.task_file), "--report",
                                                str(report)], env, self.server, self.tmp, settle=self.settle)
        ok, detail = _report_ok(report)
        data = json.loads(spans.read_text()) if spans.exists() else {"marks": {}, "spans": []}
        data["report_steps"] = json.loads(report.read_text()).get("steps", []) if report.exists() else []
        return Measure("phases", wall, cpu, scpu, code == 0 and ok, detail or {"output": out[-2000:]}), data


def _last_json(out: str) -> dict[str, Any]:
    for line in reversed(out.strip().splitlines()):
        try:
            return dict(json.loads(line))
        except ValueError:
            continue
    return {"output": out[-2000:]}


def head_and_tail(reports: list[dict[str, Any]]) -> dict[str, float]:
    """Where a bench's wall time went around its task runs: from the command's spawn to the first
    task run's start (imports, the flow run, loading the benchmark), and from the last task run's
    end to the process's exit (the summary, the benchmark's artifacts, Prefect's shutdown)."""
    spans = [(datetime.fromisoformat(r["started_at"]).timestamp(), r.get("duration_s") or 0.0)
             for r in reports if r.get("started_at")]
    if not spans:
        return {}
    return {"head_s": round(min(start for start, _ in spans) - LAST_SPAN[0], 3),
            "tail_s": round(LAST_SPAN[1] - max(start + took for start, took in spans), 3)}


def _report_ok(path: Path) -> tuple[bool, dict[str, Any] | None]:
    if not path.exists():
        return False, None
    data = json.loads(path.read_text())
    return data.get("outcome") == "PASSED", {"outcome": data.get("outcome"), "duration_s": data.get("duration_s")}


# --------------------------------------------------------------------------- the breakdown


def breakdown(data: dict[str, Any], wall: float) -> list[tuple[str, float, float, str]]:
    """(what, start, duration, step) rows of one instrumented run, in time order."""
    marks, spans = data.get("marks", {}), data.get("spans", [])
    rows: list[tuple[str, float, float, str]] = []
    entered = marks.get("entered", 0.0)
    rows.append(("interpreter start", 0.0, entered, ""))
    if "cli imported" in marks:
        rows.append(("import the CLI", entered, marks["cli imported"] - entered, ""))
    if "flow imported" in marks:
        rows.append(("import the flow and steps", marks["cli imported"], marks["flow imported"] - marks["cli imported"], ""))
    first = {s["label"]: s for s in reversed(spans)}
    run_flow, body = first.get("run command: flow call"), first.get("flow body")
    if run_flow and "flow imported" in marks:
        rows.append(("validate + argument parsing", marks["flow imported"], run_flow["start"] - marks["flow imported"], ""))
    if run_flow and body:
        rows.append(("flow start (flow run created, engine entered)", run_flow["start"], body["start"] - run_flow["start"], ""))
    tasks = {s["step"]: s for s in spans if s["label"] == "step: prefect task"}
    bodies = {s["step"]: s for s in spans if s["label"] == "step: body"}
    for step, t in sorted(tasks.items(), key=lambda kv: kv[1]["start"]):
        b = bodies.get(step)
        if b:
            rows.append(("Prefect task run overhead", t["start"], (t["end"] - t["start"]) - (b["end"] - b["start"]), step))
            rows.append(("step body", b["start"], b["end"] - b["start"], step))
    inner = [s for s in spans if not s["label"].startswith("step:") and s["label"] not in ("run command: flow call", "flow body")]
    for s in inner:
        rows.append((s["label"], s["start"], s["end"] - s["start"], s.get("step") or ""))
    if body and run_flow:
        rows.append(("flow end (final state, engine exit)", body["end"], run_flow["end"] - body["end"], ""))
    if run_flow:
        rows.append(("after the flow: summary, process exit", run_flow["end"], wall - run_flow["end"], ""))
    rows.sort(key=lambda r: (r[1], -r[2]))
    return rows


def cpu_breakdown(data: dict[str, Any]) -> list[tuple[str, float]]:
    """(phase, CPU seconds of the CLI process) of one instrumented run, for the phases one after the
    other: start-up, the flow's start, its steps, teardown, the report, the flow's end and the exit,
    then the CPU of the child processes it reaped (the env, the agent, verify scripts). Under load
    these move much less than the wall times do."""
    cpu, spans = data.get("cpu_marks", {}), data.get("spans", [])
    if not cpu or not spans:
        return []
    first = {s["label"]: s for s in reversed(spans)}
    last = {s["label"]: s for s in spans}
    call, body, down = first.get("run command: flow call"), first.get("flow body"), first.get("teardown")
    report = first.get("report: build")
    artifacts = last.get("Prefect artifacts")
    rows = [("interpreter start + import the CLI", cpu["cli imported"]),
            ("import the flow, the steps and Prefect", cpu["flow imported"] - cpu["cli imported"])]
    if call and body:
        rows += [("validate, sweep, Prefect defaults", call["cpu_start"] - cpu["flow imported"]),
                 ("flow start (flow run created, engine entered)", body["cpu_start"] - call["cpu_start"])]
    if body and down:
        rows.append(("steps (first step start to teardown)", down["cpu_start"] - body["cpu_start"]))
        rows.append(("teardown", down["cpu_end"] - down["cpu_start"]))
    if down and report and artifacts:
        rows.append(("report + Prefect artifacts", artifacts["cpu_end"] - down["cpu_end"]))
    if call and body:
        rows.append(("flow end (final state, engine exit)", call["cpu_end"] - body["cpu_end"]))
        rows.append(("after the flow: summary, atexit (Prefect's workers drained)", cpu["exit"] - call["cpu_end"]))
    rows.append(("CLI process, in all (until atexit)", cpu["exit"]))
    rows.append(("child processes reaped (env, agent, verify script)", data.get("children_cpu", 0.0)))
    return rows


def print_breakdown(rows: list[tuple[str, float, float, str]], wall: float) -> None:
    print(f"\nPer-phase breakdown of one `run` (instrumented; total {wall:.2f} s from spawn to exit)")
    print(f"| {'phase':<48} | {'step':<10} | {'start s':>7} | {'took s':>7} |")
    print(f"|{'-' * 50}|{'-' * 12}|{'-' * 9}|{'-' * 9}|")
    for what, start, took, step in rows:
        print(f"| {what:<48} | {step:<10} | {start:7.3f} | {took:7.3f} |")


# --------------------------------------------------------------------------- main


def print_api_calls(pair: str, data: dict[str, Any]) -> None:
    print(f"\nPrefect API round trips ({pair}): `run` of one task, and one more task run of a pooled `bench`")
    run, extra = data["run"], data["per_extra_task_run"]
    print(f"| {'request or event':<58} | {'run':>5} | {'per extra task run':>18} |")
    print(f"|{'-' * 60}|{'-' * 7}|{'-' * 20}|")
    for kind, key in (("counts", "requests"), ("events", "events")):
        for name in sorted(set(run[kind]) | set(extra[key])):
            print(f"| {name[:58]:<58} | {run[kind].get(name, 0):>5} | {extra[key].get(name, 0):>18.2f} |")
    print(f"| {'total HTTP requests':<58} | {sum(run['counts'].values()):>5} | {sum(extra['requests'].values()):>18.2f} |")


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def paired(top: list[Measure], bottom: list[Measure]) -> dict[str, float]:
    """Median, min and max of ``top / bottom`` wall time round by round: both were measured in the
    same round, one after the other, so the ratio holds when the machine's speed drifts between
    rounds (which moves the two medians' ratio)."""
    ratios = [t.wall_s / b.wall_s for t, b in zip(top, bottom)]
    return {"median": med(ratios), "min": min(ratios), "max": max(ratios), "n": len(ratios)}


def _cpu_above_bare(modes: dict[str, list[Measure]], extra: int) -> dict[str, float]:
    """CPU of one more pooled task run above the bare driver's, machine-wide (the command's
    reaped tree and the Prefect server), round by round: (bench 1 + N minus bench 1, less the same
    for bare) / N. Median, min and max over the rounds, with the client and server parts' medians."""
    def marginal(mode: str, i: int, part: Callable[[Measure], float]) -> float:
        return (part(modes[mode][i]) - part(modes[mode + "-1"][i])) / extra
    rounds = range(min(len(modes[m]) for m in ("bench-pool", "bench-pool-1", "bare-pool", "bare-pool-1")))
    parts: dict[str, Callable[[Measure], float]] = {
        "client": lambda m: m.client_cpu_s, "server": lambda m: m.server_cpu_s,
        "all": lambda m: m.client_cpu_s + m.server_cpu_s}
    above = {k: [marginal("bench-pool", i, f) - marginal("bare-pool", i, f) for i in rounds] for k, f in parts.items()}
    return {"median": med(above["all"]), "min": min(above["all"]), "max": max(above["all"]),
            "client_median": med(above["client"]), "server_median": med(above["server"]), "n": len(above["all"])}


def summarize(measures: list[Measure]) -> dict[str, Any]:
    """Per pair: medians per mode, and the two ratios the targets are about."""
    by: dict[str, dict[str, list[Measure]]] = {}
    for m in measures:
        by.setdefault(m.pair, {}).setdefault(m.mode, []).append(m)
    out: dict[str, Any] = {}
    for pair, modes in by.items():
        res: dict[str, Any] = {}
        for mode, ms in modes.items():
            res[mode] = {"n": len(ms), "ok": sum(m.ok for m in ms), "wall_s": med([m.wall_s for m in ms]),
                         "wall_min_s": min(m.wall_s for m in ms), "wall_max_s": max(m.wall_s for m in ms),
                         "client_cpu_s": med([m.client_cpu_s for m in ms]),
                         "server_cpu_s": med([m.server_cpu_s for m in ms])}
        if "bare" in res and "run" in res:
            res["run_over_bare"] = res["run"]["wall_s"] / res["bare"]["wall_s"]
            res["run_over_bare_paired"] = paired(modes["run"], modes["bare"])
        if "bare-bench" in res and "bench" in res:
            res["bench_throughput_vs_bare"] = res["bare-bench"]["wall_s"] / res["bench"]["wall_s"]
            res["bench_throughput_vs_bare_paired"] = paired(modes["bare-bench"], modes["bench"])
        if all(k in res for k in ("bare-pool", "bare-pool-1", "bench-pool", "bench-pool-1")):
            # The marginal task run (fixed costs such as process starts and imports cancel out).
            extra = (modes["bench-pool"][0].detail.get("runs") or 2) - 1
            bench_marginal = (res["bench-pool"]["wall_s"] - res["bench-pool-1"]["wall_s"]) / extra
            bare_marginal = (res["bare-pool"]["wall_s"] - res["bare-pool-1"]["wall_s"]) / extra
            res["pooled_marginal_task_s"] = {"bench": bench_marginal, "bare": bare_marginal}
            res["pooled_overhead_per_task_s"] = bench_marginal - bare_marginal
            res["pooled_cpu_above_bare_per_task_s"] = _cpu_above_bare(modes, extra)
        for mode, ms in modes.items():
            rss = [m.detail.get("flow_process_peak_rss_mb") for m in ms if m.detail.get("flow_process_peak_rss_mb")]
            if rss:
                res[mode]["flow_process_peak_rss_mb"] = med(rss)
            for edge in ("head_s", "tail_s"):
                if values := [m.detail[edge] for m in ms if edge in m.detail]:
                    res[mode][edge] = med(values)
        out[pair] = res
    return out


def print_summary(s: dict[str, Any], args: argparse.Namespace) -> None:
    label = {"bare": "bare asyncio, one task", "run": "`prefect-agentenv run`, one task",
             "bare-bench": f"bare asyncio, {args.bench_runs} runs at concurrency {args.concurrency}",
             "bench": f"`prefect-agentenv bench`, {args.bench_runs} runs at concurrency {args.concurrency}",
             "phases": "`run`, instrumented (not in the ratios)", "cli --help": "`prefect-agentenv --help`",
             "cli validate": "`prefect-agentenv validate TASK`", "cli schema": "`prefect-agentenv schema`",
             "bare-pool-1": "bare asyncio, warm processes, 1 run",
             "bare-pool": f"bare asyncio, warm processes, {1 + args.bench_runs} runs one at a time",
             "bench-pool-1": "`bench` with `pool: true`, 1 run",
             "bench-pool": f"`bench` with `pool: true`, {1 + args.bench_runs} runs one at a time"}
    for n in args.scale_sizes.split(","):
        label[f"scale {n}"] = f"`bench`, {n} runs at concurrency {min(int(n), args.scale_concurrency)}"
    print("\n| pair | mode | wall median (min–max) | client CPU | Prefect server CPU | ok |")
    print("|---|---|---|---|---|---|")
    for pair, res in s.items():
        for mode in ("cli --help", "cli validate", "cli schema", "bare", "run", "bare-bench", "bench", "bare-pool-1",
                     "bare-pool", "bench-pool-1", "bench-pool", *(f"scale {n}" for n in args.scale_sizes.split(",")), "phases"):
            if mode in res:
                m = res[mode]
                print(f"| {pair} | {label[mode]} | {m['wall_s']:.2f} s ({m['wall_min_s']:.2f}–{m['wall_max_s']:.2f}) | "
                      f"{m['client_cpu_s']:.2f} s | {m['server_cpu_s']:.2f} s | {m['ok']}/{m['n']} |")
    for pair, res in s.items():
        if "run_over_bare" in res:
            r = res["run_over_bare_paired"]
            print(f"{pair}: one task via `run` / bare: {res['run_over_bare']:.2f}× (of the medians); round by round "
                  f"{r['median']:.2f}× ({r['min']:.2f}–{r['max']:.2f})   (target ≤ 2.0×)")
        if "bench_throughput_vs_bare" in res:
            r = res["bench_throughput_vs_bare_paired"]
            print(f"{pair}: bench throughput / bare throughput: {res['bench_throughput_vs_bare']:.2f} (of the medians); "
                  f"round by round {r['median']:.2f} ({r['min']:.2f}–{r['max']:.2f})   (target ≥ 0.8)")
        if "pooled_overhead_per_task_s" in res:
            marg = res["pooled_marginal_task_s"]
            print(f"{pair}: pooled, one more task run costs {marg['bench']:.3f} s in `bench` and {marg['bare']:.3f} s "
                  f"bare: overhead {res['pooled_overhead_per_task_s']:.3f} s per task   (target ≤ 0.3 s)")
            c = res["pooled_cpu_above_bare_per_task_s"]
            print(f"{pair}: pooled, one more task run's CPU above bare (command tree + Prefect server), round by "
                  f"round: {c['median']:.3f} s ({c['min']:.3f}–{c['max']:.3f}; client {c['client_median']:.3f} s, "
                  f"server {c['server_median']:.3f} s)")
        for mode, m in res.items():
            if isinstance(m, dict) and "flow_process_peak_rss_mb" in m:
                print(f"{pair}: {mode}: flow process peak RSS {m['flow_process_peak_rss_mb']:.0f} MB, "
                      f"wall {m['wall_s']:.1f} s")
            if isinstance(m, dict) and "head_s" in m:
                print(f"{pair}: {mode}: the first task run began {m['head_s']:.2f} s after the command started; "
                      f"the process left {m['tail_s']:.2f} s after the last one ended (medians)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="measured rounds (default 3)")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first (default 1)")
    parser.add_argument("--bench-runs", type=int, default=8, help="task runs per bench (default 8)")
    parser.add_argument("--concurrency", type=int, default=4, help="bench concurrency (default 4)")
    parser.add_argument("--modes", default="cli,bare,run,bench,pool,phases",
                        help="comma-separated subset of cli,bare,run,bench,pool,scale,phases,api")
    parser.add_argument("--code", type=Path, help="run the package from this source tree instead (PYTHONPATH), "
                        "e.g. a `git archive` of an older commit, to compare before and after in one invocation")
    parser.add_argument("--before", type=Path, help="also run every mode from this source tree, interleaved with "
                        "the current one in the same rounds (its results are labelled `PAIR (before)`)")
    parser.add_argument("--scale-sizes", default="8,64", help="task runs per bench in the scale mode")
    parser.add_argument("--scale-concurrency", type=int, default=16, help="concurrency of the scale mode")
    parser.add_argument("--pairs", default="reference", help="reference, sdk or reference,sdk (default reference)")
    parser.add_argument("--databases", default="sqlite",
                        help="the Prefect server's database: sqlite, postgres or sqlite,postgres (one server each, "
                        "interleaved in the same rounds; postgres needs initdb and postgres on PATH)")
    parser.add_argument("--recordings", default="full",
                        help="how the benchmarks are recorded in Prefect, comma-separated, side by side: full "
                        "(the defaults), lean (step_task_runs: false), tasks (task_runs_as: tasks)")
    parser.add_argument("--step-task-runs", choices=("true", "false", "both"),
                        help="older spelling: true = --recordings full, false = lean, both = full,lean")
    parser.add_argument("--outcome", action="store_true",
                        help="the task gains an env_outcome_verifier (a verify script in its own process), and the "
                        "bare driver runs the same script the same way")
    parser.add_argument("--shell", action="store_true",
                        help="run the commands as a shell does: the environment as inherited (PYTHONDONTWRITEBYTECODE "
                        "kept when set), no waiting for the Prefect server to go idle between commands")
    parser.add_argument("--server-env", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for the Prefect server(s), repeatable (e.g. "
                        "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED=false); see benchmarks/server_cost.py --config")
    parser.add_argument("--server-configs", default="default",
                        help="server configurations from benchmarks/server_cost.py (e.g. default,recorder-batch): "
                        "one server each per database, interleaved in the same rounds")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--label", default="", help="a note stored with the results (e.g. before/after)")
    args = parser.parse_args()
    modes = set(args.modes.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="task-overhead-"))
    databases = args.databases.split(",")
    from server_cost import parse_configs  # imported here: it imports this module
    configs = parse_configs(args.server_configs, [])
    servers: dict[str, PrefectServer] = {}
    for db in databases:
        for config_name, settings in configs.items():
            name = db if config_name == "default" else f"{db}+{config_name}"
            servers[name] = PrefectServer(tmp / f"server-prefect-{name}", db)
            servers[name].env.update(item.split("=", 1) for item in args.server_env)
            servers[name].env.update(settings)
    load_before = os.getloadavg()
    try:
        for db, server in servers.items():
            print(f"starting prefect server ({db}) on {server.url} ...", flush=True)
            print(f"  healthy after {server.start():.1f} s", flush=True)
        pairs = [reference_pair() if name == "reference" else sdk_pair(tmp) for name in args.pairs.split(",")]
        if args.outcome:
            pairs = [with_outcome(p) for p in pairs]
        if any(p.name == "sdk" for p in pairs) and not PEERS_PY.exists():
            raise SystemExit("the sdk pair needs the peers' venv: run `make peers`")
        benches: list[Bench] = []
        recordings = (args.recordings.split(",") if args.step_task_runs is None else
                      {"true": ["full"], "false": ["lean"], "both": ["full", "lean"]}[args.step_task_runs])
        if unknown := set(recordings) - set(RECORDINGS):
            raise SystemExit(f"unknown recording(s) {sorted(unknown)}: choose from {sorted(RECORDINGS)}")
        for db, server in servers.items():  # with several databases, each pair once per server
            for recording in recordings:  # and once per way of recording a benchmark
                tag = (f" [{db}]" if len(servers) > 1 else "") + ("" if recording == "full" else f" [{recording}]")
                for p in pairs:  # with --before, each pair twice: the two trees' rounds interleave
                    benches.append(Bench(args, tmp, server, p, code=args.code, label=f"{p.name}{tag}",
                                         recording=recording))
                    if args.before:
                        benches.append(Bench(args, tmp, server, p, code=args.before, label=f"{p.name} (before){tag}",
                                             recording=recording))
        for b in benches:
            b.prepare()
        measures: list[Measure] = []
        phase_runs: dict[str, list[tuple[Measure, dict[str, Any]]]] = {}
        for rnd in range(args.warmup + args.reps):
            counted = rnd >= args.warmup
            # Every other round runs in reverse order, so no tree, pair or recording always goes
            # first: in round 9 the same bare driver took 2 s longer (medians) in the first slot.
            for bench in benches if rnd % 2 == 0 else benches[::-1]:
                round_ms: list[Measure] = []
                if "cli" in modes and bench.pair is pairs[0]:
                    round_ms += bench.cli()
                if "bare" in modes:
                    round_ms.append(bench.bare(1, 1))
                if "run" in modes:
                    round_ms.append(bench.run())
                if "bench" in modes:
                    round_ms.append(bench.bare(args.bench_runs, args.concurrency))
                    round_ms.append(bench.bench(args.bench_runs, args.concurrency))
                if "pool" in modes:  # warm processes, one task run at a time: 1 run, then 1 + N runs
                    for runs, suffix in ((1, "-1"), (1 + args.bench_runs, "")):
                        bare = bench.bare(runs, 1, pool=True)
                        bare.mode += suffix
                        round_ms += [bare, bench.bench(runs, 1, pool=True, mode=f"bench-pool{suffix}")]
                if "scale" in modes and bench.pair is pairs[0] and bench is benches[0]:
                    for n in (int(x) for x in args.scale_sizes.split(",")):
                        round_ms.append(bench.bench(n, min(n, args.scale_concurrency), mode=f"scale {n}"))
                if "phases" in modes:
                    m, data = bench.phases()
                    round_ms.append(m)
                    if counted and bench.pair is pairs[0]:
                        phase_runs.setdefault(bench.label, []).append((m, data))
                for m in round_ms:
                    m.pair = bench.label
                    print(f"  round {rnd}{'' if counted else ' (warm-up)'}: {m.pair:<9} {m.mode:<12} {m.wall_s:6.2f} s  "
                          f"cpu {m.client_cpu_s:5.2f} s  server {m.server_cpu_s:5.2f} s  "
                          f"{'ok' if m.ok else 'NOT OK ' + json.dumps(m.detail)[:300]}", flush=True)
                if counted:
                    measures += round_ms
        api: dict[str, Any] = {}
        if "api" in modes:  # once, after the timed rounds: the counts do not depend on load
            for bench in benches:
                api[bench.label] = bench.api_calls(args.bench_runs)
        summary = summarize(measures)
        print_summary(summary, args)
        for pair, data in api.items():
            print_api_calls(pair, data)
        breakdowns: dict[str, list[Any]] = {}
        for label, runs in phase_runs.items():
            runs.sort(key=lambda p: p[0].wall_s)
            m, data = runs[len(runs) // 2]
            breakdowns[label] = breakdown(data, m.wall_s)
            print(f"\n{label}:", end="")
            print_breakdown(breakdowns[label], m.wall_s)
            cpu_rows = cpu_breakdown(data)
            if cpu_rows:
                print(f"\n{label}: CPU of the same run (s)")
                for what, secs in cpu_rows:
                    print(f"| {what:<62} | {secs:6.3f} |")
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({
                "label": args.label, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_before": load_before},
                "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                "summary": summary, "measures": [m.__dict__ for m in measures], "api_calls": api,
                "breakdown": {label: [{"phase": r[0], "start_s": round(r[1], 4), "took_s": round(r[2], 4),
                                       "step": r[3]} for r in rows] for label, rows in breakdowns.items()},
                "phase_runs": {label: [d for _, d in runs] for label, runs in phase_runs.items()},
                "cpu_breakdown": {label: [{"phase": what, "cpu_s": round(secs, 4)} for what, secs in
                                          cpu_breakdown(runs[len(runs) // 2][1])]
                                  for label, runs in phase_runs.items()},
            }, indent=1) + "\n")
            print(f"\nwritten: {args.json}")
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
