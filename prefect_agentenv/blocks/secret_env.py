"""The ``secret_env`` field shared by the env and agent blocks: a Prefect ``SecretDict``.

Prefect masks every value of a ``SecretDict`` field (its schema lists ``secret_env.*``) in the
API, the UI and ``prefect block inspect``. A ``dict[str, SecretStr]`` is only masked in Python:
the API would return its values in clear, so blocks never use that shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from prefect.types import SecretDict
from pydantic import BeforeValidator, Field, SecretStr


def _plain_values(value: Any) -> Any:
    """Accept ``SecretStr`` values (and other scalars) too, stored as plain strings inside the SecretDict,
    so a saved block holds the real value and not pydantic's mask."""
    if isinstance(value, SecretDict):
        value = value.get_secret_value()
    if isinstance(value, dict):
        return {str(k): v.get_secret_value() if isinstance(v, SecretStr) else str(v) for k, v in value.items()}
    return value


SecretEnv = Annotated[SecretDict, BeforeValidator(_plain_values), Field(default_factory=lambda: SecretDict({}))]
"""A block field of secret environment variables: NAME → value, every value masked by Prefect."""


def secret_dict(values: Mapping[str, SecretStr | str]) -> SecretDict:
    """A ``SecretEnv`` value from NAME → value pairs (as the command line parses them)."""
    return SecretDict(_plain_values(dict(values)))


def reveal_env(secret_env: SecretDict) -> dict[str, SecretStr]:
    """The variables as the launcher takes them (still masked when printed)."""
    return {name: SecretStr(str(value)) for name, value in secret_env.get_secret_value().items()}
