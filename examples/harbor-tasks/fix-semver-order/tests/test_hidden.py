import hashlib
import random
import subprocess
import sys
import unittest
from pathlib import Path

APP = Path("/app")
sys.path.insert(0, str(APP))
ORIGINAL_TESTS_SHA256 = "3363405656b7d4750c890cd18aa65a05ac8d6a26688d4ddabe111d9d6144134f"

# semver.org section 11's own example, lowest first
SPEC_ORDER = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"]


class HiddenTest(unittest.TestCase):
    def setUp(self):
        from pkgtools import versions
        self.v = versions

    def test_existing_suite_passes_and_is_unchanged(self):
        out = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=APP, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])
        self.assertEqual(hashlib.sha256((APP / "tests" / "test_versions.py").read_bytes()).hexdigest(), ORIGINAL_TESTS_SHA256)

    def test_spec_example_order(self):
        shuffled = SPEC_ORDER[:]
        random.Random(7).shuffle(shuffled)
        self.assertEqual(self.v.sort_versions(shuffled), SPEC_ORDER)
        for low, high in zip(SPEC_ORDER, SPEC_ORDER[1:]):
            with self.subTest(low=low, high=high):
                self.assertEqual(self.v.compare(low, high), -1)
                self.assertEqual(self.v.compare(high, low), 1)

    def test_numeric_fields(self):
        self.assertEqual(self.v.sort_versions(["2.0.0", "10.0.0", "1.0.0", "1.0.10", "1.0.9", "1.10.0", "1.2.0"]),
                         ["1.0.0", "1.0.9", "1.0.10", "1.2.0", "1.10.0", "2.0.0", "10.0.0"])

    def test_numeric_identifiers_rank_below_alphanumeric(self):
        self.assertEqual(self.v.compare("1.0.0-2", "1.0.0-alpha"), -1)
        self.assertEqual(self.v.compare("1.0.0-rc.10", "1.0.0-rc.9"), 1)
        self.assertEqual(self.v.compare("1.0.0-RC.1", "1.0.0-rc.1"), -1)  # ASCII order

    def test_build_metadata_is_ignored(self):
        self.assertEqual(self.v.compare("1.0.0+20240101", "1.0.0+exp.sha.5114f85"), 0)
        self.assertEqual(self.v.compare("v1.0.0", "1.0.0+b1"), 0)
        self.assertEqual(self.v.sort_versions(["1.0.0+b", "1.0.0+a"]), ["1.0.0+b", "1.0.0+a"])  # stable

    def test_latest(self):
        releases = ["0.9.12", "1.0.0-rc.2", "0.10.0", "1.0.0-beta", "0.9.12+hotfix"]
        self.assertEqual(self.v.latest(releases), "0.10.0")
        self.assertEqual(self.v.latest(releases, allow_prerelease=True), "1.0.0-rc.2")
        self.assertIsNone(self.v.latest(["1.0.0-alpha"]))
        self.assertIsNone(self.v.latest([]))

    def test_invalid_versions_are_refused(self):
        for bad in ["1.2", "01.2.3", "1.2.3-", "1.2.3-01", "a.b.c", "1.2.3+"]:
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                self.v.parse(bad)


if __name__ == "__main__":
    unittest.main()
