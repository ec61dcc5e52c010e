"""Commands and terminals in a Harbor environment, on a real container of the local test image: a terminal is
the container's own (its size, its exit code), ``bash ARGS`` reaches the container with its arguments as they
were and its stdout and stderr apart, and whatever a closed terminal or a cancelled command started there is
killed there; what a command or a terminal prints without end is bounded in the runner. Needs the local docker
daemon (`make docker-up`); skipped with the reason without one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from image_mode import TEST_IMAGE, skip_reason
from prefect_agentenv.runtime.harbor import environment
from prefect_agentenv.runtime.harbor import terminal as terminal_module
from prefect_agentenv.runtime.harbor.environment import exec_bash, exec_in, remove_environment, start_environment
from prefect_agentenv.runtime.harbor.terminal import open_terminal


@pytest.fixture
async def container() -> AsyncIterator[str]:
    reason = await asyncio.to_thread(skip_reason)
    if reason is not None:
        pytest.skip(reason)
    name = await start_environment(TEST_IMAGE, workdir="/srv", env={}, network="none", run_id=None)
    try:
        yield name
    finally:
        await remove_environment(name)


async def command_lines(container: str) -> str:
    return (await exec_in(container, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '", user=None, timeout=30)).output


async def test_a_terminal_is_the_containers_sized_as_asked_and_exits_with_its_code(container: str) -> None:
    terminal = await open_terminal(container, [], user=None, workdir="/srv", timeout=60, rows=33, cols=111)
    await terminal.write(b"stty size; pwd; exit 5\r")
    seen = b"".join([chunk async for chunk in terminal.chunks()])

    assert await terminal.wait() == 5
    assert b"33 111" in seen and b"/srv" in seen, seen
    await terminal.close()


async def test_closing_a_terminal_kills_what_it_started_in_the_container(container: str) -> None:
    terminal = await open_terminal(container, ["-c", "sleep 311 & sleep 312"], user=None, workdir="/srv",
                                   timeout=60, rows=24, cols=80)
    for _ in range(50):
        if "sleep 312" in await command_lines(container):
            break
        await asyncio.sleep(0.2)
    assert "sleep 311" in await command_lines(container)

    await terminal.close()

    assert "sleep 31" not in await command_lines(container), "a docker exec whose CLI is gone would run on"
    assert [chunk async for chunk in terminal.chunks()] == [], "its readers are told it ended"


async def test_bash_args_reach_the_container_as_they_were(container: str) -> None:
    done = await exec_bash(container, ["-c", 'printf "%s|" "$0" "$1" "$HOME"; echo "err" >&2; exit 6',
                                       "it's $0", "a b \"c\""], user=None, timeout=60, workdir="/tmp")

    assert (done.exit_code, done.stdout, done.stderr) == (6, 'it\'s $0|a b "c"|/root|', "err\n")


async def test_a_cancelled_command_is_killed_in_the_container(container: str) -> None:
    running = asyncio.ensure_future(exec_bash(container, ["-c", "sleep 313"], user=None, timeout=600))
    for _ in range(50):
        if "sleep 313" in await command_lines(container):
            break
        await asyncio.sleep(0.2)
    assert "sleep 313" in await command_lines(container)

    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running

    assert "sleep 313" not in await command_lines(container)


async def test_a_command_printing_more_than_the_limit_keeps_the_limit_and_says_so(container: str) -> None:
    done = await exec_bash(container, ["-c", "yes | head -c 40000000; echo done >&2"], user=None, timeout=120)

    assert done.exit_code == 0 and not done.timed_out
    assert len(done.stdout) == environment.OUTPUT_LIMIT and set(done.stdout) == {"y", "\n"}
    assert done.stderr.startswith("done\n")
    assert f"kept the first {environment.OUTPUT_LIMIT} bytes of this command's stdout and dropped" in done.stderr


async def test_a_command_printing_without_end_ends_at_its_timeout_with_the_limit_kept(
        container: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "OUTPUT_LIMIT", 1000)

    done = await exec_bash(container, ["-c", "yes & yes >&2"], user=None, timeout=2)

    assert done.timed_out and done.exit_code == 124
    assert done.stdout == "y\n" * 500 and done.stderr.startswith("y\n" * 500 + "\n[")
    assert "1000 bytes of this command's stdout and stderr" in done.stderr
    assert "yes" not in await command_lines(container)


async def test_a_terminal_nobody_reads_is_no_longer_read_until_someone_does(container: str) -> None:
    terminal = await open_terminal(container, ["-c", "yes"], user=None, workdir="/srv", timeout=60, rows=24, cols=80)
    try:
        await asyncio.sleep(2)
        held = terminal._queue.qsize()
        assert 0 < held <= terminal_module._QUEUED, "what the runner holds for a reader is bounded"
        taken = 0
        async for _ in terminal.chunks():
            taken += 1
            if taken > 4 * terminal_module._QUEUED:
                break
        assert taken > 4 * terminal_module._QUEUED, "reading again takes up where it stopped"
    finally:
        await terminal.close()
    assert "yes" not in await command_lines(container)


async def test_typing_into_a_terminal_that_does_not_read_waits_until_it_is_closed(container: str) -> None:
    terminal = await open_terminal(container, ["-c", "sleep 30"], user=None, workdir="/srv", timeout=60, rows=24,
                                   cols=80)
    typing = asyncio.ensure_future(terminal.write(b"x" * (4 << 20)))
    try:
        await asyncio.sleep(1)
        assert not typing.done(), "four MiB typed into a bash that reads nothing waits (and the loop runs meanwhile)"
    finally:
        await terminal.close()
    await asyncio.wait_for(typing, 5)
