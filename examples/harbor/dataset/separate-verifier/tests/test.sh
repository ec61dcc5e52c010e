#!/bin/bash
# Only the declared artifact crossed over: /app/planted.txt must not be here.
if [ -e /app/planted.txt ]; then echo "the agent's other files reached the verifier"; echo 0 > /logs/verifier/reward.txt; exit 0; fi
if [ "$(cat /app/answer.txt 2>/dev/null)" = "42" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
