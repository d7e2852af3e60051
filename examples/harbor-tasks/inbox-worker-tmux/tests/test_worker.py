import json
import os
import subprocess
import time
import unittest
from pathlib import Path

INBOX, OUTBOX = Path("/srv/inbox"), Path("/srv/outbox")


def wait_for(path: Path, seconds: float = 30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return json.loads(path.read_text())
        time.sleep(0.2)
    raise AssertionError(f"{path} did not appear within {seconds} s")


class WorkerTest(unittest.TestCase):
    def test_1_tmux_session(self):
        out = subprocess.run(["tmux", "has-session", "-t", "=worker"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_2_waiting_file(self):
        self.assertEqual(wait_for(OUTBOX / "waiting.json"), {"file": "waiting.csv", "rows": 3, "total": "9.25", "skus": 2})
        self.assertTrue((INBOX / "done" / "waiting.csv").is_file())
        self.assertFalse((INBOX / "waiting.csv").exists())
        self.assertTrue((INBOX / "readme.txt").is_file())

    def test_3_new_files(self):
        (INBOX / ".tmp-batch").write_text("amount,region,sku\n0.10,eu,X\n0.20,us,Y\n0.30,eu,X\n-1000.25,eu,Z\n")
        os.rename(INBOX / ".tmp-batch", INBOX / "batch-7.csv")
        (INBOX / "broken.csv").write_text("sku,price\nA,1\n")
        self.assertEqual(wait_for(OUTBOX / "batch-7.json"), {"file": "batch-7.csv", "rows": 4, "total": "-999.65", "skus": 3})
        broken = wait_for(OUTBOX / "broken.json")
        self.assertEqual(broken.get("file"), "broken.csv")
        self.assertIn("error", broken)

    def test_4_slow_writer(self):
        path = INBOX / "slow.csv"
        with open(path, "w") as f:
            f.write("sku,amount\n")
            f.flush()
            for i in range(4):
                time.sleep(0.4)  # a writer that takes its time: the worker must not read half a file
                f.write(f"S{i},{i}.5\n")
                f.flush()
        self.assertEqual(wait_for(OUTBOX / "slow.json"), {"file": "slow.csv", "rows": 4, "total": "8.00", "skus": 4})


if __name__ == "__main__":
    unittest.main()
