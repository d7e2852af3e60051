import csv
import hashlib
import sqlite3
import unittest
from decimal import Decimal
from pathlib import Path

EXPECTED = Path("/tests/expected_top_customers.csv")


class TopCustomersTest(unittest.TestCase):
    def test_csv(self):
        self.assertEqual(Path("/output/top_customers.csv").read_text(), EXPECTED.read_text())

    def test_query(self):
        sql = Path("/output/query.sql").read_text().strip().rstrip(";").strip()
        self.assertTrue(sql.lower().lstrip("( \n").startswith(("select", "with")), "not a SELECT statement")
        con = sqlite3.connect("file:/data/shop.db?mode=ro", uri=True)
        rows = con.execute(sql).fetchall()
        want = list(csv.reader(EXPECTED.open()))[1:]
        self.assertEqual(len(rows), 5)
        for got, exp in zip(rows, want):
            self.assertEqual(len(got), 5)
            self.assertEqual([str(got[0]), str(got[1]), str(got[2]), str(got[3])], exp[:4])
            self.assertEqual(Decimal(str(got[4])).quantize(Decimal("0.01")), Decimal(exp[4]))

    def test_database_unchanged(self):
        digest = hashlib.sha256(Path("/data/shop.db").read_bytes()).hexdigest()
        self.assertEqual(digest, Path("/var/lib/shop.db.sha256").read_text().split()[0])


if __name__ == "__main__":
    unittest.main()
