"""Finding a Prefect block by name without paying for Prefect, or a server, when there is none to ask.

Shared by the resolution of env, agent and model ids: each looks for a block of its type first,
and only when a Prefect API is configured, so a plain CLI run never starts a temporary server.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TypeVar

import httpx
from pydantic import ValidationError

from prefect_agentenv.exceptions import ConfigurationError, PrefectApiUnavailableError

if TYPE_CHECKING:
    from prefect.blocks.core import Block

_BLOCK_NAME = re.compile(r"^[a-z0-9-]+$")
_NOT_FOUND = "Unable to find block document named"

_B = TypeVar("_B", bound="Block")


def is_block_name(name: str) -> bool:
    """Prefect block names are lowercase letters, digits and dashes."""
    return bool(_BLOCK_NAME.match(name))


def prefect_api_configured() -> bool:
    """True when loading a block will not start a temporary Prefect server just for that.

    That is when ``PREFECT_API_URL`` is set, or when this code runs inside a flow or task run
    (whose API, ephemeral or not, is already up).
    """
    from prefect.context import FlowRunContext, TaskRunContext  # Prefect on use: not for `validate` or `--help`
    from prefect.settings import get_current_settings

    if get_current_settings().api.url:
        return True
    return FlowRunContext.get() is not None or TaskRunContext.get() is not None


async def load_block(block_type: type[_B], name: str) -> _B | None:
    """The ``block_type`` block called ``name``, or None when there is none (or ``name`` cannot name one).

    Raises:
        ConfigurationError: the block exists but is invalid.
        PrefectApiUnavailableError: the Prefect API did not answer (a ConfigurationError that is retried).
    """
    if not is_block_name(name):
        return None
    label = block_type.__name__
    try:
        return await block_type.aload(name)
    except ValidationError as exc:
        raise ConfigurationError(f"the {label} block {name!r} is invalid: {exc}") from exc
    except ValueError as exc:
        if str(exc).startswith(_NOT_FOUND):
            return None
        raise ConfigurationError(f"the {label} block {name!r} could not be loaded: {exc}") from exc
    except (httpx.HTTPError, OSError, RuntimeError) as exc:
        raise PrefectApiUnavailableError(
            f"the Prefect API did not answer while loading the {label} block {name!r}: {exc}") from exc
