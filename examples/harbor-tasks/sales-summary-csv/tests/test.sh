#!/bin/bash
# Hidden checks for sales-summary-csv: /output/summary.csv byte for byte.
mkdir -p /logs/verifier
if cmp -s /output/summary.csv /tests/expected_summary.csv; then
  echo 1 > /logs/verifier/reward.txt
else
  diff /tests/expected_summary.csv /output/summary.csv
  echo 0 > /logs/verifier/reward.txt
fi
