"""Reading a Harbor task folder (and a dataset: a folder of them) into a :class:`HarborTask`.

A task folder holds ``instruction.md``, ``task.toml``, ``environment/`` (a Dockerfile, a compose file
whose service ``main`` is the agent's, or nothing when ``[environment].docker_image`` names an
image), ``tests/test.sh`` and, optionally, ``solution/solve.sh``; a multi-step task has
``steps/<name>/{instruction.md,tests/,solution/,workdir/}`` beside one shared ``environment/``.
Every problem is one :class:`Problem` naming the file and the field.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from prefect_agentenv.documents.harbor.config import TaskConfig, unsupported, unsupported_raw
from prefect_agentenv.documents.problems import Problem

TASK_FILE = "task.toml"
INSTRUCTION_FILE = "instruction.md"
MAX_INSTRUCTION_BYTES = 1024 * 1024


@dataclass(frozen=True)
class HarborStepFiles:
    """One step of a task: its prompt and the folders of its tests, solution and starting files."""

    name: str
    instruction: str
    tests: Path | None
    solution: Path | None
    workdir: Path | None


@dataclass
class HarborTask:
    """A loaded task folder."""

    root: Path
    name: str
    config: TaskConfig
    steps: list[HarborStepFiles]
    """One entry per step; a single-step task has one, named after the task."""
    environment: Path
    task_toml_sha256: str
    warnings: list[Problem] = field(default_factory=list)

    @property
    def multi_step(self) -> bool:
        return bool(self.config.steps)

    @property
    def slug(self) -> str:
        """The task's name as a task id: ``org/name`` → ``name``."""
        return self.name.rsplit("/", 1)[-1]


