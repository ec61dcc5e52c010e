#!/bin/bash
# The agent called the sidecar's tool: the sidecar, reached by its service name, holds the note.
if python3 -c 'import json, urllib.request, sys; sys.exit(0 if "shipped" in json.load(urllib.request.urlopen("http://notes:8000/notes")) else 1)'; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
