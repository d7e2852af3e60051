#!/bin/bash
# Hidden checks for inbox-worker-tmux: the tmux session, the file that was waiting, and new files
# dropped now (one written slowly), each awaited with a deadline; the first failure ends the run.
mkdir -p /logs/verifier
if ! tmux has-session -t =worker 2>/dev/null; then
  echo "no tmux session named worker"
  echo 0 > /logs/verifier/reward.txt
  exit 0
fi
if python3 /tests/test_worker.py -v -f; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
