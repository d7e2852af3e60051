#!/bin/bash
# Hidden checks for sessionize-events: both outputs byte for byte.
mkdir -p /logs/verifier
ok=1
cmp -s /output/sessions.csv /tests/expected_sessions.csv || { diff /tests/expected_sessions.csv /output/sessions.csv | head -40; ok=0; }
[ "$(tr -d '[:space:]' < /output/invalid.txt 2>/dev/null)" = "$(tr -d '[:space:]' < /tests/expected_invalid.txt)" ] || { echo "invalid count differs"; ok=0; }
echo $ok > /logs/verifier/reward.txt
