#!/bin/bash
# Reference solution: one Python pass per source, grouped by normalised e-mail.
set -euo pipefail
mkdir -p /output
python3 - <<'PY'
import csv
import json
import re
from datetime import datetime

def norm(email):
    return (email or "").strip().lower()

def valid(email):
    if email.count("@") != 1 or re.search(r"[\s,]", email):
        return False
    local, domain = email.split("@")
    return bool(local) and "." in domain and bool(domain)

def instant(ts):
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))

rejected = 0
crm, news = {}, {}
for rec in json.load(open("/data/crm.json")):
    email = norm(rec.get("email"))
    if not valid(email):
        rejected += 1
        continue
    crm.setdefault(email, []).append(rec)
with open("/data/newsletter.csv", newline="") as f:
    for row in csv.DictReader(f):
        email = norm(row["email"])
        if not valid(email):
            rejected += 1
            continue
        news.setdefault(email, []).append(row)

TRUE, FALSE = {"yes", "y", "true", "1"}, {"no", "n", "false", "0"}
out = []
for email in sorted(set(crm) | set(news)):
    latest = max(crm[email], key=lambda r: instant(r["updated_at"])) if email in crm else None
    row = max(news[email], key=lambda r: r["signup_date"].strip()) if email in news else None
    name = (latest or {}).get("name") or None
    if not name and row:
        name = " ".join([row["first_name"].strip(), row["last_name"].strip()]).strip() or None
    phone = re.sub(r"[\s\-.()]", "", (latest or {}).get("phone") or "")
    if phone.startswith("00"):
        phone = "+" + phone[2:]
    subscribed = None
    if row:
        flag = row["subscribed"].strip().lower()
        subscribed = True if flag in TRUE else False if flag in FALSE else None
    tags = sorted({t.strip().lower() for r in crm.get(email, []) for t in r.get("tags") or [] if t.strip()})
    sources = [s for s, d in (("crm", crm), ("newsletter", news)) if email in d]
    out.append({"email": email, "name": name, "phone": phone or None, "subscribed": subscribed, "tags": tags, "sources": sources})
json.dump(out, open("/output/contacts.json", "w"), indent=2)
open("/output/rejected.txt", "w").write(f"{rejected}\n")
PY
