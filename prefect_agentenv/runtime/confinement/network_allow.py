"""How an agent's confined network may be widened (docs/security.md, "Widening it"): the shape a block's
and a ``deploy_agent`` step's ``network`` share, checked without loading the launchers (``validate`` reads
it).
"""

from __future__ import annotations

from typing import Literal, Self, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, model_validator


class NetworkAllow(BaseModel):
    """A confined agent's network widened: these endpoints too, besides its model and its envs' MCP paths."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    allow: list[str] = Field(min_length=1)
    """Endpoints as host:port on this machine's loopback (127.0.0.1:9000), reachable at any path."""

    @model_validator(mode="after")
    def _host_ports(self) -> Self:
        for entry in self.allow:
            host_port(entry)
        return self


Widening: TypeAlias = Literal["public"] | NetworkAllow
"""``public`` (the host's whole network) or ``{allow: [host:port, ...]}``."""


def checked_widening(value: object) -> object:
    """A ``network`` value as a document gives it, checked in one line per problem (a field validator's
    ``mode="before"``: the union's own errors would name both forms for a mistake in one).

    Raises:
        ValueError: neither ``public`` nor ``{allow: [host:port, ...]}``, or an entry that is not ``host:port``.
    """
    if value is None or value == "public" or isinstance(value, NetworkAllow):
        return value
    allow = value.get("allow") if isinstance(value, dict) and set(value) == {"allow"} else None
    if not isinstance(allow, list) or not allow or not all(isinstance(entry, str) for entry in allow):
        raise ValueError(f"network is public or {{allow: [host:port, ...]}}, not {value!r}")
    for entry in allow:
        host_port(entry)
    return value


def host_port(entry: str) -> tuple[str, int]:
    """An ``allow`` entry's host (brackets of an IPv6 address taken off) and port.

    Raises:
        ValueError: not ``host:port`` with a port number from 1 to 65535.
    """
    host, _, port = entry.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"network allow entry {entry!r} is not host:port (127.0.0.1:9000)")
    return host.strip("[]"), int(port)


def widened(own: Widening | None, more: Widening | None) -> Widening | None:
    """A network widened twice (a block's, then a task's): ``public`` if either is, else both allow lists."""
    if own is None or more is None:
        return own if more is None else more
    if own == "public" or more == "public":
        return "public"
    return NetworkAllow(allow=list(dict.fromkeys([*own.allow, *more.allow])))
