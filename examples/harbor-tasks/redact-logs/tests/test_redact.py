import difflib
import grp
import gzip
import os
import stat
import unittest
from pathlib import Path

LOGS = Path("/var/log/app")
EXPECTED = Path("/tests/expected")
MODES = {"app.log": 0o640, "app.log.1": 0o600, "app.log.2.gz": 0o640}


class RedactTest(unittest.TestCase):
    def check(self, got: str, name: str):
        want = (EXPECTED / name).read_text()
        if got != want:
            self.fail("".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "expected", name)))

    def test_files_and_metadata(self):
        self.assertEqual(sorted(os.listdir(LOGS)), sorted(MODES))
        adm = grp.getgrnam("adm").gr_gid
        for name, mode in MODES.items():
            st = os.stat(LOGS / name)
            self.assertEqual((oct(stat.S_IMODE(st.st_mode)), st.st_uid, st.st_gid), (oct(mode), 0, adm), name)

    def test_app_log(self):
        self.check((LOGS / "app.log").read_text(), "app.log")

    def test_app_log_1(self):
        self.check((LOGS / "app.log.1").read_text(), "app.log.1")

    def test_app_log_2_gz(self):
        with gzip.open(LOGS / "app.log.2.gz", "rt") as f:
            self.check(f.read(), "app.log.2")


if __name__ == "__main__":
    unittest.main()
