"""deployments."""
