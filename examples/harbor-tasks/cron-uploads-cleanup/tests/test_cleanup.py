import os
import re
import shutil
import stat
import subprocess
import time
import unittest
from pathlib import Path

ROOT = Path("/srv/uploads")
SCRIPT = Path("/usr/local/bin/cleanup-uploads")
LOG = Path("/var/log/cleanup-uploads.log")
CRON = Path("/etc/cron.d/cleanup-uploads")
DAY = 86400


def make_fixture() -> dict[str, int]:
    """Fresh /srv/uploads: name -> age in days."""
    for child in ROOT.iterdir():
        shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    (ROOT / ".keep").write_text("# keep these\n  terms.pdf  \n\nlogo.svg\n#old.bin\n")
    files = {
        "a/old.bin": 40, "a/new.bin": 3, "a/b/c/deep old.txt": 90, "with space/report 2020.pdf": 45,
        "terms.pdf": 400, "x/terms.pdf": 400, "logo.svg": 50, "old.bin": 20, "recent/fresh.txt": 1,
        "mid/eleven.txt": 25, "emptyish/only.tmp": 35,
    }
    now = time.time()
    for name, age in files.items():
        path = ROOT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)
        os.utime(path, (now - age * DAY, now - age * DAY))
    (ROOT / "already-empty").mkdir()
    os.symlink("/etc/hostname", ROOT / "link-to-host")
    os.utime(ROOT / "link-to-host", (now - 99 * DAY, now - 99 * DAY), follow_symlinks=False)
    os.utime(ROOT / ".keep", (now - 500 * DAY, now - 500 * DAY))
    subprocess.run(["chown", "-R", "-h", "www-data:www-data", str(ROOT)], check=True)
    return files


def as_www_data(command: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["setpriv", "--reuid=www-data", "--regid=www-data", "--init-groups", "/bin/sh", "-c", command],
                          env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/var/www", **env},
                          capture_output=True, text=True, timeout=60, cwd="/")


def remaining() -> set[str]:
    return {str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() or p.is_symlink()}


def log_lines() -> list[str]:
    return LOG.read_text().splitlines() if LOG.exists() else []


class CleanupTest(unittest.TestCase):
    def test_1_script_with_retention_ten_days(self):
        self.assertTrue(SCRIPT.is_file() and os.access(SCRIPT, os.X_OK), "script missing or not executable")
        make_fixture()
        before = log_lines()
        out = as_www_data(str(SCRIPT), {"RETENTION_DAYS": "10"})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(remaining(), {".keep", "a/new.bin", "terms.pdf", "x/terms.pdf", "logo.svg", "recent/fresh.txt", "link-to-host"})
        self.assertTrue(os.path.islink(ROOT / "link-to-host"))
        dirs = {str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_dir()}
        self.assertEqual(dirs, {"a", "x", "recent"})
        new_lines = log_lines()[len(before):]
        want = {f"deleted {ROOT / n}" for n in ["a/old.bin", "a/b/c/deep old.txt", "with space/report 2020.pdf", "old.bin", "mid/eleven.txt", "emptyish/only.tmp"]}
        self.assertEqual(sorted(new_lines), sorted(want))

    def test_2_default_retention_is_fourteen_days(self):
        make_fixture()
        out = as_www_data(str(SCRIPT), {})
        self.assertEqual(out.returncode, 0, out.stderr)
        left = remaining()
        self.assertIn("a/new.bin", left)
        self.assertNotIn("old.bin", left)  # 20 days
        self.assertNotIn("a/old.bin", left)

    def test_3_cron_file(self):
        st = CRON.stat()
        self.assertEqual(st.st_uid, 0, "cron.d files must belong to root")
        self.assertFalse(st.st_mode & (stat.S_IWGRP | stat.S_IWOTH), "cron ignores group/world-writable files")
        text = CRON.read_text()
        self.assertTrue(text.endswith("\n"))
        env, jobs = {}, []
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$", line)  # a variable line (job lines start with a time field)
            if m:
                env[m.group(1)] = m.group(2).strip().strip("'\"")
                continue
            jobs.append(line.split(None, 6))
        self.assertEqual(len(jobs), 1, jobs)
        minute, hour, dom, month, dow, user, command = jobs[0]
        self.assertEqual((int(minute), int(hour), dom, month, dow), (15, 3, "*", "*", "*"))
        self.assertEqual(user, "www-data")
        self.assertIn("cleanup-uploads", command)
        # run the job's command the way cron would: sh -c, as www-data, with the file's variables
        make_fixture()
        out = as_www_data(command, {"SHELL": "/bin/sh", **env})
        self.assertEqual(out.returncode, 0, out.stderr)
        left = remaining()
        self.assertIn("mid/eleven.txt", left)  # 25 days: kept with 30
        self.assertIn("old.bin", left)  # 20 days
        self.assertNotIn("a/old.bin", left)  # 40 days
        self.assertNotIn("emptyish/only.tmp", left)  # 35 days


if __name__ == "__main__":
    unittest.main()
