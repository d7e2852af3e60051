import subprocess
import sys
import unittest
from pathlib import Path

APP = "/app"
BAD_SUBJECT = "stats: speed up median"


def git(*args):
    return subprocess.run(["git", "-C", APP, *args], capture_output=True, text=True, check=True).stdout.strip()


def patch_id(a, b):
    diff = subprocess.run(["git", "-C", APP, "diff", a, b], capture_output=True, check=True).stdout
    out = subprocess.run(["git", "-C", APP, "patch-id", "--stable"], input=diff, capture_output=True, check=True).stdout.split()
    return out[0].decode() if out else None


class BisectTest(unittest.TestCase):
    def bad_commit(self):
        lines = [l.split(" ", 1) for l in git("log", "--format=%H %s", "v1.3.0").splitlines()]
        found = [h for h, s in lines if s == BAD_SUBJECT]
        self.assertEqual(len(found), 1)
        return found[0]

    def test_answer_names_the_first_bad_commit(self):
        answer = Path("/root/first-bad-commit").read_text().strip()
        self.assertEqual(answer, self.bad_commit())

    def test_one_revert_on_top_of_the_release(self):
        self.assertEqual(git("rev-parse", "--abbrev-ref", "HEAD"), "main")
        self.assertEqual(git("rev-parse", "HEAD~1"), git("rev-parse", "v1.3.0^{commit}"), "not exactly one commit on top of v1.3.0")
        self.assertEqual(git("status", "--porcelain"), "")
        bad = self.bad_commit()
        # the new commit's change is exactly the bad commit's change, reversed (same patch-id: line numbers aside)
        self.assertEqual(patch_id("HEAD", "HEAD~1"), patch_id(f"{bad}~1", bad))

    def test_median_fixed_and_later_changes_kept(self):
        code = ("import stats; assert stats.median([1, 2, 3, 4]) == 2.5; assert stats.median([5, 1, 3]) == 3;"
                "assert stats.mode([1, 2, 2]) == 2; assert stats.spread([4, 9, 1]) == 8; assert stats.total([1, 2]) == 3")
        out = subprocess.run([sys.executable, "-c", code], cwd=APP, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)


if __name__ == "__main__":
    unittest.main()
