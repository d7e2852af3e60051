import sys
import unittest

sys.path.insert(0, "/tests")
from helpers import Ledger  # noqa: E402

EXPORT = (
    "\ufeffBuchungstag;Betrag;Verwendungszweck;Kategorie\n"
    "01.03.2024;1.234,56;  Gehalt   März ;Salary\n"
    "02.03.2024;-12,3;Markt;Food\n"
    "03.03.2024;5;Rückzahlung;\n"
    "02.03.2024;-12,3;Markt;Food\n"
    "04.03.2024;-1.000;Miete\tMärz;Rent Home\n"
)


class ImportTest(unittest.TestCase):
    def test_import_and_dedupe(self):
        led = Ledger()
        self.assertEqual(led.run("add", "2024-03-02", "-12.30", "food", "Markt").returncode, 0)
        path = led.dir / "export.csv"
        path.write_text(EXPORT, encoding="utf-8")
        out = led.run("import", str(path))
        self.assertEqual((out.returncode, out.stdout.strip()), (0, "imported 3, skipped 2"), out.stderr)
        self.assertEqual(led.rows()[1:], [["2024-03-02", "-12.30", "food", "Markt"], ["2024-03-01", "1234.56", "salary", "Gehalt März"],
                                          ["2024-03-03", "5.00", "uncategorized", "Rückzahlung"], ["2024-03-04", "-1000.00", "rent-home", "Miete März"]])
        again = led.run("import", str(path))
        self.assertEqual((again.returncode, again.stdout.strip()), (0, "imported 0, skipped 5"), again.stderr)
        report = led.run("report", "--month", "2024-03")
        self.assertEqual(report.stdout, "food\t-12.30\nrent-home\t-1000.00\nsalary\t1234.56\nuncategorized\t5.00\nTOTAL\t227.26\n")

    def test_columns_in_any_order_and_new_file(self):
        led = Ledger()
        path = led.dir / "other.csv"
        path.write_text("Kategorie;Verwendungszweck;Betrag;Buchungstag\nfun;Kino;-9,50;29.02.2024\n", encoding="utf-8")
        out = led.run("import", str(path))
        self.assertEqual((out.returncode, out.stdout.strip()), (0, "imported 1, skipped 0"), out.stderr)
        self.assertEqual(led.rows(), [["date", "amount", "category", "note"], ["2024-02-29", "-9.50", "fun", "Kino"]])

    def test_invalid_row_imports_nothing(self):
        led = Ledger()
        self.assertEqual(led.run("add", "2024-01-01", "1", "x").returncode, 0)
        before = led.file.read_bytes()
        for bad_row in ("31.02.2024;1,00;a;b", "01.02.2024;1,234;a;b", "2024-02-01;1,00;a;b", "01.02.2024;1,00;a;bad_cat"):
            with self.subTest(row=bad_row):
                path = led.dir / "bad.csv"
                path.write_text("Buchungstag;Betrag;Verwendungszweck;Kategorie\n01.02.2024;2,00;ok;ok\n" + bad_row + "\n", encoding="utf-8")
                out = led.run("import", str(path))
                self.assertEqual(out.returncode, 2)
                self.assertIn("3", out.stderr)
                self.assertEqual(led.file.read_bytes(), before)

    def test_earlier_commands(self):
        led = Ledger()
        self.assertEqual(led.run("add", "2024-01-01", "1.5", "X").returncode, 0)
        self.assertEqual(led.run("add", "2024-01-01", "1.555", "x").returncode, 2)
        self.assertEqual(led.run("report").stdout, "x\t1.50\nTOTAL\t1.50\n")


if __name__ == "__main__":
    unittest.main()
