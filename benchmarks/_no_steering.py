#!/usr/bin/env python
"""``_api_calls.py`` with a benchmark's control channel switched off: no control or status Variable,
no polling. The "off" side of ``control_overhead.py``.

The channel's first call fails, so the run goes on uncontrolled, as it does when its Prefect server
refuses the Variables (the code under test is unchanged)::

    BENCH_API_CALLS=out.json python benchmarks/_no_steering.py bench B --epochs 8
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _api_calls  # noqa: E402  (first: its clock starts where it starts for the other side)


def switch_off() -> None:
    from prefect_agentenv.flows.control.channel import ControlChannel

    async def refuse(self: Any, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the control channel is off for this measure")

    ControlChannel.forget_finished = refuse  # type: ignore[method-assign]


if __name__ == "__main__":
    switch_off()
    _api_calls.main()
