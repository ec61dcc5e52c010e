"""From an env id or an agent id to a launch spec.

An env id resolves, in order, to an ``AgentEnvironment`` block of that name (when a Prefect
API is there to ask), then to a reference env shipped in the package; otherwise the error
says how to register one. An ``a2a_agent_id`` resolves the same way, to an ``A2AAgent`` block
or a reference agent, with one stop between the two: a coding-agent harness installed by
``agent install`` (named as AgentEnv names it: its folder name, its ``@local/agentenv-framework/
agents/<name>`` id or an alias). A harness this package knows but that is not installed is an
error that says how to install it. An agent whose launch runs a command and names no launcher
gets the confined one (``runtime/confinement/confined.py``, docs/security.md) unless it opts out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from prefect_agentenv.agents.catalog import REFERENCE_AGENTS, ReferenceAgent
from prefect_agentenv.agents.harnesses.catalog import harness_named
from prefect_agentenv.agents.harnesses.installed import harnesses_dir, installed, launch_spec
from prefect_agentenv.attribute_docs import attribute_docstrings
from prefect_agentenv.envs.catalog import REFERENCE_ENVS, ReferenceEnv
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.resolution.block_lookup import is_block_name, load_block, prefect_api_configured
from prefect_agentenv.runtime.confinement.confined import confine_by_default
from prefect_agentenv.runtime.launch.base import DEFAULT_READY_PATH, LaunchSpec

if TYPE_CHECKING:
    from prefect_agentenv.blocks.agent import A2AAgent
    from prefect_agentenv.blocks.environment import AgentEnvironment

EnvSource = Literal["block", "reference"]
AgentSource = Literal["block", "harness", "reference"]

A2A_CARD_PATH = "/.well-known/agent-card.json"
"""Where a reference agent is ready (the A2A card), as ``blocks.agent`` says for registered agents."""


class ResolvedEnv(BaseModel):
    """An env id with what is needed to deploy it."""

    model_config = ConfigDict(json_schema_extra=attribute_docstrings, frozen=True)

    env_id: str
    """The id the task document used."""
    version: str
    """Version reported in the run context."""
    spec: LaunchSpec
    """How to launch it."""
    source: EnvSource
    """Where it came from: a registered block or a reference env shipped in the package."""
    description: str | None = None
    """What the env offers."""


class ResolvedAgent(BaseModel):
    """An ``a2a_agent_id`` with what is needed to deploy it."""

    model_config = ConfigDict(json_schema_extra=attribute_docstrings, frozen=True)

    a2a_agent_id: str
    """The id the task document used."""
    version: str
    """Version reported in the run context."""
    spec: LaunchSpec
    """How to launch it; ready once its A2A card answers."""
    source: AgentSource
    """Where it came from: a registered block, an installed harness or a reference agent shipped in the package."""
    description: str | None = None
    """What the agent is."""
    uses_model: bool = True
    """False for a reference agent that calls no model (no mock model is started for it)."""
    harness: str | None = None
    """The installed coding-agent harness it is (AgentEnv's folder name), whose wrapper reads the run's
    model endpoint from variables of its own."""


class _Found(NamedTuple):
    version: str
    spec: LaunchSpec
    source: Literal["block", "reference"]
    description: str | None
    uses_model: bool = True


async def _find(block_type: type[AgentEnvironment] | type[A2AAgent], name: str,
                references: Mapping[str, ReferenceEnv] | Mapping[str, ReferenceAgent], *, consult_blocks: bool,
                reference_ready_path: str) -> _Found | None:
    """``name``'s block (when blocks are consulted), else the reference server of that id, else None."""
    if consult_blocks:
        block = await load_block(block_type, name)
        if block is not None:
            return _Found(block.version, block.to_launch_spec(), "block", block.description)
    reference = references.get(name)
    if reference is None:
        return None
    spec = LaunchSpec(command=reference.command(), ready_path=reference_ready_path,
                      install_paths=reference.install_paths())
    return _Found(reference.version, spec, "reference", reference.description, reference.uses_model)


async def resolve_env(env_id: str, *, use_blocks: bool | None = None) -> ResolvedEnv:
    """Resolve ``env_id``: its block first, then the reference env of that id.

    Args:
        env_id: the id a deploy_env step names.
        use_blocks: consult blocks; by default only when :func:`prefect_api_configured`.

    Raises:
        ConfigurationError: nothing has that id (the message says how to register it), or its
            block is invalid or could not be read.
    """
    from prefect_agentenv.blocks.environment import AgentEnvironment  # Prefect on use: not for `validate`

    consult_blocks = prefect_api_configured() if use_blocks is None else use_blocks
    found = await _find(AgentEnvironment, env_id, REFERENCE_ENVS, consult_blocks=consult_blocks,
                        reference_ready_path=DEFAULT_READY_PATH)
    if found is None:
        raise ConfigurationError(not_found_message(env_id, consulted_blocks=consult_blocks))
    return ResolvedEnv(env_id=env_id, version=found.version, spec=found.spec, source=found.source,
                       description=found.description)


def not_found_message(env_id: str, *, consulted_blocks: bool) -> str:
    """Why ``env_id`` did not resolve and exactly how to register it."""
    return _not_found(f"no environment {env_id!r}: no AgentEnvironment block and no reference env has that id",
                      env_id, references=REFERENCE_ENVS, reference_label="reference envs", noun="env",
                      consulted_blocks=consulted_blocks)


async def resolve_agent(a2a_agent_id: str, *, use_blocks: bool | None = None) -> ResolvedAgent:
    """Resolve ``a2a_agent_id``: its ``A2AAgent`` block first, then the reference agent of that id.

    Args:
        a2a_agent_id: the id a deploy_agent step names.
        use_blocks: consult blocks; by default only when :func:`prefect_api_configured`.

    Raises:
        ConfigurationError: nothing has that id (the message says how to register it), or its
            block is invalid or could not be read.
    """
    from prefect_agentenv.blocks.agent import A2AAgent  # Prefect on use: not for `validate`

    consult_blocks = prefect_api_configured() if use_blocks is None else use_blocks
    if consult_blocks and (block := await load_block(A2AAgent, a2a_agent_id)) is not None:
        spec = confine_by_default(block.to_launch_spec(), kind_given=block.kind is not None)
        return ResolvedAgent(a2a_agent_id=a2a_agent_id, version=block.version, spec=spec,
                             source="block", description=block.description)
    if (harness := resolve_harness(a2a_agent_id)) is not None:
        return harness.model_copy(update={"spec": confine_by_default(harness.spec, kind_given=False)})
    found = await _find(A2AAgent, a2a_agent_id, REFERENCE_AGENTS, consult_blocks=False,
                        reference_ready_path=A2A_CARD_PATH)
    if found is None:
        raise ConfigurationError(agent_not_found_message(a2a_agent_id, consulted_blocks=consult_blocks))
    return ResolvedAgent(a2a_agent_id=a2a_agent_id,
                         **{**found._asdict(), "spec": confine_by_default(found.spec, kind_given=False)})


def resolve_harness(a2a_agent_id: str) -> ResolvedAgent | None:
    """The installed harness ``a2a_agent_id`` names, or None when it names no harness at all.

    Raises:
        ConfigurationError: it names a harness that is not installed (the message says how).
    """
    manifest = installed(a2a_agent_id)
    if manifest is None:
        harness = harness_named(a2a_agent_id)
        if harness is None:
            return None
        raise ConfigurationError(
            f"the {harness.title} harness ({a2a_agent_id!r}) is not installed in {harnesses_dir()}: run "
            f"`prefect-agentenv agent install {harness.name}` (or point PREFECT_AGENTENV_HARNESS_DIR at a "
            "folder where it is installed)")
    harness = harness_named(manifest.name)
    assert harness is not None
    version = manifest.cli.rsplit("@", 1)[-1] if manifest.cli else ", ".join(manifest.sdk.values()) or "0.0.0"
    return ResolvedAgent(a2a_agent_id=a2a_agent_id, version=version, spec=launch_spec(harness), source="harness",
                         description=f"{harness.title} behind AgentEnv's A2A wrapper ({manifest.framework})",
                         harness=harness.name)


def agent_not_found_message(a2a_agent_id: str, *, consulted_blocks: bool) -> str:
    """Why ``a2a_agent_id`` did not resolve and exactly how to register it."""
    return _not_found(f"no agent {a2a_agent_id!r}: no A2AAgent block and no reference agent has that id",
                      a2a_agent_id, references=REFERENCE_AGENTS, reference_label="reference agents", noun="agent",
                      consulted_blocks=consulted_blocks)


def _not_found(headline: str, name: str, *, references: Iterable[str], reference_label: str, noun: str,
               consulted_blocks: bool) -> str:
    """The shared shape of "not found": what is known, why blocks may not have been asked, how to register."""
    known = ", ".join(sorted(references)) or "none"
    lines = [f"{headline} ({reference_label}: {known})."]
    if not is_block_name(name):
        lines.append(f"{name!r} cannot name a block: use lowercase letters, digits and dashes.")
    elif not consulted_blocks:
        lines.append("Blocks were not consulted because no Prefect API is configured (set PREFECT_API_URL).")
    lines.append("Register it with one of:")
    register = f"prefect-agentenv {noun} register {name if is_block_name(name) else 'NAME'}"
    lines.append(f'  {register} --command "python -m my_{noun} --host {{host}} --port {{port}}"')
    lines.append(f"  {register} --image IMAGE [--container-port 8000]")
    lines.append(f"  {register} --url https://{noun}.example.com")
    return "\n".join(lines)
