import grp
import hashlib
import os
import pwd
import stat
import unittest
from pathlib import Path

SITE = Path("/srv/site")
# content digests of the deployed files as built (nothing may change, move or disappear)
EXPECTED_FILES = {
    "VERSION": "v2\n", "bin/deploy": '#!/bin/sh\necho deploying "$1"\n', "bin/tail-log": "#!/bin/sh\nexec tail -n 50 /srv/site/logs/app.log\n",
    "config/app.env": "PORT=8080\n", "config/secrets.env": "DB_PASSWORD=hunter2\nAPI_TOKEN=0123456789abcdef\n", "logs/app.log": "",
    "releases/v1/index.html": "<h1>v1</h1>\n", "releases/v1/static/site.css": "body{}\n", "releases/v2/index.html": "<h1>v2</h1>\n",
    "releases/v2/static/site.css": "body{color:#333}\n", "releases/v2/static/img/logo.gif": "GIF89a",
}
EXPECTED_DIRS = {".", "bin", "config", "logs", "releases", "releases/v1", "releases/v1/static", "releases/v2", "releases/v2/static", "releases/v2/static/img"}
EXPECTED_LINKS = {"current": "releases/v2", "config/host-link": "/etc/hostname"}


def entries():
    yield SITE
    for root, dirs, files in os.walk(SITE):
        for name in dirs + files:
            yield Path(root) / name


class PermissionsTest(unittest.TestCase):
    def test_deploy_user(self):
        user = pwd.getpwnam("deploy")
        self.assertEqual(user.pw_gid, grp.getgrnam("www-data").gr_gid)
        self.assertIn(user.pw_shell, ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/usr/bin/false"))
        self.assertLess(user.pw_uid, 1000, "not a system user")

    def test_tree_is_unchanged(self):
        files, dirs, links = {}, set(), {}
        for path in entries():
            rel = str(path.relative_to(SITE)) if path != SITE else "."
            if path.is_symlink():
                links[rel] = os.readlink(path)
            elif path.is_dir():
                dirs.add(rel)
            else:
                files[rel] = path.read_bytes()
        self.assertEqual(dirs, EXPECTED_DIRS)
        self.assertEqual(links, EXPECTED_LINKS)
        self.assertEqual({k: hashlib.sha256(v).hexdigest() for k, v in files.items()},
                         {k: hashlib.sha256(v.encode()).hexdigest() for k, v in EXPECTED_FILES.items()})

    def test_owner_group_and_modes(self):
        uid, gid = pwd.getpwnam("deploy").pw_uid, grp.getgrnam("www-data").gr_gid
        for path in entries():
            st = os.lstat(path)
            rel = str(path.relative_to(SITE)) if path != SITE else "."
            with self.subTest(path=rel):
                self.assertEqual((st.st_uid, st.st_gid), (uid, gid))
                mode = stat.S_IMODE(st.st_mode)
                if stat.S_ISLNK(st.st_mode):
                    continue
                if stat.S_ISDIR(st.st_mode):
                    self.assertEqual(oct(mode), oct(0o2750))
                elif rel == "config/secrets.env":
                    self.assertEqual(oct(mode), oct(0o600))
                elif path.parent == SITE / "bin":
                    self.assertEqual(oct(mode), oct(0o750))
                else:
                    self.assertEqual(oct(mode), oct(0o640))

    def test_link_targets_untouched(self):
        st = os.stat("/etc/hostname")
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o644))


if __name__ == "__main__":
    unittest.main()
