"""A small client for OpenAI-compatible ``/chat/completions`` endpoints, over httpx.

Only what agents and judges need: messages, tools and tool calls, ``max_tokens``,
``temperature``, the ``finish_reason`` (a ``length`` finish marks a truncated response) and
the token usage. It talks to OpenAI, vLLM, LiteLLM, Ollama and the built-in mock model alike.

``base_url`` follows the ``OPENAI_BASE_URL`` convention: it includes the API version path
(``https://api.openai.com/v1``, ``http://127.0.0.1:8400/v1``) and requests go to
``{base_url}/chat/completions``.

Every foreign failure (transport errors, timeouts, non-200 answers, malformed bodies) becomes
a :class:`~prefect_agentenv.exceptions.ProtocolError` here, carrying the HTTP status and the
error body the server sent. The API key travels only in the ``Authorization`` header of each
request: it is never logged, never part of a repr, and scrubbed from any error body that
echoes it back.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from prefect_agentenv.exceptions import ProtocolError
from prefect_agentenv.jsontypes import JsonObject, JsonValue
from prefect_agentenv.protocols.tls import ssl_context

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 120.0
"""A long completion can take minutes to generate; the connect phase is bounded separately."""
CONNECT_TIMEOUT_SECONDS = 10.0
"""A model endpoint that cannot be reached in 10 s is down, not slow."""
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
"""Statuses that mean "try again": rate limits, overload and gateway hiccups."""
_MAX_RETRY_DELAY_SECONDS = 20.0
"""A ``Retry-After`` longer than this is not waited for: the caller's own timeout decides."""
_ERROR_BODY_CHARS = 500

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One function call asked for by the model; ``arguments`` is the JSON text as sent."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> JsonObject:
        """The arguments as an object.

        Raises:
            ValueError: the model sent text that is not a JSON object (it may have been cut off).
        """
        value = json.loads(self.arguments) if self.arguments.strip() else {}
        if not isinstance(value, dict):
            raise ValueError(f"the arguments of {self.name!r} are JSON but not an object")
        return value

    def to_wire(self) -> JsonObject:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


class ChatMessage(BaseModel):
    """One message of a conversation, in the chat-completions shape."""

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Calls asked for by an assistant message."""
    tool_call_id: str | None = None
    """The call a ``tool`` message answers."""
    name: str | None = None

    @classmethod
    def system(cls, content: str) -> ChatMessage:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> ChatMessage:
        return cls(role="user", content=content)

    @classmethod
    def tool(cls, call_id: str, content: str) -> ChatMessage:
        return cls(role="tool", tool_call_id=call_id, content=content)

    def to_wire(self) -> JsonObject:
        """The JSON object the endpoint expects (``content: null`` kept for tool-call messages)."""
        wire: JsonObject = {"role": self.role, "content": self.content}
        if self.tool_calls:
            wire["tool_calls"] = [*(call.to_wire() for call in self.tool_calls)]
        if self.tool_call_id is not None:
            wire["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            wire["name"] = self.name
        return wire


def _object_schema() -> JsonObject:
    """The schema of a function that takes no arguments."""
    return {"type": "object", "properties": {}}


class ToolSpec(BaseModel):
    """A function the model may call; ``parameters`` is its JSON Schema."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str | None = None
    parameters: JsonObject = Field(default_factory=_object_schema)

    def to_wire(self) -> JsonObject:
        function: JsonObject = {"name": self.name, "parameters": self.parameters or {"type": "object"}}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}


