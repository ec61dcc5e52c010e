"""What the gateway's stream meter costs per streamed event, and the share of its closing-event check: a 500-token
stream of each wire fed to :class:`~prefect_agentenv.gateway.metering.StreamMeter` in 300-byte chunks (as a
relay reads them), with the check and with it turned off, alternating in one process.

The closing-event check (``[DONE]``, ``response.completed``, ``message_stop``) lets the gateway tell a client that
hung up after the whole answer from one that left mid-stream.

    .venv/bin/python benchmarks/stream_meter.py --rounds 15
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import timeit
from collections.abc import Callable

from prefect_agentenv.gateway.config import Wire
from prefect_agentenv.gateway.metering import StreamMeter

TOKENS = 500
CHUNK_BYTES = 300


def _sse(events: list[tuple[str | None, object]]) -> bytes:
    return b"".join((f"event: {name}\n" if name else "").encode() + f"data: {json.dumps(data)}\n\n".encode()
                    for name, data in events)


def streams() -> dict[Wire, bytes]:
    """A ``TOKENS``-token answer on each wire, as its provider streams it."""
    chat = [(None, {"id": "c", "object": "chat.completion.chunk", "model": "m",
                    "choices": [{"index": 0, "delta": {"content": f"tok{i}"}}], "usage": None}) for i in range(TOKENS)]
    responses = [("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": i,
                                                 "item_id": "msg_1", "output_index": 0, "content_index": 0,
                                                 "delta": f"tok{i}"}) for i in range(TOKENS)]
    messages = [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": f"tok{i}"}}) for i in range(TOKENS)]
    return {
        "chat": _sse(chat) + b"data: [DONE]\n\n",
        "responses": _sse([*responses, ("response.completed", {"type": "response.completed", "response": {
            "model": "m", "usage": {"input_tokens": 9, "output_tokens": TOKENS}}})]),
        "messages": _sse([*messages, ("message_stop", {"type": "message_stop"})]),
    }


def feed_all(wire: Wire, chunks: list[bytes], check: bool) -> Callable[[], None]:
    def run() -> None:
        meter = StreamMeter(wire)
        if not check:
            meter._closes = lambda line: False  # type: ignore[method-assign]
        for chunk in chunks:
            meter.feed(chunk)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    for wire, stream in streams().items():
        chunks = [stream[i:i + CHUNK_BYTES] for i in range(0, len(stream), CHUNK_BYTES)]
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.rounds):
            for check in (False, True):
                best = min(timeit.repeat(feed_all(wire, chunks, check), number=20, repeat=3)) / 20
                times[check].append(best * 1e6)
        off, on = statistics.median(times[False]), statistics.median(times[True])
        print(f"{wire:<10} {TOKENS}-token stream: {off:7.1f} us without the check, {on:7.1f} us with it "
              f"(+{(on - off) / TOKENS:.2f} us an event, x{on / off:.2f})")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
