import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

HOOK = Path("/app/.git/hooks/pre-commit")
ENV = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"}


class HookTest(unittest.TestCase):
    def setUp(self):
        self.assertTrue(HOOK.is_file() and os.access(HOOK, os.X_OK), "no executable /app/.git/hooks/pre-commit")
        self.repo = Path(tempfile.mkdtemp(prefix="hooktest-"))
        self.git("init", "-q", "-b", "main")
        shutil.copy(HOOK, self.repo / ".git" / "hooks" / "pre-commit")
        os.chmod(self.repo / ".git" / "hooks" / "pre-commit", 0o755)

    def tearDown(self):
        shutil.rmtree(self.repo, ignore_errors=True)

    def git(self, *args, check=True):
        out = subprocess.run(["git", *args], cwd=self.repo, env=ENV, capture_output=True, text=True, timeout=60)
        if check and out.returncode:
            raise AssertionError(f"git {args}: {out.stderr}")
        return out

    def write(self, name, content):
        path = self.repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())

    def commit(self, *names, message="c"):
        if names:
            self.git("add", "--", *names)
        return self.git("commit", "-q", "-m", message, check=False)

    def assertAccepted(self, out):
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "")

    def assertRejected(self, out, *paths):
        self.assertNotEqual(out.returncode, 0, "the commit went through")
        for path in paths:
            self.assertTrue(any(line.startswith(path) or f" {path}" in line or f"'{path}'" in line or f'"{path}"' in line
                                for line in out.stderr.splitlines()), f"{path!r} not named in: {out.stderr!r}")

    def test_first_commit_clean(self):
        self.write("a.py", "x = 1\n")
        self.write("notes/readme.md", "trailing   \n")
        self.assertAccepted(self.commit("a.py", "notes/readme.md"))

    def test_marker_and_spaces_in_paths(self):
        self.write("ok.txt", "fine\n")
        self.assertAccepted(self.commit("ok.txt"))
        self.write("my notes.txt", "todo\nDO NOT COMMIT\n")
        self.write("src/x.js", "// DO NOT COMMIT: debug\n")
        out = self.commit("my notes.txt", "src/x.js")
        self.assertRejected(out, "my notes.txt", "src/x.js")
        self.assertEqual(self.git("rev-list", "--count", "HEAD").stdout.strip(), "1")

    def test_trailing_whitespace_only_in_python(self):
        self.write("mod.py", "def f():\n    return 1 \n")
        self.write("doc.md", "text \t\n")
        out = self.commit("mod.py", "doc.md")
        self.assertRejected(out, "mod.py")
        self.assertNotIn("doc.md", out.stderr)
        self.write("mod.py", "def f():\n\treturn 1\n")
        self.assertAccepted(self.commit("mod.py", "doc.md"))

    def test_staged_content_is_what_counts(self):
        self.write("a.py", "x = 1\n")
        self.git("add", "a.py")
        self.write("a.py", "x = 1  # DO NOT COMMIT\n")  # only in the working tree
        self.assertAccepted(self.commit())
        self.write("b.txt", "DO NOT COMMIT\n")
        self.git("add", "b.txt")
        self.write("b.txt", "clean now\n")  # fixed, but not staged
        self.assertRejected(self.commit(), "b.txt")

    def test_deletions_and_renames(self):
        self.write("legacy.txt", "DO NOT COMMIT\n")
        self.git("add", "legacy.txt")
        self.git("commit", "-q", "--no-verify", "-m", "legacy")
        self.git("rm", "-q", "legacy.txt")
        self.assertAccepted(self.commit())
        self.write("old name.py", "y = 2\n")
        self.assertAccepted(self.commit("old name.py"))
        self.git("mv", "old name.py", "new name.py")
        self.write("new name.py", "y = 2   \n")
        self.assertRejected(self.commit("new name.py"), "new name.py")

    def test_size_limit(self):
        self.write("exact.bin", b"a" * 1048576)
        self.assertAccepted(self.commit("exact.bin"))
        self.write("big.bin", b"a" * 1048577)
        self.assertRejected(self.commit("big.bin"), "big.bin")


if __name__ == "__main__":
    unittest.main()
