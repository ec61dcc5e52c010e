"""Record and replay: calls recorded against the mock model are answered byte for byte from the cassette
with the mock stopped, through the genuine SDKs; a request never recorded gets an error naming its
model and hash; a cassette holds no key and no token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from prefect_agentenv.gateway import Cassette, ModelGateway, serve_gateway
from prefect_agentenv.gateway.cassette import CassetteEntry, request_hash
from servers import mock_model

from .gateway_upstreams import CANARY_KEY, RUN, mock_config
from .wire_cases import PROMPT

MESSAGES: list[Any] = [{"role": "user", "content": PROMPT}]


async def _ask_everything(gateway: ModelGateway, token: str, user_id: str) -> list[bytes]:
    """Chat, Responses and Messages, whole and streamed, through the SDKs: each answer's raw bytes."""
    async with openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=token, max_retries=0) as oai, \
            anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=token, max_retries=0) as claude:
        chat = oai.chat.completions
        answers = [(await chat.with_raw_response.create(model="m", messages=MESSAGES)).http_response.content,
                   (await oai.responses.with_raw_response.create(model="m", input=PROMPT)).http_response.content,
                   (await claude.messages.with_raw_response.create(
                       model="m", max_tokens=200, messages=MESSAGES,
                       metadata={"user_id": user_id})).http_response.content]
        async with chat.with_streaming_response.create(model="m", messages=MESSAGES, stream=True,
                                                       stream_options={"include_usage": True}) as streamed:
            answers.append(await streamed.read())
        async with oai.responses.with_streaming_response.create(model="m", input=PROMPT, stream=True) as streamed:
            answers.append(await streamed.read())
        async with claude.messages.with_streaming_response.create(
                model="m", max_tokens=200, messages=MESSAGES, stream=True,
                metadata={"user_id": user_id}) as streamed:
            answers.append(await streamed.read())
    return answers


async def test_a_recorded_run_replays_byte_for_byte_with_the_mock_model_stopped(tmp_path: Path) -> None:
    cassette = Cassette()
    with mock_model(tmp_path / "mock.log") as mock:
        config = mock_config(mock)
        async with serve_gateway(config, recording=cassette) as recording:
            token = recording.issue(RUN, "agent")
            recorded = await _ask_everything(recording, token, user_id="user-of-the-recorded-run")
    async with httpx.AsyncClient() as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(mock.url("/health"))
    (tmp_path / "run.jsonl").write_text(cassette.to_jsonl())

    replay = Cassette.read(tmp_path / "run.jsonl")
    async with serve_gateway(config, replay=replay) as replaying:
        # Anthropic's metadata.user_id differs on every run of a harness: it is not part of the match.
        replayed = await _ask_everything(replaying, replaying.issue("run-2", "agent"), user_id="someone-else")
        async with openai.AsyncOpenAI(base_url=replaying.openai_base_url, api_key=replaying.issue("run-2", "agent"),
                                      max_retries=0) as oai:
            stream = await oai.chat.completions.create(model="m", messages=MESSAGES, stream=True,
                                                       stream_options={"include_usage": True})
            chunks = [chunk async for chunk in stream]

    assert replayed == recorded and all(len(answer) > 200 for answer in recorded)
    assert [e.streamed for e in replay.entries] == [False, False, False, True, True, True]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == f'mock reply: received "{PROMPT}"'
    # The replayed calls are counted as the recorded ones were, from the same usage.
    assert [(c.input_tokens, c.output_tokens) for c in replaying.calls("run-2")][:6] == [
        (c.input_tokens, c.output_tokens) for c in recording.calls(RUN)]
    assert all(c.status == 200 and c.failure is None for c in replaying.calls("run-2"))


async def test_a_cassette_holds_neither_the_key_nor_the_token(gateway: ModelGateway, tmp_path: Path) -> None:
    cassette = Cassette()
    async with serve_gateway(gateway.config, recording=cassette) as recording:
        token = recording.issue(RUN, "agent")
        await _ask_everything(recording, token, user_id="u")
    text = cassette.to_jsonl()

    assert len(cassette.entries) == 6 and CANARY_KEY not in text and token not in text
    assert cassette.for_run(RUN) == cassette and cassette.for_run("run-2").entries == []
    for entry in cassette.entries:
        assert {name for name, _ in entry.headers} <= {"content-type", "request-id", "x-request-id", "retry-after"}
        assert (entry.run_id, entry.role, entry.model) == (RUN, "agent", "m")


