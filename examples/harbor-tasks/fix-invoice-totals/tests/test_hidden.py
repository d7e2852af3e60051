import hashlib
import subprocess
import sys
import unittest
from decimal import Decimal
from pathlib import Path

APP = Path("/app")
ORIGINAL_TESTS_SHA256 = "4adc7a43694ab70dd41393cbac4d89e1db8dad346b6acb2fefd828554f0dd370"
sys.path.insert(0, str(APP))


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(APP), *args], capture_output=True, text=True, check=True).stdout


class RepositoryTest(unittest.TestCase):
    def test_existing_suite_passes(self):
        out = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=APP, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])

    def test_visible_tests_unchanged(self):
        digest = hashlib.sha256((APP / "tests" / "test_invoice.py").read_bytes()).hexdigest()
        self.assertEqual(digest, ORIGINAL_TESTS_SHA256)

    def test_fix_is_committed_by_the_release_bot(self):
        self.assertEqual(git("rev-parse", "--abbrev-ref", "HEAD").strip(), "main")
        self.assertEqual(git("status", "--porcelain").strip(), "", "the working tree is not clean")
        root = git("rev-list", "--max-parents=0", "HEAD").split()
        self.assertEqual(len(root), 1, "history rewritten")
        new = [a for a in git("log", "--format=%an <%ae>", f"{root[0]}..HEAD").split("\n") if a]
        self.assertTrue(new, "no commit on top of the original one")
        self.assertEqual(set(new), {"Release Bot <release-bot@example.com>"})
        self.assertIn("Invoicing library", git("log", "--format=%s"))  # history kept, not rewritten
        changed = git("diff", "--name-only", "HEAD~%d" % len(new), "HEAD").split()
        self.assertTrue(any(name.startswith("invoicing/") for name in changed), changed)


class MoneyTest(unittest.TestCase):
    def setUp(self):
        from invoicing import Invoice, to_cents
        self.Invoice, self.to_cents = Invoice, to_cents

    def test_half_up_cases(self):
        for raw, want in [("2.665", "2.67"), ("1.005", "1.01"), ("0.105", "0.11"), ("0.125", "0.13"), ("10", "10.00")]:
            with self.subTest(raw=raw):
                got = self.to_cents(raw)
                self.assertIsInstance(got, Decimal)
                self.assertEqual(str(got), want)

    def test_line_totals(self):
        inv = self.Invoice()
        cases = [((1, "19.99", 15), "16.99"), ((3, "33.33", 10), "89.99"), ((1, "0.50", 1), "0.50"), ((7, "0.125", 0), "0.88"), ((3, "0.335", 0), "1.01")]
        for (qty, price, disc), want in cases:
            with self.subTest(qty=qty, price=price, disc=disc):
                self.assertEqual(str(inv.add("x", qty, price, disc).total()), want)

    def test_tax_is_rounded_once_on_the_subtotal(self):
        inv = self.Invoice(tax_rate="0.10")
        for _ in range(3):
            inv.add("stamp", 1, "0.05")
        self.assertEqual(str(inv.subtotal()), "0.15")
        self.assertEqual(str(inv.tax()), "0.02")
        self.assertEqual(str(inv.total()), "0.17")

    def test_large_invoice_does_not_drift(self):
        inv = self.Invoice(tax_rate="0.19")
        for _ in range(1000):
            inv.add("bolt", 1, "0.105")
        self.assertEqual((str(inv.subtotal()), str(inv.tax()), str(inv.total())), ("110.00", "20.90", "130.90"))

    def test_mixed_invoice(self):
        inv = self.Invoice(tax_rate="0.21")
        inv.add("Cable", 2, "19.99")
        inv.add("Adapter", 3, "4.165")
        inv.add("Switch", 1, "249.00", 12)
        inv.add("Screws", 12, "0.335", 5)
        self.assertEqual([str(line.total()) for line in inv.lines], ["39.98", "12.50", "219.12", "3.82"])
        self.assertEqual((str(inv.subtotal()), str(inv.tax()), str(inv.total())), ("275.42", "57.84", "333.26"))
        self.assertIn("EUR 333.26", inv.render())


if __name__ == "__main__":
    unittest.main()
