"""The package metadata: an SPDX license, classifiers, URLs, and Prefect 3 upgrades allowed."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]


def test_the_license_is_an_spdx_expression_not_the_deprecated_table() -> None:
    assert PYPROJECT["license"] == "Apache-2.0"


def test_prefect_may_be_upgraded_within_major_version_3() -> None:
    (prefect,) = [Requirement(r) for r in PYPROJECT["dependencies"] if Requirement(r).name == "prefect"]
    assert prefect.specifier.contains("3.9.1") and prefect.specifier.contains("3.12.0")
    assert not prefect.specifier.contains("4.0.0") and not prefect.specifier.contains("3.8.0")


def test_the_package_declares_classifiers_and_project_urls() -> None:
    assert "Typing :: Typed" in PYPROJECT["classifiers"]
    assert any(c.startswith("Programming Language :: Python :: 3.") for c in PYPROJECT["classifiers"])
    assert PYPROJECT["urls"]["Homepage"].startswith("https://")
