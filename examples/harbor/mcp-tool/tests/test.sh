#!/bin/bash
# The task's tool ran in the environment: /app/stamp.txt holds the word and the image's own marker.
if grep -q "^harbor: only in the image$" /app/stamp.txt 2>/dev/null; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
