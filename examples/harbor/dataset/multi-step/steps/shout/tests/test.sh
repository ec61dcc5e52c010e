#!/bin/bash
ok=1
[ "$(cat /app/shout.txt 2>/dev/null)" = "QUIET" ] || ok=0
[ -e /app/setup.sh ] && ok=0   # the step's setup.sh runs, then is gone
[ -e /app/step-two.log ] || ok=0
echo $ok > /logs/verifier/reward.txt
