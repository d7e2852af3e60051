#!/bin/bash
# Hidden checks for ini-to-env: the file byte for byte, then what `sh` reads from it.
mkdir -p /logs/verifier
ok=1
if ! cmp -s /etc/app/app.env /tests/expected.env; then
  echo "app.env differs from the expected file:"; diff /tests/expected.env /etc/app/app.env
  ok=0
fi
got=$(env -i sh -c 'set -a; . /etc/app/app.env; printf "%s|%s|%s" "$GREETING" "$DATABASE_PASSWORD" "$FEATURE_FLAGS_BANNER_TEXT"' 2>&1)
want="it's fine|p@ss word #1|Summer  sale: 20% off!"
[ "$got" = "$want" ] || { echo "sourced values: $got"; ok=0; }
echo $ok > /logs/verifier/reward.txt