class HarborTaskError(Exception):
    """The folder is not a valid Harbor task; ``.problems`` lists everything wrong."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(p.render() for p in problems))
        self.problems = problems


def is_task_folder(path: Path) -> bool:
    return path.is_dir() and (path / TASK_FILE).is_file()


def is_dataset_folder(path: Path) -> bool:
    return path.is_dir() and not is_task_folder(path) and bool(dataset_tasks(path))


def dataset_tasks(path: Path) -> list[Path]:
    """The task folders directly under a dataset folder, by name."""
    return sorted(p for p in path.iterdir() if is_task_folder(p))


def load_task_folder(root: Path) -> HarborTask:
    """Read and check a task folder.

    Raises:
        HarborTaskError: the folder has problems (all of them).
    """
    toml_path = root / TASK_FILE
    where = str(toml_path)
    try:
        raw_bytes = toml_path.read_bytes()
        raw = tomllib.loads(raw_bytes.decode("utf-8"))
    except OSError as exc:
        raise HarborTaskError([Problem(f"cannot read {TASK_FILE}: {exc.strerror or exc}", path=where)]) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HarborTaskError([Problem(f"not valid TOML: {exc}", path=where)]) from None
    refused = [Problem(f"not supported: {why}", path=f"{where}:{name}",
                       hint="remove it, or run this task on a runner that provides it")
               for name, why in unsupported_raw(raw)]
    try:
        config = TaskConfig.model_validate(raw)
    except ValidationError as exc:
        raise HarborTaskError(refused + [_field_problem(where, err) for err in exc.errors()]) from None
    problems = refused + [Problem(f"not supported: {why}", path=f"{where}:{name}",
                                  hint="remove it, or run this task on a runner that provides it")
                          for name, why in unsupported(config)]
    steps, step_problems = _steps(root, config)
    problems += step_problems + _environment_problems(root, config)
    if problems:
        raise HarborTaskError(problems)
    return HarborTask(root=root, name=config.task.name or root.name, config=config, steps=steps,
                      environment=root / "environment", task_toml_sha256=hashlib.sha256(raw_bytes).hexdigest())


def _field_problem(where: str, err: object) -> Problem:
    assert isinstance(err, dict)
    loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-")) or "(root)"
    return Problem(str(err["msg"]).removeprefix("Value error, "), path=f"{where}:{loc}")


def _steps(root: Path, config: TaskConfig) -> tuple[list[HarborStepFiles], list[Problem]]:
    """The step folders (the task's root files for a single-step task)."""
    if not config.steps:
        problems: list[Problem] = []
        instruction = _instruction(root / INSTRUCTION_FILE, problems)
        problems += _test_script(root / "tests", config)
        return [HarborStepFiles(config.task.name or root.name, instruction, root / "tests",
                                _folder(root / "solution"), None)], problems
    steps, problems = [], []
    for i, step in enumerate(config.steps):
        folder = root / "steps" / step.name
        if not folder.is_dir():
            problems.append(Problem(f"step '{step.name}' has no folder steps/{step.name}",
                                    path=f"{root / TASK_FILE}:steps[{i}].name"))
            continue
        instruction = _instruction(folder / INSTRUCTION_FILE, problems)
        tests = _folder(folder / "tests")
        if tests is None and not (root / "tests" / "test.sh").is_file():
            problems.append(Problem("no tests/test.sh for this step, nor at the task's root",
                                    path=str(folder / "tests")))
        steps.append(HarborStepFiles(step.name, instruction, tests, _folder(folder / "solution"),
                                     _folder(folder / "workdir")))
    return steps, problems


def _instruction(path: Path, problems: list[Problem]) -> str:
    try:
        if path.stat().st_size > MAX_INSTRUCTION_BYTES:
            problems.append(Problem("the instruction is larger than 1 MiB", path=str(path)))
            return ""
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        problems.append(Problem(f"cannot read the instruction: {exc.strerror or exc}", path=str(path),
                                hint="a Harbor task's prompt is its instruction.md"))
        return ""
    except UnicodeDecodeError:
        problems.append(Problem("the instruction is not UTF-8 text", path=str(path)))
        return ""
    if not text.strip():
        problems.append(Problem("the instruction is empty", path=str(path)))
    return text


def _test_script(tests: Path, config: TaskConfig) -> list[Problem]:
    if (tests / "test.sh").is_file():
        return []
    return [Problem("no tests/test.sh: Harbor's verifier runs it", path=str(tests / "test.sh"))]


def _environment_problems(root: Path, config: TaskConfig) -> list[Problem]:
    env = root / "environment"
    has_build = (env / "Dockerfile").is_file() or (env / "docker-compose.yaml").is_file()
    problems = []
    if not has_build and config.environment.docker_image is None:
        problems.append(Problem("no environment/Dockerfile, environment/docker-compose.yaml or "
                                "[environment].docker_image: nothing says what the agent runs in", path=str(env)))
    if (env / "docker-compose.yaml").is_file():
        problems += _compose_problems(env)
    if config.verifier.environment_mode == "separate" and not (root / "tests" / "Dockerfile").is_file():
        problems.append(Problem("a separate verifier is built from tests/Dockerfile, and there is none",
                                path=f"{root / TASK_FILE}:verifier.environment_mode"))
    return problems


def _compose_problems(env: Path) -> list[Problem]:
    """The compose file read as the run reads it: a service ``main``, and sidecars it can start (one line each)."""
    from prefect_agentenv.runtime.harbor.images import ImageError, sidecars_of, source_of

    try:
        source_of(env, None)
        sidecars_of(env)
    except ImageError as exc:
        return [Problem(str(exc).removeprefix(f"{env / 'docker-compose.yaml'}: "),
                        path=str(env / "docker-compose.yaml"))]
    return []


def _folder(path: Path) -> Path | None:
    return path if path.is_dir() else None


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_folder(*folders: Path | None) -> str | None:
    """One hash over every file of the folders (relative path and bytes, in order); None when there are none."""
    digest = hashlib.sha256()
    seen = False
    for folder in folders:
        if folder is None or not folder.is_dir():
            continue
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            seen = True
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest() if seen else None
