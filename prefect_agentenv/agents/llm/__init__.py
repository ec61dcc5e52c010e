"""The reference LLM agent: a model with the tools of its envs, driven by a tool loop."""
