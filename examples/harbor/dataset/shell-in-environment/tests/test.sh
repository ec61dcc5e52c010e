#!/bin/bash
# The command ran in the environment: its working folder was the workdir (/app), and it read a file the image
# holds outside the workdir (/opt/task/marker.txt), which no shell outside the environment can see.
if [ "$(cat /app/where.txt 2>/dev/null)" = "/app" ] && grep -q "only in the image" /app/found.txt 2>/dev/null \
    && grep -q "seeded by the image" /app/found.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
