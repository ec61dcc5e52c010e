"""An A2A agent's card as read: its endpoints (1.0 ``supportedInterfaces`` or 0.3 ``url``), its
extensions, and where to look for it.

Cards are read liberally: members in camelCase or snake_case, ``null`` for absent, unknown
members kept in ``raw``.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urljoin, urlsplit

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_snake

from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.protocols.a2a_reply import ProtocolVersion

A2A_CARD_PATH = "/.well-known/agent-card.json"
LEGACY_A2A_CARD_PATH = "/.well-known/agent.json"


class A2AInterface(BaseModel):
    """One endpoint listed on a card."""

    model_config = ConfigDict(frozen=True)

    url: str
    protocol_version: str
    binding: str = "JSONRPC"


class A2ACard(BaseModel):
    """An agent's card as fetched, with every relative URL resolved."""

    model_config = ConfigDict(frozen=True)

    name: str = ""
    description: str = ""
    version: str | None = None
    """The agent's own version, as the card declares it (``None`` when it declares none)."""
    base_url: str
    """The URL the card was found under; relative URLs resolve against it."""
    card_url: str
    interfaces: list[A2AInterface]
    raw: JsonObject
    """The card JSON as served."""

    @property
    def extensions(self) -> list[JsonObject]:
        """``capabilities.extensions`` (each ``{uri, params, …}``); empty when absent or null."""
        return _list(_member(_obj(_member(self.raw, "capabilities")), "extensions"))

    def resolve(self, url: str) -> str:
        """A URL from the card, made absolute against the card's base."""
        return urljoin(self.base_url, url)

    def interface(self, protocol: ProtocolVersion | Literal["auto"] = "auto") -> tuple[str, ProtocolVersion]:
        """The JSON-RPC endpoint to use and its dialect; ``auto`` prefers 1.0.

        Raises:
            ProtocolError: the card lists no JSON-RPC endpoint in that dialect.
        """
        jsonrpc = [i for i in self.interfaces if i.binding.upper().replace("-", "") == "JSONRPC"]
        for wanted in (("1.0", "0.3") if protocol == "auto" else (protocol,)):
            for candidate in jsonrpc:
                if _dialect(candidate.protocol_version) == wanted:
                    return candidate.url, wanted
        offered = [f"{i.binding} {i.protocol_version} at {i.url}" for i in self.interfaces] or ["nothing"]
        raise ProtocolError(f"agent card at {self.card_url} offers no JSON-RPC A2A endpoint for "
                            f"{protocol}: it lists {', '.join(offered)}", url=self.card_url)

    @classmethod
    def from_raw(cls, raw: JsonObject, *, base_url: str, card_url: str) -> A2ACard:
        """Read the endpoints of a 1.0 card (``supportedInterfaces``) or a 0.3 one (``url``).

        Members are read in camelCase or snake_case; ``null`` counts as absent.
        """
        interfaces = [A2AInterface(url=urljoin(base_url, str(i["url"])),
                                   protocol_version=str(_member(i, "protocolVersion") or "1.0"),
                                   binding=str(_member(i, "protocolBinding") or "JSONRPC"))
                      for i in _list(_member(raw, "supportedInterfaces")) if i.get("url")]
        if not interfaces and raw.get("url"):
            version = str(_member(raw, "protocolVersion") or "0.3")
            interfaces.append(A2AInterface(url=urljoin(base_url, str(raw["url"])), protocol_version=version,
                                           binding=str(_member(raw, "preferredTransport") or "JSONRPC")))
            interfaces += [A2AInterface(url=urljoin(base_url, str(i["url"])), protocol_version=version,
                                        binding=str(i.get("transport") or "JSONRPC"))
                           for i in _list(_member(raw, "additionalInterfaces")) if i.get("url")]
        own = raw.get("version")
        return cls(name=str(raw.get("name") or ""), description=str(raw.get("description") or ""),
                   version=str(own) if own not in (None, "") else None, base_url=base_url, card_url=card_url,
                   interfaces=interfaces, raw=raw)


def _member(raw: JsonValue, camel: str) -> JsonValue:
    """A card member by its camelCase name, else its snake_case one; peers write either."""
    if not isinstance(raw, dict):
        return None
    value = raw.get(camel)
    return value if value is not None else raw.get(to_snake(camel))


def _obj(value: JsonValue) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _list(value: JsonValue) -> list[JsonObject]:
    return [i for i in value if isinstance(i, dict)] if isinstance(value, list) else []


def _dialect(version: str) -> ProtocolVersion | None:
    major = version.strip().split(".")[0]
    if major == "1":
        return "1.0"
    if version.strip().startswith("0."):
        return "0.3"
    return None


def card_candidates(url: str) -> list[tuple[str, str]]:
    """(base, card URL) pairs to try: under the URL, then at its origin."""
    for suffix in (A2A_CARD_PATH, LEGACY_A2A_CARD_PATH):
        if url.endswith(suffix):
            return [(url[: -len(suffix)] + "/", url)]
    parts = urlsplit(url)
    prefixes = [url.rstrip("/")]
    origin = f"{parts.scheme}://{parts.netloc}"
    if prefixes[0] != origin:
        prefixes.append(origin)
    return [(prefix + "/", prefix + path) for prefix in prefixes for path in (A2A_CARD_PATH, LEGACY_A2A_CARD_PATH)]
