"""A Harbor environment's compose file read as the run reads it: the service ``main``, and its sidecars in the
order their ``depends_on`` allows, with what a shared network namespace cannot give refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from prefect_agentenv.runtime.harbor.images import BuildSource, ImageError, Sidecar, sidecars_of, source_of

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "harbor" / "sidecar-tool" / "environment"


def compose(tmp_path: Path, services: dict[str, object]) -> Path:
    (tmp_path / "docker-compose.yaml").write_text(yaml.safe_dump({"services": services}))
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    return tmp_path


def test_main_is_compose_s_main_and_each_sidecar_has_its_command_entrypoint_and_environment() -> None:
    assert source_of(EXAMPLE, None) == BuildSource(context=EXAMPLE / ".", dockerfile=EXAMPLE / "." / "Dockerfile")
    assert sidecars_of(EXAMPLE) == [Sidecar(
        name="notes", source=BuildSource(context=EXAMPLE / ".", dockerfile=EXAMPLE / "." / "notes.Dockerfile"),
        command=("python3", "/opt/notes/server.py", "8000"), environment=(("NOTES_GREETING", "noted"),),
        health=("python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/notes')"),
        health_seconds=60.0)]


def test_sidecars_start_after_what_they_depend_on_and_string_forms_are_read_as_compose_reads_them(
        tmp_path: Path) -> None:
    env = compose(tmp_path, {"main": {"build": "."},
                             "api": {"image": "api:1", "depends_on": {"db": {"condition": "service_healthy"}},
                                     "entrypoint": "/bin/serve --fast", "environment": ["MODE=test", "EMPTY"]},
                             "db": {"image": "db:1", "command": "postgres -c fsync=off", "ports": ["5432:5432"],
                                    "healthcheck": {"test": ["CMD-SHELL", "pg_isready"], "interval": "5s",
                                                    "retries": 5, "start_period": "30s"}}})

    db, api = sidecars_of(env)

    assert (db.name, db.command, db.health) == ("db", ("postgres", "-c", "fsync=off"), ("/bin/sh", "-c", "pg_isready"))
    assert db.health_seconds == 30 + 6 * 5, "its start period and (retries + 1) intervals"
    assert (api.name, api.entrypoint, api.environment) == ("api", ("/bin/serve", "--fast"),
                                                           (("MODE", "test"), ("EMPTY", "")))


@pytest.mark.parametrize(("services", "said"), [
    ({"main": {"build": "."}, "db": {"image": "db:1", "volumes": ["data:/var/lib"]}}, "service 'db': volumes not supported"),
    ({"main": {"build": "."}, "a": {"image": "a", "depends_on": ["b"]}, "b": {"image": "b", "depends_on": ["a"]}},
     "in a cycle"),
    ({"main": {"build": "."}, "db": {"command": "x"}}, "service 'db' has neither build nor image"),
    ({"web": {"image": "w"}}, "no service 'main'"),
])
def test_what_a_sidecar_cannot_be_is_refused_by_name(tmp_path: Path, services: dict[str, object], said: str) -> None:
    env = compose(tmp_path, services)

    with pytest.raises(ImageError, match=said):
        source_of(env, None)
        sidecars_of(env)
