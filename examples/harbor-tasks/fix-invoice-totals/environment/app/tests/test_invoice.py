import unittest
from decimal import Decimal

from invoicing import Invoice, format_money, to_cents


class MoneyTest(unittest.TestCase):
    def test_format(self):
        self.assertEqual(format_money("1234.5"), "EUR 1,234.50")

    def test_rounds_half_up(self):
        self.assertEqual(to_cents("2.675"), Decimal("2.68"))


class InvoiceTest(unittest.TestCase):
    def test_simple_invoice(self):
        invoice = Invoice(tax_rate="0.20")
        invoice.add("Widget", 2, "10.00")
        self.assertEqual(invoice.subtotal(), Decimal("20.00"))
        self.assertEqual(invoice.tax(), Decimal("4.00"))
        self.assertEqual(invoice.total(), Decimal("24.00"))


if __name__ == "__main__":
    unittest.main()