class Usage(BaseModel):
    """Token counts reported by the endpoint (zero when it reports none)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ChatCompletion(BaseModel):
    """The first choice of a completion, with what is needed to judge how it ended."""

    id: str | None = None
    model: str
    """The model that answered, as the endpoint names it (``mock`` for the mock model)."""
    message: ChatMessage
    finish_reason: str | None = None
    """``stop``, ``tool_calls``, ``length`` (cut off by ``max_tokens``), ``content_filter``…"""
    usage: Usage = Field(default_factory=Usage)

    @property
    def is_truncated(self) -> bool:
        """The response was cut off by its token limit."""
        return self.finish_reason == "length"


class OpenAIClient:
    """Calls one OpenAI-compatible endpoint.

    Args:
        base_url: the API root including its version path, e.g. ``https://api.openai.com/v1``.
        api_key: sent as a bearer token; ``None`` for endpoints that need none.
        http: the run's shared client; a private one with this module's timeouts is made (and
            closed by :meth:`aclose`) when omitted.
        timeout: per-request timeout in seconds for the whole exchange.
        max_retries: extra attempts after a connection failure or a retryable status
            (429, 5xx…); a timeout is not retried, since the caller's budget is spent.

    Example:
        ```python
        async with OpenAIClient("http://127.0.0.1:8400/v1") as client:
            completion = await client.chat([ChatMessage.user("Hello")], model="mock")
            print(completion.message.content, completion.finish_reason)
        ```
    """

    def __init__(self, base_url: str, *, api_key: SecretStr | str | None = None,
                 http: httpx.AsyncClient | None = None, timeout: float = DEFAULT_TIMEOUT_SECONDS,
                 max_retries: int = 2) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = SecretStr(api_key) if isinstance(api_key, str) else api_key
        self._owns_http = http is None
        self._http = http if http is not None else httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=CONNECT_TIMEOUT_SECONDS), verify=ssl_context())
        self._timeout = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT_SECONDS, timeout))
        self._max_retries = max(0, max_retries)

    def __repr__(self) -> str:
        return f"OpenAIClient({self.base_url!r})"

    async def __aenter__(self) -> OpenAIClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the private httpx client, if this object made one."""
        if self._owns_http:
            await self._http.aclose()

    async def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        model: str,
        tools: Sequence[ToolSpec] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra: Mapping[str, JsonValue] | None = None,
    ) -> ChatCompletion:
        """Ask for one completion.

        Args:
            messages: the conversation so far.
            model: the model name the endpoint knows.
            tools: functions the model may call; omitted from the request when empty.
            max_tokens: cap on the response's tokens; a response that hits it finishes with
                ``length``.
            temperature: sampling temperature; the endpoint's default when ``None``.
            extra: further request members (``top_p``, ``seed``…), sent as given.

        Raises:
            ProtocolError: the endpoint could not be reached, answered an error (``code`` is the
                HTTP status, the message quotes the error body) or sent something unreadable.
        """
        body: JsonObject = {"model": model, "messages": [*(m.to_wire() for m in messages)]}
        if tools:
            body["tools"] = [*(tool.to_wire() for tool in tools)]
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        body.update(extra or {})
        response = await self._post("/chat/completions", body)
        return self._completion(response)

    async def _post(self, path: str, body: JsonObject) -> httpx.Response:
        """POST with bounded retries; every failure leaves as ``ProtocolError``."""
        url = self.base_url + path
        headers = {"Content-Type": "application/json"}
        if self._api_key is not None and self._api_key.get_secret_value():
            headers["Authorization"] = f"Bearer {self._api_key.get_secret_value()}"
        for attempt in range(self._max_retries + 1):
            last = attempt == self._max_retries
            try:
                response = await self._http.post(url, json=body, headers=headers, timeout=self._timeout)
            except httpx.TimeoutException as exc:
                raise ProtocolError(f"{url} did not answer in time ({type(exc).__name__})", url=url) from exc
            except httpx.HTTPError as exc:
                if last or not isinstance(exc, httpx.TransportError):
                    raise ProtocolError(f"could not reach {url}: {type(exc).__name__}: {self._scrub(str(exc))}",
                                        url=url) from exc
                logger.warning("could not reach %s (%s); retrying", url, type(exc).__name__)
                await asyncio.sleep(_backoff(attempt, None))
                continue
            if response.status_code == 200:
                return response
            if last or response.status_code not in RETRY_STATUSES:
                raise ProtocolError(
                    f"{url} answered HTTP {response.status_code}: {self._error_text(response)}",
                    url=url, code=response.status_code)
            logger.warning("%s answered HTTP %s; retrying", url, response.status_code)
            await asyncio.sleep(_backoff(attempt, response.headers.get("retry-after")))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _completion(self, response: httpx.Response) -> ChatCompletion:
        url = str(response.request.url)
        try:
            payload = response.json()
            choice = payload["choices"][0]
            wire_message = choice.get("message") or {}
            message = ChatMessage(
                role="assistant",
                content=_text_of(wire_message.get("content")),
                tool_calls=[_tool_call_of(raw, i) for i, raw in enumerate(wire_message.get("tool_calls") or [])],
            )
            return ChatCompletion(id=payload.get("id"), model=str(payload.get("model") or ""), message=message,
                                  finish_reason=choice.get("finish_reason"),
                                  usage=Usage.model_validate(payload.get("usage") or {}))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, ValidationError) as exc:
            raise ProtocolError(f"{url} answered with something that is not a chat completion: "
                                f"{type(exc).__name__}: {self._scrub(str(exc))[:200]}", url=url) from exc

    def _error_text(self, response: httpx.Response) -> str:
        """The error message of an OpenAI-style error body, else the body's start."""
        try:
            payload = response.json()
        except ValueError:
            payload = None
        text = response.text
        if isinstance(payload, dict):
            error = payload.get("error")
            if isinstance(error, dict) and error.get("message"):
                text = str(error["message"])
            elif isinstance(error, str):
                text = error
        return self._scrub(text)[:_ERROR_BODY_CHARS] or "(empty body)"

    def _scrub(self, text: str) -> str:
        """Some endpoints echo the key they were sent in their error messages."""
        key = self._api_key.get_secret_value() if self._api_key is not None else ""
        return text.replace(key, "**********") if key else text


def _backoff(attempt: int, retry_after: str | None) -> float:
    if retry_after is not None:
        try:
            return min(max(float(retry_after), 0.0), _MAX_RETRY_DELAY_SECONDS)
        except ValueError:
            pass
    return min(0.5 * 2.0**attempt, _MAX_RETRY_DELAY_SECONDS)


def _text_of(content: Any) -> str | None:
    """Content is a string, or (some servers) a list of ``{type: text, text}`` parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    raise TypeError(f"message content is a {type(content).__name__}")


def _tool_call_of(raw: Mapping[str, Any], index: int) -> ToolCall:
    """A call without an id gets one, since the tool message answering it must name it."""
    function = raw["function"]
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        # Some servers send the arguments as an object rather than JSON text.
        arguments = json.dumps(arguments if arguments is not None else {})
    return ToolCall(id=str(raw.get("id") or f"call_{index}"), name=str(function["name"]), arguments=arguments)
