"""A warm pool's mock model: held by one task run at a time, handed on cleared, stopped if still
answering (real in-process mock model servers on loopback)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from prefect_agentenv.agents.mock_model.in_process import serve_mock_model
from prefect_agentenv.runtime.resources.pool import WarmPool

HELLO = {"model": "mock", "messages": [{"role": "user", "content": "hello"}]}


async def test_a_model_server_is_handed_to_the_next_task_run_with_nothing_left_in_it(tmp_path: Path) -> None:
    pool = WarmPool(workdir=tmp_path)
    first = await pool.acquire_model(serve_mock_model)
    try:
        async with httpx.AsyncClient(base_url=first.base_url) as client:
            (await client.post("/mock/script", json={"replies": ["scripted for the first run", "and more"]}))\
                .raise_for_status()
            answer = (await client.post("/v1/chat/completions", json=HELLO)).json()
            assert answer["choices"][0]["message"]["content"] == "scripted for the first run"
            await pool.release_model(first)

            second = await pool.acquire_model(serve_mock_model)
            assert second is first  # the same server, on the same address
            assert (await client.get("/mock/requests")).json() == {"requests": [], "queued": 0}
            answer = (await client.post("/v1/chat/completions", json=HELLO)).json()
            assert answer["choices"][0]["message"]["content"] != "and more"  # the first run's script is gone
    finally:
        await pool.close()
    with pytest.raises(httpx.ConnectError):  # closing the pool stopped it
        async with httpx.AsyncClient(base_url=first.base_url) as client:
            await client.get("/health")


async def test_two_task_runs_at_once_hold_two_model_servers(tmp_path: Path) -> None:
    pool = WarmPool(workdir=tmp_path)
    try:
        one, two = await pool.acquire_model(serve_mock_model), await pool.acquire_model(serve_mock_model)
        assert one is not two and one.base_url != two.base_url
        await pool.release_model(two)
        assert await pool.acquire_model(serve_mock_model) is two
    finally:
        await pool.close()


async def test_a_model_server_still_answering_when_handed_back_is_stopped_not_pooled(tmp_path: Path) -> None:
    pool = WarmPool(workdir=tmp_path)
    try:
        held = await pool.acquire_model(serve_mock_model)
        async with httpx.AsyncClient(base_url=held.base_url) as client:
            (await client.post("/mock/script", json={"replies": [{"content": "late", "delay_seconds": 30}]}))\
                .raise_for_status()
            pending = asyncio.ensure_future(client.post("/v1/chat/completions", json=HELLO))
            async with asyncio.timeout(10):
                while not held.busy:
                    await asyncio.sleep(0.01)
            await pool.release_model(held)  # cuts the held completion after the server's grace period
            try:
                response = await pending
            except httpx.HTTPError:
                pass  # the connection was closed under it
            else:  # or the server answered the cut request with an error, never the scripted answer
                assert response.status_code == 500
        fresh = await pool.acquire_model(serve_mock_model)
        assert fresh is not held and fresh.base_url != held.base_url
        with pytest.raises(httpx.ConnectError):
            async with httpx.AsyncClient(base_url=held.base_url) as client:
                await client.get("/health")
    finally:
        await pool.close()
