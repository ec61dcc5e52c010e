"""A skill a document gives an agent: its own module, so the deploy step and the agent configuration
it is delivered by both import it without importing each other."""

from __future__ import annotations

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from prefect_agentenv.attribute_docs import attribute_docstrings


class Skill(BaseModel):
    """A skill registered with the agent through its skill-config extension."""

    model_config = ConfigDict(extra="allow", json_schema_extra=attribute_docstrings)

    name: str
    """Skill name."""
    description: str | None = None
    """What the skill is for, as the agent lists it."""
    content: str | None = Field(default=None, validation_alias=AliasChoices("content", "skill_md"))
    """The skill's instructions (for example a SKILL.md body); AgentEnv calls it skill_md."""
