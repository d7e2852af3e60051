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
        # A writer that takes its time (0.4 s between lines): the worker must not read half a file. The rule is a
        # second of the same size, so an attempt only counts if the writer itself was never held up that long (a
        # busy machine can stall it); one that was is given to the worker as it is and written again under a new name.
        for attempt in range(1, 6):
            name = f"slow-{attempt}"
            path = INBOX / f"{name}.csv"
            longest, last = 0.0, time.monotonic()
            with open(path, "w") as f:
                for line in ["sku,amount", *(f"S{i},{i}.5" for i in range(4))]:
                    if line != "sku,amount":
                        time.sleep(0.4)
                    f.write(line + "\n")
                    f.flush()
                    now = time.monotonic()
                    longest, last = max(longest, now - last), now
            result = wait_for(OUTBOX / f"{name}.json")
            if longest < 0.8:
                self.assertEqual(result, {"file": f"{name}.csv", "rows": 4, "total": "8.00", "skus": 4})
                return
            print(f"attempt {attempt}: the writer was held up {longest:.2f} s between two lines; written again")
        self.fail("the writer was held up for 0.8 s or more in each of 5 attempts: the machine is too busy to check this")


if __name__ == "__main__":
    unittest.main()
