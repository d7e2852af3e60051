#!/bin/bash
# Hidden checks for merge-contacts-json: reward.json with "emails" (the right contacts, in order),
# "fields" (every value right), "rejected" (the count) and "reward" (all three).
mkdir -p /logs/verifier
python3 /tests/score.py > /logs/verifier/reward.json || echo '{"reward": 0}' > /logs/verifier/reward.json
cat /logs/verifier/reward.json
