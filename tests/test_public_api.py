"""The public API: everything in __all__ exists, and every public name is listed."""

from __future__ import annotations

import prefect_agentenv


def test_every_name_in_all_is_importable() -> None:
    for name in prefect_agentenv.__all__:
        assert getattr(prefect_agentenv, name) is not None, name


def test_all_lists_every_public_name_of_the_package_root() -> None:
    public = {n for n in vars(prefect_agentenv) if not n.startswith("_") and n[0].isupper() or n in ("load_task",)}
    public -= {"Any"}
    assert public <= set(prefect_agentenv.__all__)
