"""Running Harbor task environments: images built once and cached by content, containers and commands in them."""
