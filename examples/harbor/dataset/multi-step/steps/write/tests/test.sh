#!/bin/bash
if [ "$(cat /app/word.txt 2>/dev/null)" = "quiet" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
