from pathlib import Path

content = Path("/app/hello.txt").read_text() if Path("/app/hello.txt").exists() else None
print("hello.txt:", repr(content))
raise SystemExit(0 if content is not None and content.strip() == "Hello, world!" else 1)
