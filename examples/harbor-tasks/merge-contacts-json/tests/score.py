import json
from pathlib import Path

want = json.loads(Path("/tests/expected_contacts.json").read_text())
try:
    got = json.loads(Path("/output/contacts.json").read_text())
    if not isinstance(got, list) or not all(isinstance(c, dict) for c in got):
        got = []
except (OSError, ValueError):
    got = []
emails = [c.get("email") for c in got] == [c["email"] for c in want]
fields = emails and all(g == w for g, w in zip(got, want))
try:
    rejected = Path("/output/rejected.txt").read_text().strip() == "4"
except OSError:
    rejected = False
print(json.dumps({"reward": int(emails and fields and rejected), "emails": int(emails), "fields": int(fields), "rejected": int(rejected)}))
