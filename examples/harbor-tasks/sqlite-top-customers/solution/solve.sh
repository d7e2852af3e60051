#!/bin/bash
# Reference solution: SQLite's date functions convert offsets to UTC; refunds summed per order first.
set -euo pipefail
mkdir -p /output
cat > /output/query.sql <<'SQL'
WITH refunded AS (
  SELECT order_id, SUM(amount_cents) AS cents FROM refunds GROUP BY order_id
), counted AS (
  SELECT o.customer_id, o.total_cents - COALESCE(r.cents, 0) AS net
  FROM orders o LEFT JOIN refunded r ON r.order_id = o.id
  WHERE o.status IN ('paid', 'shipped') AND strftime('%Y', o.ordered_at) = '2023'
)
SELECT c.id AS customer_id, c.name, c.country, COUNT(*) AS orders, printf('%.2f', SUM(counted.net) / 100.0) AS net_revenue
FROM counted JOIN customers c ON c.id = counted.customer_id
GROUP BY c.id
ORDER BY SUM(counted.net) DESC, c.id
LIMIT 5;
SQL
python3 - <<'PY'
import sqlite3
con = sqlite3.connect("file:/data/shop.db?mode=ro", uri=True)
rows = con.execute(open("/output/query.sql").read()).fetchall()
with open("/output/top_customers.csv", "w") as f:
    f.write("customer_id,name,country,orders,net_revenue\n")
    for row in rows:
        f.write(",".join(str(v) for v in row) + "\n")
PY
