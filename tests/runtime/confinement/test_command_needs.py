"""What a confined command needs to see, found from the command line: real venvs, real ``#!`` lines, real
interpreters (another Python than the runner's where the machine has one), no launcher."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from prefect_agentenv.runtime.confinement.command_needs import Needs, command_needs, not_visible

PATH = os.environ.get("PATH", os.defpath)


def other_python() -> Path | None:
    """A Python installation of this machine other than the runner's base (pyenv keeps several), or None."""
    pyenv = shutil.which("pyenv")
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    if pyenv is None and not (root / "versions").is_dir():
        return None
    base = Path(os.path.realpath(sys.base_prefix))
    for version in sorted((root / "versions").glob("3.1[0-9]*"), reverse=True):
        python = version / "bin" / "python3"
        if python.exists() and Path(os.path.realpath(version)) != base:
            return python
    return None


def make_venv(python: Path | str, folder: Path) -> Path:
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True)
    return folder


def console_script(venv: Path, name: str) -> Path:
    """A console script as pip writes one: its venv's Python on the ``#!`` line."""
    script = venv / "bin" / name
    python = next(p for p in sorted((venv / "bin").glob("python3.*")))
    script.write_text(f"#!{python}\nimport sys\nprint('hi')\n")
    script.chmod(0o755)
    return script


def mounted(needs: Needs) -> dict[Path, str]:
    return {m.path: m.why for m in needs.mounts}


def test_a_console_script_of_a_venv_on_another_python_needs_its_venv_and_that_pythons_installation(
        tmp_path: Path) -> None:
    python = other_python()
    if python is None:
        pytest.skip("this machine has no Python installation besides the runner's")
    venv = make_venv(python, tmp_path / "venv")
    script = console_script(venv, "my-agent")
    needs = command_needs([str(script), "--port", "4000"], path=PATH)
    prefix = Path(os.path.realpath(python)).parent.parent
    assert set(mounted(needs)) == {venv, prefix}, needs.mounts
    chains = [" → ".join(chain) for _, chain in needs.executables]
    assert any(f"#!{venv}/bin/python3" in c and "pyvenv.cfg home" in c for c in chains), chains
    assert not_visible(needs, [m.path for m in needs.mounts]) == []
    assert needs.program == str(script)


def test_an_sh_c_string_is_split_as_the_shell_would_and_its_executable_and_script_found(tmp_path: Path) -> None:
    venv = make_venv(sys.executable, tmp_path / "venv")
    agent = tmp_path / "code" / "agent.py"
    agent.parent.mkdir()
    agent.write_text("print('agent')\n")
    line = f"cd /; A2A_PORT=4000 A2A_HOST=127.0.0.1 exec {venv}/bin/python '{agent}' --data=/nonexistent && true"
    needs = command_needs(["sh", "-c", line], path=PATH)
    found = mounted(needs)
    assert venv in found and agent.parent in found, needs.mounts
    assert Path(os.path.realpath(sys.base_prefix)) in found or sys.base_prefix.startswith("/usr")
    assert "/nonexistent" not in str(needs.mounts)


def test_a_bare_name_is_found_on_the_path_and_a_pyenv_shim_replaced_by_the_interpreter_it_stands_for(
        tmp_path: Path) -> None:
    shims = [p for p in os.environ.get("PATH", "").split(":") if p.endswith("/shims") and Path(p, "python3").exists()]
    if not shims:
        pytest.skip("no pyenv shims on this machine's PATH")
    needs = command_needs(["python3", "-c", "pass"], path=PATH)
    assert needs.program is not None and "/shims/" not in needs.program
    real = Path(needs.program)
    assert real.parent in needs.path_folders
    assert subprocess.run([needs.program, "-c", "pass"]).returncode == 0


def test_a_script_in_a_folder_that_shows_too_much_is_mounted_alone(tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text("print('agent')\n")
    needs = command_needs([sys.executable, str(agent)], path=PATH, protected=(Path("/nowhere/protected"),))
    assert mounted(needs).get(tmp_path) is not None  # its folder holds nothing protected
    needs = command_needs([sys.executable, str(agent)], path=PATH, protected=(tmp_path,))
    assert agent in mounted(needs) and tmp_path not in mounted(needs), needs.mounts


def test_an_interpreter_whose_installation_shows_too_much_is_a_missing_need_naming_the_install_path(
        tmp_path: Path) -> None:
    prefix = tmp_path / "home"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib").mkdir()
    shutil.copy("/bin/true", prefix / "bin" / "interp")
    tool = tmp_path / "tools" / "tool"
    tool.parent.mkdir()
    tool.write_text(f"#!{prefix}/bin/interp\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    needs = command_needs([str(tool)], path=PATH, protected=(prefix / "sandbox",))
    [problem] = not_visible(needs, [m.path for m in needs.mounts])
    assert problem.fix == str(prefix)
    assert problem.render() == (f"{tool} → #!{prefix}/bin/interp → {prefix} is an installation in a folder never "
                                f"shown whole; add --install-path {prefix} (install_paths on its block)")


def test_a_missing_interpreter_is_named_with_the_chain_that_led_to_it(tmp_path: Path) -> None:
    venv = make_venv(sys.executable, tmp_path / "venv")
    script = venv / "bin" / "my-agent"
    script.write_text(f"#!{venv}/bin/python3.99\n")
    script.chmod(0o755)
    needs = command_needs([str(script)], path=PATH)
    [problem] = not_visible(needs, [m.path for m in needs.mounts])
    assert problem.render() == f"{script} → #!{venv}/bin/python3.99 does not exist on this machine"


def test_a_node_cli_needs_its_package_tree_and_the_node_on_the_path(tmp_path: Path) -> None:
    node_prefix = tmp_path / "node"
    (node_prefix / "bin").mkdir(parents=True)
    (node_prefix / "lib").mkdir()
    shutil.copy("/bin/true", node_prefix / "bin" / "node")
    package = tmp_path / "cli" / "node_modules" / "some-cli"
    (package / "bin").mkdir(parents=True)
    entry = package / "bin" / "cli.js"
    entry.write_text("#!/usr/bin/env node\nconsole.log('hi')\n")
    entry.chmod(0o755)
    link = tmp_path / "cli" / "node_modules" / ".bin" / "some-cli"
    link.parent.mkdir()
    link.symlink_to("../some-cli/bin/cli.js")
    needs = command_needs([str(link)], path=f"{node_prefix / 'bin'}:{PATH}")
    assert set(mounted(needs)) == {tmp_path / "cli" / "node_modules", node_prefix}, needs.mounts


def test_the_folders_a_venvs_pth_files_name_are_mounted_too(tmp_path: Path) -> None:
    venv = make_venv(sys.executable, tmp_path / "venv")
    source = tmp_path / "src" / "my_agent"
    source.mkdir(parents=True)
    [site] = venv.glob("lib/python*/site-packages")
    (site / "my_agent.pth").write_text(f"{source.parent}\n")
    needs = command_needs([f"{venv}/bin/python", "-m", "my_agent"], path=PATH)
    assert source.parent in mounted(needs) and "my_agent.pth" in mounted(needs)[source.parent]
