#!/bin/bash
# Hidden checks for fix-duration-js: the project's own tests, unchanged, and hidden node:test cases.
mkdir -p /logs/verifier
ok=1
cd /app || ok=0
[ "$(sha256sum test/duration.test.js | cut -d' ' -f1)" = "1a37142e8c61fa7a633f5b15d0e8f2c5712cf9ae4570612e6b9fedef46581067" ] || { echo "existing tests were changed"; ok=0; }
node --test test/duration.test.js || ok=0
node --test /tests/hidden.test.js || ok=0
echo $ok > /logs/verifier/reward.txt
