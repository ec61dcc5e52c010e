"""The coding-agent harnesses AgentEnv wraps, and what each needs to run here as a local process.

One :class:`Harness` per wrapper folder of the pinned ``agentenv-framework`` package
(``agent_env/agents/agents/<name>/``): where its CLI comes from (npm, by the wrapper's own
lockfile or one shipped here where the wrapper pins none the registry has), the Python it needs,
the variables that give it a world of its own inside an agent's sandbox, and how the run's model
endpoint reaches it. The ``install.sh`` of each wrapper is never run: it downloads Node and uv from
hosts other than the registries; :mod:`.installer` installs the same pieces from npm and PyPI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

FRAMEWORK_PACKAGE = "agentenv-framework"
FRAMEWORK_VERSION = "0.9.1364"
"""The AgentEnv framework release the wrappers come from (the same the peers' venv pins)."""
FRAMEWORK_ID_PREFIX = "@local/agentenv-framework/agents/"
"""How AgentEnv names its bundled agents by id (``@local/agentenv-framework/agents/opencode``)."""
WRAPPERS_IN_WHEEL = "agent_env/agents/agents/"
ALIASES_IN_WHEEL = "agent_env/agents/aliases.toml"

NODE_VERSION = "22.19.0"
"""The registry Node (npm ``node-linux-<cpu>``) a harness gets when the system's is older than it needs."""

HERE = Path(__file__).parent
LOCKS = HERE / "locks"
"""``<name>.txt``: every Python package of a harness's venv, pinned (``uv pip compile`` output)."""
NPM_LOCKS = HERE / "npm"
"""``<name>/package.json`` and ``package-lock.json`` for harnesses whose wrapper pins no usable CLI."""

BaseUrlForm = Literal["api", "root"]
"""How a harness wants ``LITELLM_BASE_URL``: ``api`` the endpoint's OpenAI-compatible base as
configured (``…/v1``), ``root`` the same without its trailing ``/v1`` (the wrapper adds its own path)."""


@dataclass(frozen=True)
class NpmCli:
    """The CLI a harness runs, from the npm registry."""

    package: str
    """npm package of the CLI."""
    version: str
    """Exact version installed (the lockfile pins the rest)."""
    lockfile: Literal["wrapper", "shipped"] = "wrapper"
    """Whose ``package.json``/``package-lock.json``: the wrapper folder's, or the one shipped in
    ``npm/<name>/`` here (the wrapper pins a version the registry does not have, or pins none)."""
    after_install: tuple[tuple[str, ...], ...] = ()
    """Commands run in the npm folder after ``npm ci --ignore-scripts``: the CLI's own postinstall
    scripts that only link a native build from an installed package (they download nothing)."""
    prune: tuple[str, ...] = ()
    """``node_modules`` entries removed afterwards (the other platforms' native builds)."""


@dataclass(frozen=True)
class Harness:
    """One AgentEnv wrapper and what running it as a local process takes."""

    name: str
    """AgentEnv's folder name, which is also the ``a2a_agent_id`` it is named by."""
    title: str
    """Human name of the harness."""
    cli: NpmCli | None
    """The CLI from npm; None for a harness that is a Python SDK (OpenHands)."""
    bins: dict[str, str]
    """Commands the wrapper runs, by name, as paths relative to the harness folder (put on its PATH)."""
    version_command: tuple[str, ...]
    """A command that prints the installed CLI's version (run at install, recorded in the manifest)."""
    workspace_variable: str
    """The variable that moves the wrapper's workspace (a container path by default) into the sandbox."""
    model_variable: str | None
    """The variable naming the model when agent-config sets none."""
    base_url: BaseUrlForm
    sdk_packages: tuple[str, ...] = ()
    """PyPI packages that are the harness itself (their versions are listed by ``agent list``)."""
    min_python: tuple[int, int] = (3, 11)
    min_node: str | None = "20.0.0"
    """The oldest Node the CLI runs on; None when it needs none."""
    constant_env: dict[str, str] = field(default_factory=dict)
    """Fixed variables: internet fetches switched off, banners and telemetry silenced."""
    home_env: dict[str, str] = field(default_factory=dict)
    """Variables naming folders of its own, as paths relative to the sandbox root (made before it starts)."""
    system_tools: tuple[tuple[str, str], ...] = ()
    """(command, why) pairs the harness takes from the system's PATH; their absence is reported."""
    model_api: str = ""
    """What it calls on the model endpoint (for the docs and errors)."""
    wire: Literal["chat", "responses", "messages"] | None = "chat"
    """The model wire it speaks through the run's model gateway; None: one the gateway does not relay."""

    @property
    def framework_id(self) -> str:
        """AgentEnv's id for this agent."""
        return FRAMEWORK_ID_PREFIX + self.name


_XDG = {"XDG_CONFIG_HOME": "home/.config", "XDG_CACHE_HOME": "home/.cache",
        "XDG_DATA_HOME": "home/.local/share", "XDG_STATE_HOME": "home/.local/state"}
"""Every harness gets its own XDG folders under its sandbox's HOME."""

HARNESSES: dict[str, Harness] = {h.name: h for h in (
    Harness(
        name="opencode", title="OpenCode",
        cli=NpmCli("opencode-ai", "1.17.18", after_install=(("node", "node_modules/opencode-ai/postinstall.mjs"),),
                   prune=("opencode-*",)),
        bins={"opencode": "npm/node_modules/opencode-ai/bin/opencode.exe"},
        version_command=("opencode", "--version"),
        workspace_variable="OPENCODE_WORKSPACE_DIR", model_variable="OPENCODE_MODEL", base_url="api",
        constant_env={"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
                      "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1"},
        home_env=dict(_XDG),
        system_tools=(("rg", "OpenCode's grep and glob tools run ripgrep (Debian: apt-get install ripgrep); "
                             "without it they try to download it and fail"),),
        model_api="streamed chat completions at <base>/v1/chat/completions"),
    Harness(
        name="codex", title="Codex CLI",
        cli=NpmCli("@openai/codex", "0.147.0"),
        bins={"codex": "npm/node_modules/.bin/codex", "mcp-remote": "npm/node_modules/.bin/mcp-remote"},
        version_command=("codex", "--version"),
        workspace_variable="CODEX_WORKSPACE_DIR", model_variable=None, base_url="root",
        home_env={**_XDG, "CODEX_HOME": "home/.codex"},
        model_api="the Responses API at <root>/openai/v1/responses (a LiteLLM gateway's path)", wire="responses"),
    Harness(
        name="pi", title="pi",
        cli=NpmCli("@earendil-works/pi-coding-agent", "1.3.0", lockfile="shipped"),
        bins={"pi": "npm/node_modules/.bin/pi"},
        version_command=("pi", "--version"),
        workspace_variable="PI_A2A_WORKSPACE", model_variable="PI_A2A_MODEL", base_url="api",
        min_node="22.19.0", home_env=dict(_XDG),
        model_api="streamed chat completions at <base>/chat/completions"),
    Harness(
        name="openhands", title="OpenHands",
        cli=None, bins={}, version_command=(),
        workspace_variable="OPENHANDS_A2A_WORKSPACE", model_variable="OPENHANDS_A2A_MODEL", base_url="api",
        sdk_packages=("openhands-sdk", "openhands-tools"), min_python=(3, 12), min_node=None,
        constant_env={"OPENHANDS_SUPPRESS_BANNER": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        home_env={**_XDG, "TMUX_TMPDIR": "home/.tmux"},
        system_tools=(("tmux", "OpenHands' terminal tool runs commands in tmux (Debian: apt-get install tmux)"),),
        model_api="chat completions through LiteLLM (litellm_proxy/<model>) at <base>/chat/completions"),
    Harness(
        name="claude-code", title="Claude Code",
        cli=NpmCli("@anthropic-ai/claude-code", "2.1.280", lockfile="shipped",
                   after_install=(("node", "node_modules/@anthropic-ai/claude-code/install.cjs"),)),
        bins={"claude": "npm/node_modules/@anthropic-ai/claude-code/bin/claude.exe"},
        version_command=("claude", "--version"),
        workspace_variable="AGENT_WORKSPACE_DIR", model_variable=None, base_url="root",
        constant_env={"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
                      "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1"},
        home_env={**_XDG, "CLAUDE_CONFIG_DIR": "home/.claude"},
        model_api="Anthropic's Messages API at <root>/v1/messages", wire="messages"),
    Harness(
        name="gemini", title="Gemini CLI",
        cli=NpmCli("@google/gemini-cli", "0.38.2"),
        bins={"gemini": "npm/node_modules/.bin/gemini"},
        version_command=("gemini", "--version"),
        workspace_variable="GEMINI_CWD", model_variable=None, base_url="root",
        home_env={**_XDG, "GEMINI_CLI_HOME": "home"},
        model_api="Gemini's API at <root>/gemini (a LiteLLM passthrough); a provider-prefixed model "
                  "(vertex_ai/...) goes to <root>/v1/chat/completions", wire=None),
)}
"""Every harness that ``agent install`` knows, by AgentEnv's folder name."""


def harness_named(name: str, aliases: dict[str, str] | None = None) -> Harness | None:
    """The harness an ``a2a_agent_id`` names: its folder name, AgentEnv's id for it, or an alias
    from the framework's ``aliases.toml`` (``aliases`` maps alias → folder name)."""
    if name.startswith(FRAMEWORK_ID_PREFIX):
        name = name[len(FRAMEWORK_ID_PREFIX):]
    if name in HARNESSES:
        return HARNESSES[name]
    folder = (aliases or {}).get(name)
    return HARNESSES.get(folder) if folder else None
