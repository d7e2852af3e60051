#!/bin/bash
# Reference fix: Decimal arithmetic with ROUND_HALF_UP, tax rounded once on the subtotal.
# The commit's author comes from [solution] env (GIT_AUTHOR_NAME/EMAIL, GIT_COMMITTER_NAME/EMAIL).
set -euo pipefail
cd /app
cat > invoicing/money.py <<'PY'
"""Money helpers: rounding to the cent and formatting."""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def to_cents(value) -> Decimal:
    """Round an amount (a decimal string, int or Decimal) half up to the cent."""
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


def format_money(value, currency: str = "EUR") -> str:
    """'1234.5' -> 'EUR 1,234.50'."""
    amount = to_cents(value)
    sign = "-" if amount < 0 else ""
    return f"{sign}{currency} {abs(amount):,.2f}"
PY
python3 - <<'PY'
from pathlib import Path
p = Path("invoicing/invoice.py")
s = p.read_text()
s = s.replace(
    "        gross = float(self.unit_price) * self.quantity\n        return to_cents(gross - gross * self.discount_pct / 100)",
    "        gross = Decimal(self.unit_price) * self.quantity\n        return to_cents(gross - gross * Decimal(self.discount_pct) / 100)",
)
s = s.replace(
    "        return sum((to_cents(float(line.total()) * float(self.tax_rate)) for line in self.lines), Decimal(\"0.00\"))",
    "        return to_cents(self.subtotal() * Decimal(self.tax_rate))",
)
p.write_text(s)
PY
PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s tests
git add invoicing
git commit -q -m "Round money half up with Decimal; tax once on the subtotal"
