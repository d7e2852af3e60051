"""Invoices made of lines."""

from dataclasses import dataclass, field
from decimal import Decimal

from .money import format_money, to_cents


@dataclass
class Line:
    description: str
    quantity: int
    unit_price: str
    discount_pct: int = 0

    def total(self) -> Decimal:
        gross = float(self.unit_price) * self.quantity
        return to_cents(gross - gross * self.discount_pct / 100)


@dataclass
class Invoice:
    tax_rate: str = "0"
    lines: list[Line] = field(default_factory=list)

    def add(self, description: str, quantity: int, unit_price: str, discount_pct: int = 0) -> Line:
        line = Line(description, quantity, unit_price, discount_pct)
        self.lines.append(line)
        return line

    def subtotal(self) -> Decimal:
        return sum((line.total() for line in self.lines), Decimal("0.00"))

    def tax(self) -> Decimal:
        return sum((to_cents(float(line.total()) * float(self.tax_rate)) for line in self.lines), Decimal("0.00"))

    def total(self) -> Decimal:
        return self.subtotal() + self.tax()

    def render(self) -> str:
        rows = [f"{line.description:<30}{line.quantity:>5} x {line.unit_price:>10}{format_money(line.total()):>16}" for line in self.lines]
        rows.append(f"{'Subtotal':<50}{format_money(self.subtotal()):>16}")
        rows.append(f"{'Tax':<50}{format_money(self.tax()):>16}")
        rows.append(f"{'Total':<50}{format_money(self.total()):>16}")
        return "\n".join(rows)
