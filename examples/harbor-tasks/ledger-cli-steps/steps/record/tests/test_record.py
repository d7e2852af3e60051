import sys
import unittest

sys.path.insert(0, "/tests")
from helpers import Ledger  # noqa: E402


class RecordTest(unittest.TestCase):
    def test_add_creates_and_appends(self):
        led = Ledger()
        for args in (["2024-01-31", "12", "Food", "lunch", "with", "Sam"], ["2024-02-29", "-3.5", "rent"],
                     ["2024-03-01", "+0.99", "APPS-2", 'say "hi", ok']):
            out = led.run("add", *args)
            self.assertEqual((out.returncode, out.stdout), (0, ""), out.stderr)
        self.assertEqual(led.rows(), [["date", "amount", "category", "note"], ["2024-01-31", "12.00", "food", "lunch with Sam"],
                                      ["2024-02-29", "-3.50", "rent", ""], ["2024-03-01", "0.99", "apps-2", 'say "hi", ok']])
        raw = led.file.read_text()
        self.assertIn('"say ""hi"", ok"', raw)

    def test_invalid_arguments(self):
        led = Ledger()
        self.assertEqual(led.run("add", "2024-01-01", "1", "x").returncode, 0)
        before = led.file.read_bytes()
        for args in (["2023-02-29", "1", "x"], ["2024-13-01", "1", "x"], ["24-01-01", "1", "x"], ["2024-01-01", "1.234", "x"],
                     ["2024-01-01", "abc", "x"], ["2024-01-01", "1", "bad cat"], ["2024-01-01", "1", "x_y"], ["2024-01-01", "1"], []):
            with self.subTest(args=args):
                out = led.run("add", *args)
                self.assertEqual(out.returncode, 2, out.stdout + out.stderr)
                self.assertTrue(out.stderr.strip())
        self.assertEqual(led.file.read_bytes(), before)

    def test_default_file(self):
        import os
        import subprocess
        env = {k: v for k, v in os.environ.items() if k != "LEDGER_FILE"}
        had = os.path.exists("/app/ledger.csv")
        keep = open("/app/ledger.csv", "rb").read() if had else None
        try:
            if had:
                os.remove("/app/ledger.csv")
            out = subprocess.run([sys.executable, "/app/ledger.py", "add", "2024-05-05", "5", "misc"], env=env, capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(open("/app/ledger.csv").read().splitlines(), ["date,amount,category,note", "2024-05-05,5.00,misc,"])
        finally:
            if had:
                open("/app/ledger.csv", "wb").write(keep)
            elif os.path.exists("/app/ledger.csv"):
                os.remove("/app/ledger.csv")


if __name__ == "__main__":
    unittest.main()
