import re
import subprocess
import sys
import unittest
from pathlib import Path

APP = Path("/app")
VENDOR = APP / "vendor" / "theme.min.css"


def build():
    return subprocess.run([sys.executable, "build.py"], cwd=APP, capture_output=True, text=True, timeout=90)


class OfflineBuildTest(unittest.TestCase):
    def test_1_build_offline(self):
        subprocess.run(["rm", "-rf", str(APP / "site")], check=True)
        out = build()
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])
        for page in ("index.html", "guide.html"):
            with self.subTest(page=page):
                self.assertEqual((APP / "site" / page).read_text(), (Path("/tests/expected") / page).read_text())
        self.assertEqual((APP / "site" / "assets" / "theme.min.css").read_bytes(), VENDOR.read_bytes())
        for page in (APP / "site").glob("*.html"):
            tags = re.findall(r"<(?:link|script)[^>]*>", page.read_text())
            self.assertFalse([t for t in tags if "http://" in t or "https://" in t], page)

    def test_2_missing_vendor_file_fails(self):
        aside = VENDOR.with_name("theme.min.css.aside")
        VENDOR.rename(aside)
        try:
            self.assertNotEqual(build().returncode, 0)
        finally:
            aside.rename(VENDOR)

    def test_3_committed(self):
        git = lambda *a: subprocess.run(["git", "-C", str(APP), *a], capture_output=True, text=True, check=True).stdout
        self.assertEqual(git("status", "--porcelain").strip(), "")
        self.assertGreaterEqual(int(git("rev-list", "--count", "HEAD").strip()), 2)
        self.assertIn("build.py", git("diff", "--name-only", "HEAD~1", "HEAD"))


if __name__ == "__main__":
    unittest.main()
