"""Money helpers: rounding to the cent and formatting."""

from decimal import Decimal


def to_cents(value) -> Decimal:
    """Round an amount to the cent."""
    return Decimal(str(round(float(value), 2))).quantize(Decimal("0.01"))


def format_money(value, currency: str = "EUR") -> str:
    """'1234.5' -> 'EUR 1,234.50'."""
    amount = to_cents(value)
    sign = "-" if amount < 0 else ""
    return f"{sign}{currency} {abs(amount):,.2f}"
