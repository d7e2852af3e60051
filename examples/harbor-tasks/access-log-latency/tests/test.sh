#!/bin/bash
# Hidden checks for access-log-latency: writes /logs/verifier/reward.json, one 0/1 key per part of the
# result and "reward" (1 only when every part is right). A missing file scores 0 everywhere.
mkdir -p /logs/verifier
python3 /tests/score.py > /logs/verifier/reward.json || echo '{"reward": 0}' > /logs/verifier/reward.json
cat /logs/verifier/reward.json
