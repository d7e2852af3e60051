#!/bin/bash
# Reference solution: the five rules as Python regexes (a Luhn check on the card candidates), each file
# rewritten through a temporary file whose mode and owner are copied from the original.
set -euo pipefail
cat > /tmp/redact.py <<'PY'
import gzip
import os
import re
import shutil
import sys

def luhn(digits):
    total = 0
    for i, c in enumerate(reversed(digits)):
        n = int(c) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0

CARD = re.compile(r"(?<![0-9])(?:\d{16}|\d{4}( |-)\d{4}\1\d{4}\1\d{4})(?![0-9])")

def redact(line):
    line = re.sub(r"Bearer [A-Za-z0-9._~+/=-]+", "Bearer [REDACTED]", line)
    line = re.sub(r"(?<![A-Za-z0-9])AKIA[A-Z0-9]{16}(?![A-Za-z0-9])", "[AWS-KEY]", line)
    line = re.sub(r"(?i)(\b\w*(?:password|passwd|secret|api_key)=)(?:\"[^\"]*\"|[^&\s]*)", r"\1[REDACTED]", line)
    line = re.sub(r"([A-Za-z0-9._%+-])[A-Za-z0-9._%+-]*@([A-Za-z0-9.-]+\.[A-Za-z]{2,})", r"\1***@\2", line)
    return CARD.sub(lambda m: "[CARD]" if luhn(re.sub(r"\D", "", m.group(0))) else m.group(0), line)

for path in sys.argv[1:]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        text = "".join(redact(l) for l in f)
    tmp = path + ".redacting"
    with opener(tmp, "wt") as f:
        f.write(text)
    shutil.copymode(path, tmp)
    st = os.stat(path)
    os.chown(tmp, st.st_uid, st.st_gid)
    os.replace(tmp, path)
PY
python3 /tmp/redact.py /var/log/app/app.log /var/log/app/app.log.1 /var/log/app/app.log.2.gz
rm -f /tmp/redact.py
