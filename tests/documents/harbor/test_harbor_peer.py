"""The Harbor task parser against the genuine ``harbor`` package's TaskConfig (its own venv, `make harbor-peer`):
every example task reads the same way in both, and what Harbor refuses is refused here too."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from prefect_agentenv.documents.harbor.config import TaskConfig
from prefect_agentenv.documents.harbor.folder import HarborTaskError, load_task_folder

ROOT = Path(__file__).resolve().parents[3]
HARBOR_PYTHON = ROOT / ".venv-harbor" / "bin" / "python"
EXAMPLES = ROOT / "examples" / "harbor"
FOLDERS = [*sorted((EXAMPLES / "dataset").iterdir()), EXAMPLES / "mcp-tool", EXAMPLES / "sidecar-tool"]
# Harbor's own reading of a task.toml, as JSON (the fields both models have).
READ = """
import json, sys
from pathlib import Path
from harbor.models.task.config import TaskConfig
out = {}
for folder in sys.argv[1:]:
    try:
        c = TaskConfig.model_validate_toml((Path(folder) / "task.toml").read_text())
    except Exception as exc:
        out[folder] = {"error": type(exc).__name__}
        continue
    out[folder] = {"schema_version": c.schema_version, "name": c.task.name if c.task else None,
        "agent_timeout": c.agent.timeout_sec, "verifier_timeout": c.verifier.timeout_sec,
        "verifier_env": c.verifier.env, "environment_mode": str(getattr(c.verifier.environment_mode, "value",
        c.verifier.environment_mode)) if c.verifier.environment_mode is not None else "shared", "cpus": c.environment.cpus, "memory_mb": c.environment.memory_mb,
        "network_mode": str(getattr(c.environment.network_mode, "value", c.environment.network_mode)),
        "workdir": c.environment.workdir, "steps": [s.name for s in c.steps or []],
        "min_reward": [s.min_reward for s in c.steps or []],
        "strategy": str(getattr(c.multi_step_reward_strategy, "value", c.multi_step_reward_strategy))
            if c.multi_step_reward_strategy is not None else None,
        "artifacts": [a if isinstance(a, str) else a.source for a in c.artifacts],
        "mcp_servers": [[m.name, m.transport, m.url, m.command, m.args] for m in c.environment.mcp_servers]}
print(json.dumps(out))
"""


def harbor_reads(folders: list[Path]) -> dict[str, Any]:
    if not (ROOT / ".venv-harbor" / ".installed-stamp").exists():
        pytest.skip("the genuine harbor package is not installed (`make harbor-peer` installs it into .venv-harbor)")
    done = subprocess.run([str(HARBOR_PYTHON), "-c", READ, *map(str, folders)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def ours(config: TaskConfig) -> dict[str, Any]:
    strategy = config.multi_step_reward_strategy if config.steps else None
    return {"schema_version": config.schema_version, "name": config.task.name,
            "agent_timeout": config.agent.timeout_sec, "verifier_timeout": config.verifier.timeout_sec,
            "verifier_env": config.verifier.env, "environment_mode": config.verifier.environment_mode,
            "cpus": config.environment.cpus, "memory_mb": config.environment.memory_mb,
            "network_mode": config.environment.network_mode, "workdir": config.environment.workdir,
            "steps": [s.name for s in config.steps], "min_reward": [s.min_reward for s in config.steps],
            "strategy": strategy, "artifacts": [a if isinstance(a, str) else a.source for a in config.artifacts],
            "mcp_servers": [[m.name, m.transport, m.url, m.command, m.args] for m in config.environment.mcp_servers]}


def test_every_example_task_reads_the_same_in_harbor_and_here() -> None:
    theirs = harbor_reads(FOLDERS)

    for folder in FOLDERS:
        mine = ours(load_task_folder(folder).config)
        if mine["steps"] and theirs[str(folder)]["strategy"] in (None, "None"):
            mine["strategy"] = theirs[str(folder)]["strategy"]
        assert theirs[str(folder)] == mine, folder.name


def test_a_task_toml_harbor_refuses_is_refused_here() -> None:
    theirs = harbor_reads([EXAMPLES / "bad-task"])

    assert "error" in theirs[str(EXAMPLES / "bad-task")]
    with pytest.raises(HarborTaskError):
        load_task_folder(EXAMPLES / "bad-task")
