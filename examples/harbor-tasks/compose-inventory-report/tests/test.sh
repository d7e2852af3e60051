#!/bin/bash
# Hidden checks for compose-inventory-report, run in main: the saved report, and the report the sidecar
# holds (reached over the compose network). reward.json: report_file, report_posted, reward (both).
mkdir -p /logs/verifier
python3 /tests/score.py > /logs/verifier/reward.json || echo '{"reward": 0}' > /logs/verifier/reward.json
cat /logs/verifier/reward.json
