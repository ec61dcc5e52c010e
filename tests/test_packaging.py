"""The package metadata: an SPDX license, classifiers, URLs, and Prefect 3 upgrades allowed."""

from __future__ import annotations

import subprocess
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


def dry_run(target: str, tmp_path: Path) -> str:
    """The commands `make TARGET` would run on a fresh clone (nothing is executed)."""
    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run(["make", "-n", "-C", str(repo), target, f"VENV={tmp_path / 'venv'}",
                           f"PEERS={tmp_path / 'peers'}"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_demo_never_installs_the_test_only_step_types_but_make_test_does(tmp_path: Path) -> None:
    demo, test = dry_run("demo", tmp_path), dry_run("test", tmp_path)
    assert "tests/plugin" not in demo and "uninstall -q -y agentenv-teststeps" in demo
    assert "-e tests/plugin" in test and "pytest" in test
