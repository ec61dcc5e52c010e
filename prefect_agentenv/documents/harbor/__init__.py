"""The Harbor task format (docs/harbor-tasks.md): task.toml, task folders, datasets, and their compilation to steps."""