async def test_a_request_never_recorded_gets_an_error_naming_its_model_and_hash(gateway: ModelGateway) -> None:
    cassette = Cassette()
    async with serve_gateway(gateway.config, recording=cassette) as recording:
        await _ask_everything(recording, recording.issue(RUN, "agent"), user_id="u")

    async with serve_gateway(gateway.config, replay=cassette) as replaying:
        token = replaying.issue(RUN, "agent")
        async with openai.AsyncOpenAI(base_url=replaying.openai_base_url, api_key=token, max_retries=3) as oai, \
                anthropic.AsyncAnthropic(base_url=replaying.base_url, api_key=token, max_retries=3) as claude:
            with pytest.raises(openai.BadRequestError) as unseen:
                await oai.chat.completions.create(model="never-asked", messages=MESSAGES)
            with pytest.raises(anthropic.BadRequestError, match=r"model 'm', request sha256:[0-9a-f]{64}"):
                await claude.messages.create(model="m", max_tokens=201, messages=MESSAGES)

    assert unseen.value.code == "not_in_cassette"
    assert "replaying a recorded run and has no answer for this request (model 'never-asked', request sha256:" \
        in unseen.value.message
    missed = replaying.calls(RUN)
    assert [(c.status, c.failure) for c in missed] == [(400, "replay"), (400, "replay")]
    assert missed[0].error is not None and missed[0].error.removeprefix("not in the cassette: ") in unseen.value.message


async def test_the_same_request_asked_again_gets_the_recorded_answers_in_order(gateway: ModelGateway) -> None:
    cassette = Cassette()
    body = {"model": "m", "messages": MESSAGES}

    async def twice(running: ModelGateway) -> list[bytes]:
        headers = {"authorization": f"Bearer {running.issue(RUN, 'agent')}"}
        async with httpx.AsyncClient(timeout=10.0) as http:
            return [(await http.post(running.openai_base_url + "/chat/completions", json=body,
                                     headers=headers)).content for _ in range(2)]

    async with serve_gateway(gateway.config, recording=cassette) as recording:
        first, second = await twice(recording)
    async with serve_gateway(gateway.config, replay=cassette) as replaying:
        assert await twice(replaying) == [first, second] != [first, first]  # the mock numbers its answers
        assert (await twice(replaying)) == [second, second]  # past the recording: its last answer again


def test_the_request_hash_ignores_key_order_whitespace_and_caller_ids_but_not_the_prompt() -> None:
    base = request_hash("chat", b'{"model": "m", "messages": [], "user": "a"}')
    assert request_hash("chat", b'{"messages":[],"model":"m","user":"b","metadata":{"x":1}}') == base
    assert request_hash("chat", b'{"model": "m", "messages": [{"role": "user", "content": "x"}]}') != base
    assert request_hash("responses", b'{"model": "m", "messages": []}') != base
    assert request_hash("chat", b"not json").startswith("sha256:")


def test_an_answer_that_is_not_utf8_is_kept_in_base64_and_a_stream_replays_event_by_event() -> None:
    binary = CassetteEntry.of(wire="chat", path="/v1/chat/completions", model="m", request_hash="sha256:0",
                              status=200, headers=[("Content-Type", "application/octet-stream"),
                                                   ("Set-Cookie", "secret")], body=b"\xff\xfe")
    stream = CassetteEntry.of(wire="chat", path="/v1/chat/completions", model="m", request_hash="sha256:1",
                              status=200, headers=[("content-type", "text/event-stream")],
                              body=b"data: 1\n\ndata: 2\n\ndata: [DONE]\n\n")
    again = Cassette.from_jsonl(Cassette(entries=[binary, stream]).to_jsonl())

    assert again.entries[0].body_encoding == "base64" and again.entries[0].body_bytes() == b"\xff\xfe"
    assert again.entries[0].headers == [("content-type", "application/octet-stream")]
    assert again.entries[1].chunks() == [b"data: 1\n\n", b"data: 2\n\n", b"data: [DONE]\n\n"]
