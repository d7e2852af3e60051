#!/bin/bash
# Reference solution: Python's csv module (utf-8-sig drops the BOM) and Decimal for the money.
set -euo pipefail
mkdir -p /output
python3 - <<'PY'
import csv
import glob
from collections import defaultdict
from decimal import Decimal

orders = defaultdict(set)
units = defaultdict(int)
revenue = defaultdict(Decimal)
for path in sorted(glob.glob("/data/sales/*.csv")):
    with open(path, newline="", encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            if row["status"].strip().lower() == "cancelled":
                continue
            date = row["order_date"].strip()
            month = date[:7] if date[4] == "-" else f"{date[6:10]}-{date[3:5]}"
            key = (row["region"].strip().lower(), month)
            qty = int(row["quantity"])
            price = Decimal(row["unit_price"].strip().lstrip("$").replace(",", ""))
            orders[key].add(row["order_id"].strip())
            units[key] += qty
            revenue[key] += qty * price
with open("/output/summary.csv", "w", newline="") as out:
    out.write("region,month,orders,units,revenue\n")
    for key in sorted(orders):
        out.write(f"{key[0]},{key[1]},{len(orders[key])},{units[key]},{revenue[key].quantize(Decimal('0.01'))}\n")
PY
