from .invoice import Invoice, Line
from .money import format_money, to_cents

__all__ = ["Invoice", "Line", "format_money", "to_cents"]
