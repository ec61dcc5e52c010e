"""The email env's state: one account's mailbox, kept in memory, stamped by the virtual clock."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from prefect_agentenv.envs.server import VirtualClock
from prefect_agentenv.jsontypes import JsonObject
from prefect_agentenv.protocols.env import UtcDatetime
from prefect_agentenv.protocols.jsonrpc import JsonRpcFault

SENT = "sent"
INBOX = "inbox"


def _addresses(value: Any) -> Any:
    """``"a@x, b@x"`` and ``"a@x"`` are accepted where a list of addresses is expected."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


Addresses = Annotated[list[str], BeforeValidator(_addresses)]


class Account(BaseModel):
    """Whose mailbox this is; sent mail goes out from this address."""

    model_config = ConfigDict(extra="forbid")

    address: str = "me@example.com"
    name: str | None = None


class Email(BaseModel):
    """One message. Unknown members are kept, so seeds can carry their own annotations."""

    model_config = ConfigDict(extra="allow", validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True)

    id: str | None = None
    from_: str = Field(alias="from")
    to: Addresses = Field(default_factory=list)
    cc: Addresses = Field(default_factory=list)
    subject: str = ""
    body: str = ""
    date: UtcDatetime | None = None
    folder: str = INBOX
    read: bool = False
    in_reply_to: str | None = None

    def record(self) -> JsonObject:
        """The exported form (wire names, ISO dates)."""
        return self.model_dump(mode="json", by_alias=True)

    def summary(self) -> JsonObject:
        """What a search returns: everything but the body, plus a snippet of it."""
        record = self.record()
        del record["body"]
        record["snippet"] = self.body[:160]
        return record

    def matches(self, terms: Sequence[str]) -> bool:
        haystack = " ".join([self.from_, *self.to, *self.cc, self.subject, self.body]).lower()
        return all(term in haystack for term in terms)


class FolderCount(TypedDict):
    """One folder in ``list_folders``: its name, how many messages it holds, how many are unread."""

    name: str
    count: int
    unread: int


class MailboxSeed(BaseModel):
    """One ``data/add`` document; unknown top-level members are refused to catch typos."""

    model_config = ConfigDict(extra="forbid")

    account: Account | None = None
    emails: list[Email] = Field(default_factory=list)
    sent: list[Email] = Field(default_factory=list)


class Mailbox:
    """Messages by id, in arrival order; ids are generated as ``msg-N`` when a seed has none."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.reset()

    def reset(self) -> None:
        self.account = Account()
        self._emails: dict[str, Email] = {}
        self._ids = itertools.count(1)

    def load(self, documents: Iterable[JsonObject]) -> None:
        """Validate every document, then add their messages; an id already present is refused."""
        seeds = [MailboxSeed.model_validate(doc) for doc in documents]
        incoming = [e for seed in seeds for e in seed.emails]
        incoming += [e.model_copy(update={"folder": SENT}) for seed in seeds for e in seed.sent]
        ids = [e.id for e in incoming if e.id is not None]
        clashes = sorted({i for i in ids if i in self._emails or ids.count(i) > 1})
        if clashes:
            raise JsonRpcFault.env_error("duplicate_id", f"email ids already present: {clashes}", ids=clashes)
        for seed in seeds:
            if seed.account is not None:
                self.account = seed.account
        for email in incoming:
            self.deliver(email, self.clock.now())

    def deliver(self, email: Email, at: datetime) -> Email:
        """File a message; it is dated ``at`` unless it carries a date."""
        email_id = email.id or self._new_id()
        stored = email.model_copy(update={"id": email_id, "date": email.date or at})
        self._emails[email_id] = stored
        return stored

    def has(self, email_id: str) -> bool:
        return email_id in self._emails

    def get(self, email_id: str) -> Email:
        """Raises ``KeyError`` naming the id when there is no such message."""
        try:
            return self._emails[email_id]
        except KeyError:
            raise KeyError(f"no email with id {email_id!r}") from None

    def mark_read(self, email_id: str) -> Email:
        email = self.get(email_id).model_copy(update={"read": True})
        self._emails[email_id] = email
        return email

    def search(self, query: str = "", folder: str | None = None, limit: int = 20) -> list[Email]:
        """Messages containing every word of ``query`` (case-insensitive), newest first."""
        terms = query.lower().split()
        found = [e for e in self._emails.values()
                 if (folder is None or e.folder == folder) and e.matches(terms)]
        found.sort(key=lambda e: e.date or self.clock.now(), reverse=True)
        return found[:max(limit, 0)]

    def send(self, to: list[str], subject: str, body: str, *, cc: list[str] | None = None,
             in_reply_to: str | None = None) -> Email:
        """Send (and file in ``sent``) a message from the account, dated by the virtual clock."""
        if not to:
            raise ValueError("a message needs at least one recipient")
        if in_reply_to is not None:
            self.get(in_reply_to)
        email = Email.model_validate({"from": self.account.address, "to": to, "cc": cc or [], "subject": subject,
                                      "body": body, "folder": SENT, "read": True, "in_reply_to": in_reply_to})
        return self.deliver(email, self.clock.now())

    def folders(self) -> list[FolderCount]:
        """Every folder with its message and unread counts; inbox and sent always listed."""
        names = dict.fromkeys([INBOX, SENT, *(e.folder for e in self._emails.values())])
        return [{"name": name,
                 "count": sum(1 for e in self._emails.values() if e.folder == name),
                 "unread": sum(1 for e in self._emails.values() if e.folder == name and not e.read)}
                for name in names]

    def export(self) -> JsonObject:
        """``{"account", "emails", "sent"}`` — the shape ``load`` accepts, so snapshots reload."""
        return {
            "account": self.account.model_dump(mode="json"),
            "emails": [e.record() for e in self._emails.values() if e.folder != SENT],
            "sent": [e.record() for e in self._emails.values() if e.folder == SENT],
        }

    def _new_id(self) -> str:
        while (candidate := f"msg-{next(self._ids)}") in self._emails:
            pass
        return candidate
