"""The light commands stay light: `--help`, `validate` and `schema` never import Prefect."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from prefect_agentenv.cli import _SUBGROUPS, app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

_PROBE = """
import json, sys
from typer.testing import CliRunner
from prefect_agentenv.cli import app
runner = CliRunner()
codes = [runner.invoke(app, args).exit_code for args in
         (["--help"], ["validate", sys.argv[1], sys.argv[2]], ["schema"])]
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"prefect", "boto3", "mcp"})
print(json.dumps({"codes": codes, "heavy": heavy}))
"""


def test_help_validate_and_schema_do_not_import_prefect() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(EXAMPLES / "reply-to-dana.json"),
                          str(EXAMPLES / "benchmark.yaml")], capture_output=True, text=True, timeout=120, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"codes": [0, 0, 0], "heavy": []}


# What the steps need only when they run: the HTTP and A2A clients, the protocol clients, the
# launchers and the model/block resolution. Step modules are imported by `validate` (their field
# models are the document schema), so each imports these inside the functions that use them.
_RUNTIME_ONLY = ("httpx", "httpx2", "a2a", "rich", "anyio",
                 "prefect_agentenv.protocols.a2a", "prefect_agentenv.protocols.agentenv_ext",
                 "prefect_agentenv.protocols.env", "prefect_agentenv.protocols.probes",
                 "prefect_agentenv.protocols.openai", "prefect_agentenv.runtime.launch.base",
                 "prefect_agentenv.runtime.launch.registry", "prefect_agentenv.runtime.launch.process",
                 "prefect_agentenv.runtime.launch.command", "prefect_agentenv.resolution.models",
                 "prefect_agentenv.resolution.servers", "prefect_agentenv.resolution.block_lookup",
                 "prefect_agentenv.runtime.resources.pool",
                 "prefect_agentenv.runtime.launch.docker", "prefect_agentenv.grading.judging",
                 "prefect_agentenv.run_services.agent_configuration", "prefect_agentenv.run_services.pooling",
                 "prefect_agentenv.run_services.concurrency_slots")

_VALIDATE_PROBE = """
import json, sys
from typer.testing import CliRunner
from prefect_agentenv.cli import app
code = CliRunner().invoke(app, ["validate", *sys.argv[2:]]).exit_code
print(json.dumps({"code": code, "loaded": sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)}))
"""


def test_validate_loads_no_step_runtime() -> None:
    # Validating a task document registers every step type: all step modules get imported.
    docs = [str(EXAMPLES / name) for name in ("reply-to-dana.json", "benchmark.yaml", "tasks/chart-handoff.json")]
    out = subprocess.run([sys.executable, "-c", _VALIDATE_PROBE, json.dumps(_RUNTIME_ONLY), *docs],
                         capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"code": 0, "loaded": []}


def test_the_runtime_only_modules_exist() -> None:
    # A renamed module would make the guard above pass vacuously.
    for name in _RUNTIME_ONLY:
        assert importlib.util.find_spec(name) is not None, name


def test_the_help_listing_says_what_each_command_group_says_of_itself() -> None:
    for name, (module, attr, help_line) in _SUBGROUPS.items():
        assert getattr(importlib.import_module(module), attr).info.help == help_line, name


def test_every_command_is_defined_in_a_module_of_its_own() -> None:
    # cli.py holds the app and the registration; each command is a module under commands/.
    modules = [info.callback.__module__ for info in app.registered_commands if info.callback is not None]
    assert len(modules) == len(app.registered_commands)
    assert all(m.startswith("prefect_agentenv.commands.") for m in modules), modules
    assert len(set(modules)) == len(modules), modules


def test_a_command_group_loads_when_it_is_run() -> None:
    result = CliRunner().invoke(app, ["env", "--help"])
    assert result.exit_code == 0
    assert "register" in result.output and "install-completion" not in result.output


def test_loading_an_env_or_agent_block_class_leaves_s3_support_unimported() -> None:
    # A run resolves its env and agent blocks on the critical path of its first steps; the
    # ArtifactStore block's S3 support (prefect-aws, boto3, docker) is for the store alone.
    code = ("import json, sys; from prefect_agentenv.blocks import A2AAgent, AgentEnvironment, ModelEndpoint; "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'prefect_aws', 'boto3', 'docker'})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
