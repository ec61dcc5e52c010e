"""The harness catalogue: AgentEnv's names, pinned packages, the endpoint variables, and resolution."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from prefect_agentenv.agents.harnesses.catalog import HARNESSES, LOCKS, NPM_LOCKS, harness_named
from prefect_agentenv.agents.harnesses.endpoint import NO_KEY, litellm_base_url, model_env
from prefect_agentenv.agents.harnesses.installed import MANIFEST, HarnessManifest, fingerprint
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.resolution.servers import resolve_agent
from prefect_agentenv.settings import get_settings

ROOT = Path(__file__).resolve().parents[3]
SITE = sorted((ROOT / ".venv-peers" / "lib").glob("python3*/site-packages/agent_env/agents"))
needs_framework = pytest.mark.skipif(not SITE, reason="the AgentEnv framework is installed by `make peers`")


@pytest.fixture
def harness_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "harnesses"
    monkeypatch.setenv("PREFECT_AGENTENV_HARNESS_DIR", str(folder))
    get_settings.cache_clear()
    yield folder
    get_settings.cache_clear()


def fake_install(folder: Path, name: str) -> None:
    """A manifest as the installer writes it last (the launch is not started here)."""
    (folder / name).mkdir(parents=True)
    manifest = HarnessManifest(name=name, title=HARNESSES[name].title, framework="agentenv-framework==0.9.1364",
                               cli="opencode-ai@1.17.18", python="3.11.7", fingerprint=fingerprint(HARNESSES[name]))
    (folder / name / MANIFEST).write_text(manifest.model_dump_json())


@needs_framework
def test_the_catalogue_has_a_harness_for_every_wrapper_folder_of_the_framework_but_its_proxy() -> None:
    folders = {p.name for p in (SITE[0] / "agents").iterdir() if (p / "a2a_server.py").exists()}
    assert set(HARNESSES) == folders - {"proxy"}


@needs_framework
@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_every_python_package_a_wrapper_requires_is_pinned_in_its_lock(name: str) -> None:
    lock = {Requirement(line.split(";")[0]).name: line for line in (LOCKS / f"{name}.txt").read_text().splitlines()
            if line and not line.startswith("#")}
    assert all("==" in line for line in lock.values())
    wanted = [Requirement(line) for line in (SITE[0] / "agents" / name / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    for requirement in wanted:
        assert requirement.name in lock, f"{requirement} is not pinned in locks/{name}.txt"
        pinned = lock[requirement.name].split("==")[1].split(";")[0].strip()
        assert requirement.specifier.contains(pinned), f"{lock[requirement.name]} does not meet {requirement}"


@needs_framework
@pytest.mark.parametrize("name", sorted(HARNESSES))
def test_the_npm_cli_version_is_the_one_its_lockfile_pins(name: str) -> None:
    cli = HARNESSES[name].cli
    if cli is None:
        return
    lockfile = (NPM_LOCKS / name if cli.lockfile == "shipped" else SITE[0] / "agents" / name) / "package-lock.json"
    packages = json.loads(lockfile.read_text())["packages"]
    assert packages[f"node_modules/{cli.package}"]["version"] == cli.version


def test_agentenv_names_its_agents_by_folder_by_id_and_by_alias() -> None:
    assert harness_named("opencode") is HARNESSES["opencode"]
    assert harness_named("@local/agentenv-framework/agents/codex") is HARNESSES["codex"]
    assert harness_named("cc", aliases={"cc": "claude-code"}) is HARNESSES["claude-code"]
    assert harness_named("llm") is None


def test_each_wrapper_gets_the_endpoint_in_the_form_it_appends_its_own_path_to() -> None:
    assert litellm_base_url("http://127.0.0.1:9/v1", "root") == "http://127.0.0.1:9"
    assert litellm_base_url("http://127.0.0.1:9/v1/", "api") == "http://127.0.0.1:9/v1"
    codex = model_env(HARNESSES["codex"], base_url="https://gw.example/v1", api_key=None, model="gpt-5")
    assert codex == {"LITELLM_BASE_URL": "https://gw.example", "LITELLM_API_KEY": NO_KEY}
    pi = model_env(HARNESSES["pi"], base_url="https://gw.example/v1", api_key="k", model="m")
    assert pi == {"LITELLM_BASE_URL": "https://gw.example/v1", "LITELLM_API_KEY": "k", "PI_A2A_MODEL": "m"}


async def test_a_harness_that_is_not_installed_says_how_to_install_it(harness_dir: Path) -> None:
    with pytest.raises(ConfigurationError, match="prefect-agentenv agent install opencode"):
        await resolve_agent("opencode", use_blocks=False)


async def test_an_installed_harness_resolves_by_any_of_its_names_to_a_tree_following_launch(harness_dir: Path) -> None:
    fake_install(harness_dir, "opencode")

    for name in ("opencode", "@local/agentenv-framework/agents/opencode"):
        resolved = await resolve_agent(name, use_blocks=False)
        assert resolved.source == "harness" and resolved.harness == "opencode" and resolved.version == "1.17.18"
    spec = resolved.spec
    assert spec.follow_tree and spec.ready_path == "/.well-known/agent-card.json"
    assert spec.command and spec.command[0] == str(harness_dir.resolve() / "opencode" / "venv" / "bin" / "python")
    assert spec.sandbox_env["OPENCODE_WORKSPACE_DIR"] == "."
    assert spec.sandbox_env["XDG_CONFIG_HOME"] == "home/.config"
    assert spec.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    assert spec.env["PATH"].startswith(str(harness_dir.resolve() / "opencode" / "bin"))


async def test_an_install_from_older_pins_counts_as_not_installed(harness_dir: Path) -> None:
    fake_install(harness_dir, "pi")
    manifest = harness_dir / "pi" / MANIFEST
    manifest.write_text(manifest.read_text().replace(fingerprint(HARNESSES["pi"]), "0" * 16))

    with pytest.raises(ConfigurationError, match="agent install pi"):
        await resolve_agent("pi", use_blocks=False)
