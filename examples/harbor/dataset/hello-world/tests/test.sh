#!/bin/bash
# Harbor's contract: run from the workdir, write the reward to /logs/verifier/reward.txt.
if [ "$PWD" = "/" ]; then echo "no WORKDIR"; exit 1; fi
python3 /tests/test_state.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
