import hashlib
import subprocess
import tarfile
import unittest
from pathlib import Path

NAME = "projects-20240315"
ARCHIVE = Path("/backups") / f"{NAME}.tar.gz"
FILES = sorted([
    "projects/api/package.json", "projects/api/src/handlers/users.js", "projects/api/src/index.js",
    "projects/notes/README.md", "projects/notes/meeting notes/2024-03-14 sync.md", "projects/scratch/keep.txt",
    "projects/tools/bin/build.sh", "projects/tools/node_modules.txt", "projects/tools/notes.tmp.md",
    "projects/web/.env", "projects/web/src/index.html",
], key=lambda s: s.encode())
DIRS_REQUIRED = {"projects/empty/inner"}


class BackupTest(unittest.TestCase):
    def members(self):
        with tarfile.open(ARCHIVE, "r:gz") as tar:
            return tar.getmembers()

    def test_archive_members(self):
        members = self.members()
        names = [m.name.rstrip("/") for m in members]
        for name in names:
            self.assertTrue(name == "projects" or name.startswith("projects/"), name)
        files = sorted((m.name for m in members if m.isfile()), key=lambda s: s.encode())
        self.assertEqual(files, FILES)
        dirs = {m.name.rstrip("/") for m in members if m.isdir()}
        self.assertTrue(DIRS_REQUIRED <= dirs, dirs)
        for bad in ("node_modules", ".cache"):
            self.assertFalse([n for n in names if bad in n.split("/")], bad)

    def test_contents_and_modes(self):
        with tarfile.open(ARCHIVE, "r:gz") as tar:
            for name in FILES:
                with self.subTest(name=name):
                    original = Path("/data") / name
                    self.assertEqual(tar.extractfile(name).read(), original.read_bytes())
                    self.assertEqual(tar.getmember(name).mode & 0o7777, original.stat().st_mode & 0o7777)
            self.assertEqual(tar.getmember("projects/tools/bin/build.sh").mode & 0o777, 0o755)
            self.assertEqual(tar.getmember("projects/web/.env").mode & 0o777, 0o600)

    def test_checksum_file(self):
        out = subprocess.run(["sha256sum", "-c", f"{NAME}.tar.gz.sha256"], cwd="/backups", capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        line = (Path("/backups") / f"{NAME}.tar.gz.sha256").read_text().split()
        self.assertEqual(line[0], hashlib.sha256(ARCHIVE.read_bytes()).hexdigest())

    def test_manifest(self):
        self.assertEqual((Path("/backups") / f"{NAME}.txt").read_text(), "".join(f + "\n" for f in FILES))

    def test_data_untouched(self):
        self.assertTrue(Path("/data/projects/api/node_modules/express/lib/index.js").is_file())
        self.assertTrue(Path("/data/projects/notes/todo.tmp").is_file())


if __name__ == "__main__":
    unittest.main()
