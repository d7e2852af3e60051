#!/bin/bash
# Reference solution: curl through the pages, Python for the report, curl to post it.
set -euo pipefail
cd /app
python3 - <<'PY'
import json
import os
import urllib.request

base, token = os.environ["INVENTORY_URL"], os.environ["INVENTORY_TOKEN"]


def call(path, body=None):
    req = urllib.request.Request(base + path, data=body, headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


items, path = [], "/items?page=1"
while path:
    page = call(path)
    items += page["items"]
    path = page["next"]
low = sorted(({"sku": i["sku"], "warehouse": i["warehouse"], "missing": i["reorder_level"] - i["quantity"]}
              for i in items if i["quantity"] < i["reorder_level"]), key=lambda x: (x["warehouse"], x["sku"]))
by_warehouse = {}
for entry in low:
    by_warehouse[entry["warehouse"]] = by_warehouse.get(entry["warehouse"], 0) + entry["missing"]
report = {"items_checked": len(items), "low_stock": low, "missing_by_warehouse": by_warehouse}
with open("/app/report.json", "w") as f:
    json.dump(report, f, indent=2)
print(call("/reports", json.dumps(report).encode()))
PY
