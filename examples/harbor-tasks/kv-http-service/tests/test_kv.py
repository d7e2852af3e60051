import json
import os
import threading
import unittest
import urllib.error
import urllib.request
from pathlib import Path

URL = os.environ.get("KV_URL", "http://127.0.0.1:8080")
STORE = Path("/srv/kv/store.json")


def call(method, path, body=None):
    req = urllib.request.Request(URL + path, data=None if body is None else body.encode(), method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class KVTest(unittest.TestCase):
    def test_1_existing_data(self):
        self.assertEqual(call("GET", "/kv/greeting"), (200, "hello, world"))
        self.assertEqual(call("GET", "/kv/build.number"), (200, "1742"))
        self.assertEqual(call("GET", "/kv/empty"), (200, ""))
        self.assertEqual(call("GET", "/kv/missing")[0], 404)

    def test_2_put_get_delete_persisted(self):
        self.assertEqual(call("PUT", "/kv/colour", "teal")[0], 201)
        self.assertEqual(call("GET", "/kv/colour"), (200, "teal"))
        self.assertEqual(json.loads(STORE.read_text())["colour"], "teal")
        self.assertEqual(call("PUT", "/kv/colour", "deep ✓ teal")[0], 200)
        self.assertEqual(call("GET", "/kv/colour"), (200, "deep ✓ teal"))
        self.assertEqual(json.loads(STORE.read_text())["colour"], "deep ✓ teal")
        self.assertEqual(call("DELETE", "/kv/colour")[0], 204)
        self.assertEqual(call("DELETE", "/kv/colour")[0], 404)
        self.assertEqual(call("GET", "/kv/colour")[0], 404)
        self.assertNotIn("colour", json.loads(STORE.read_text()))

    def test_3_listing_and_refusals(self):
        call("PUT", "/kv/a-1", "x")
        status, body = call("GET", "/kv")
        self.assertEqual(status, 200)
        keys = json.loads(body)
        self.assertEqual(keys, sorted(keys))
        self.assertTrue({"a-1", "greeting", "build.number", "empty"} <= set(keys))
        self.assertEqual(call("PUT", "/kv/" + "k" * 65, "x")[0], 400)
        self.assertEqual(call("PUT", "/kv/bad%20key", "x")[0], 400)
        self.assertEqual(call("GET", "/kv/bad$key")[0], 400)
        self.assertEqual(call("GET", "/nothing-here")[0], 404)
        self.assertEqual(call("PUT", "/kv/" + "k" * 64, "ok")[0], 201)

    def test_4_concurrent_clients(self):
        errors = []

        def worker(i):
            try:
                for j in range(10):
                    key = f"c{i}.{j}"
                    if call("PUT", f"/kv/{key}", str(i * j))[0] != 201 or call("GET", f"/kv/{key}") != (200, str(i * j)):
                        errors.append(key)
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        data = json.loads(STORE.read_text())
        self.assertEqual(sum(1 for k in data if k.startswith("c")), 80)


if __name__ == "__main__":
    unittest.main()
