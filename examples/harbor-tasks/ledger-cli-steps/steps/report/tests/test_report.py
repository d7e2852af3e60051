import sys
import unittest

sys.path.insert(0, "/tests")
from helpers import Ledger  # noqa: E402


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.led = Ledger()
        for args in (["2024-01-05", "100", "salary"], ["2024-01-06", "-12.30", "food", "market"], ["2024-01-20", "-7.70", "food"],
                     ["2024-02-01", "-50", "rent"], ["2024-02-02", "0.10", "Food"], ["2024-02-03", "-0.10", "food"],
                     ["2023-12-31", "-1.01", "b-cat"], ["2024-01-31", "2.5", "B-cat"]):
            self.assertEqual(self.led.run("add", *args).returncode, 0)

    def report(self, *args):
        out = self.led.run("report", *args)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def test_all_time(self):
        self.assertEqual(self.report(), "b-cat\t1.49\nfood\t-20.00\nrent\t-50.00\nsalary\t100.00\nTOTAL\t31.49\n")

    def test_month(self):
        self.assertEqual(self.report("--month", "2024-01"), "b-cat\t2.50\nfood\t-20.00\nsalary\t100.00\nTOTAL\t82.50\n")
        self.assertEqual(self.report("--month", "2024-02"), "food\t0.00\nrent\t-50.00\nTOTAL\t-50.00\n")
        self.assertEqual(self.report("--month", "2022-06"), "TOTAL\t0.00\n")

    def test_invalid_month(self):
        for bad in ("2024-13", "2024-1", "January"):
            out = self.led.run("report", "--month", bad)
            self.assertEqual(out.returncode, 2, bad)
            self.assertTrue(out.stderr.strip())

    def test_missing_ledger(self):
        empty = Ledger()
        out = empty.run("report")
        self.assertEqual((out.returncode, out.stdout), (0, "TOTAL\t0.00\n"), out.stderr)

    def test_add_still_validates(self):
        self.assertEqual(self.led.run("add", "2024-02-30", "1", "x").returncode, 2)


if __name__ == "__main__":
    unittest.main()
