#!/bin/bash
# Hidden checks for kv-http-service: the service the agent left running, over HTTP, and its file.
mkdir -p /logs/verifier
url=${KV_URL:-http://127.0.0.1:8080}
if [ "$(curl -s --max-time 10 "$url/health")" != "ok" ]; then
  echo "nothing answers ok on $url/health"
  echo 0 > /logs/verifier/reward.txt
  exit 0
fi
if python3 /tests/test_kv.py -v; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
