import unittest

from pkgtools.versions import compare, latest, parse, sort_versions


class VersionsTest(unittest.TestCase):
    def test_parse(self):
        v = parse("v1.2.3-rc.1+build.5")
        self.assertEqual(str(v), "1.2.3-rc.1+build.5")
        with self.assertRaises(ValueError):
            parse("1.2")

    def test_numeric_order(self):
        self.assertEqual(sort_versions(["1.10.0", "1.9.0", "1.2.0"]), ["1.2.0", "1.9.0", "1.10.0"])

    def test_release_beats_release_candidate(self):
        self.assertEqual(compare("1.0.0-rc.1", "1.0.0"), -1)
        self.assertEqual(latest(["1.0.0", "1.1.0-rc.1"]), "1.0.0")


if __name__ == "__main__":
    unittest.main()
