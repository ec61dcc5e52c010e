"""The requests every wire test sends: each wire, whole and streamed, with tools, images and unknown fields."""

from __future__ import annotations

import re
from typing import Any

PROMPT = "Summarise the plot of a long novel about a whale, in the words of the ship's cook, at length."
MOCK_IDS = re.compile(rb"(mockcmpl-|resp_mock_|msg_mock_)\d+")
"""The mock numbers its answers per server: the one part of an answer that differs between two identical calls."""

CASES: list[tuple[str, dict[str, Any]]] = [
    ("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": PROMPT}]}),
    ("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": PROMPT}], "stream": True,
                           "stream_options": {"include_usage": True}}),
    ("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "CALL lookup {\"q\": \"whale\"}"}],
                           "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {
                               "type": "object", "properties": {"q": {"type": "string"}}}}}],
                           "stream": True, "x-unknown-field": {"kept": True}}),
    ("/responses", {"model": "m", "input": PROMPT}),
    ("/responses", {"model": "m", "input": PROMPT, "stream": True}),
    ("/messages", {"model": "m", "max_tokens": 200, "messages": [{"role": "user", "content": PROMPT}]}),
    ("/messages", {"model": "m", "max_tokens": 200, "stream": True, "messages": [{"role": "user", "content": [
        {"type": "text", "text": PROMPT},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]}),
]

