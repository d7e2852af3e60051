import hashlib
import subprocess
import sys
import unittest
from pathlib import Path

APP = Path("/app")
sys.path.insert(0, str(APP))
ORIGINAL_TESTS_SHA256 = "09174b8e920cc11373f246da89e18073f5f7c61a67acf7fe246f6ca007346be5"


class HiddenTest(unittest.TestCase):
    def setUp(self):
        from cachelib.lru import LRUCache
        self.LRU = LRUCache

    def test_existing_suite_passes_and_is_unchanged(self):
        out = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=APP, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])
        self.assertEqual(hashlib.sha256((APP / "tests" / "test_lru.py").read_bytes()).hexdigest(), ORIGINAL_TESTS_SHA256)

    def test_capacity_must_be_positive(self):
        for bad in (0, -1):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                self.LRU(bad)
        self.assertEqual(len(self.LRU(1)), 0)

    def test_update_never_evicts_and_refreshes(self):
        evicted = []
        cache = self.LRU(2, on_evict=lambda k, v: evicted.append((k, v)))
        cache.put("a", 1)
        cache.put("b", 2)
        cache.put("a", 10)
        self.assertEqual(evicted, [])
        self.assertEqual(list(cache), ["b", "a"])
        cache.put("c", 3)
        self.assertEqual(evicted, [("b", 2)])
        self.assertEqual(list(cache), ["a", "c"])
        self.assertEqual(cache.peek("a"), 10)

    def test_on_evict_sees_the_entry_already_removed(self):
        seen = []
        cache = self.LRU(1)
        cache.on_evict = lambda k, v: seen.append((k, v, k in cache, len(cache)))
        cache.put("x", 1)
        cache.put("y", 2)
        self.assertEqual(seen, [("x", 1, False, 0)])

    def test_peek_contains_len_do_not_reorder(self):
        cache = self.LRU(3)
        for k in "abc":
            cache.put(k, k.upper())
        self.assertEqual(cache.peek("a"), "A")
        self.assertTrue("a" in cache)
        self.assertEqual(len(cache), 3)
        self.assertEqual(cache.peek("zz", "dflt"), "dflt")
        cache.put("d", "D")
        self.assertEqual(list(cache), ["b", "c", "d"])

    def test_get_missing_and_stats(self):
        cache = self.LRU(2)
        cache.put("a", 1)
        self.assertIsNone(cache.get("nope"))
        self.assertEqual(cache.get("nope", 5), 5)
        self.assertEqual(cache.get("a"), 1)
        cache.put("b", 2)
        cache.put("c", 3)  # the order is a, b: "a" goes
        self.assertEqual(list(cache), ["b", "c"])
        self.assertEqual(cache.stats(), {"hits": 1, "misses": 2, "evictions": 1})
        cache.clear()
        self.assertEqual(len(cache), 0)
        self.assertEqual(cache.stats(), {"hits": 1, "misses": 2, "evictions": 1})

    def test_falsy_values_and_delete(self):
        evicted = []
        cache = self.LRU(3, on_evict=lambda k, v: evicted.append(k))
        cache.put("zero", 0)
        cache.put("none", None)
        cache.put("empty", "")
        self.assertEqual(cache.get("zero", "missing"), 0)
        self.assertIsNone(cache.get("none", "missing"))
        self.assertTrue(cache.delete("none"))
        self.assertFalse(cache.delete("none"))
        self.assertTrue(cache.delete("empty"))
        self.assertEqual(list(cache), ["zero"])
        self.assertEqual(evicted, [])

    def test_long_sequence_against_a_model(self):
        import random
        rng = random.Random(11)
        cache, model = self.LRU(5), []
        for step in range(2000):
            key = rng.randrange(9)
            if rng.random() < 0.5:
                got = cache.get(key)
                if key in model:
                    model.remove(key)
                    model.append(key)
                    self.assertEqual(got, key * 2, step)
                else:
                    self.assertIsNone(got, step)
            else:
                if key in model:
                    model.remove(key)
                elif len(model) == 5:
                    model.pop(0)
                model.append(key)
                cache.put(key, key * 2)
            self.assertEqual(list(cache), model, step)


if __name__ == "__main__":
    unittest.main()
