"""Links the Prefect UI can open: presigned URLs of S3 objects; small local files embedded instead."""

from __future__ import annotations

from pathlib import Path

import httpx
from botocore.client import BaseClient

from prefect_agentenv.artifacts import LocalArtifactBackend
from prefect_agentenv.context import CollectedFiles
from prefect_agentenv.flows.ui.links import file_links_markdown

from .conftest import make_s3_store


def test_a_stored_file_gets_a_presigned_url_that_a_browser_can_open(moto_endpoint: str,
                                                                    s3_store_client: BaseClient) -> None:
    with make_s3_store(moto_endpoint, client=s3_store_client) as store:
        meta = store.publish_files("chart", {"chart.txt": b"bars"})
        url = store.file_url(meta, "chart.txt")
        opened = store.browser_url(url)
        assert url.startswith("s3://") and opened and opened.startswith(moto_endpoint)
        assert httpx.get(opened).content == b"bars"
        assert store.browser_url("s3://another-bucket/chart.txt") is None
        section = "\n".join(file_links_markdown(store, {"collect": CollectedFiles(artifacts={"chart.txt": url})}))
        assert f"[chart.txt]({opened.split('?')[0]}" in section


def test_a_local_store_has_no_browser_url_so_a_small_text_file_is_shown_inline(tmp_path: Path) -> None:
    store = LocalArtifactBackend(tmp_path / "store")
    meta = store.publish_files("notes", {"notes.txt": b"hello from the agent"})
    url = store.file_url(meta, "notes.txt")
    assert store.browser_url(url) is None
    section = "\n".join(file_links_markdown(store, {"collect": CollectedFiles(artifacts={"notes.txt": url})}))
    assert "## Files" in section and "hello from the agent" in section
