#!/bin/bash
# Two metrics in reward.json: the count is right, and the file holds digits only.
python3 - <<'PY'
import json, os
from pathlib import Path
path = Path("count.txt")
text = path.read_text() if path.exists() else ""
correct = 1.0 if text.strip() == os.environ["EXPECTED"] else 0.0
digits = 1.0 if text.strip().isdigit() else 0.0
Path("/logs/verifier/reward.json").write_text(json.dumps({"correct": correct, "digits_only": digits}))
print("count.txt:", repr(text), "correct", correct, "digits_only", digits)
PY
