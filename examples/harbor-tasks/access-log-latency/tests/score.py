import json
from pathlib import Path


def rows(path):
    try:
        lines = Path(path).read_text().split("\n")
    except (OSError, UnicodeDecodeError):
        return None
    if not lines or lines[0] != "endpoint,requests,p50_ms,p95_ms,error_rate":
        return None
    return [line.split(",") for line in lines[1:] if line]


want = rows("/tests/expected_latency.csv")
got = rows("/output/latency.csv") or []
got_by_endpoint = {r[0]: r for r in got if len(r) == 5}
scores = {
    "endpoints": [r[0] for r in got] == [r[0] for r in want],
    "requests": all(got_by_endpoint.get(r[0], [None] * 5)[1] == r[1] for r in want) and len(got) == len(want),
    "percentiles": all(got_by_endpoint.get(r[0], [None] * 5)[2:4] == r[2:4] for r in want) and len(got) == len(want),
    "error_rate": all(got_by_endpoint.get(r[0], [None] * 5)[4] == r[4] for r in want) and len(got) == len(want),
}
try:
    scores["skipped"] = Path("/output/skipped.txt").read_text().strip() == Path("/tests/expected_skipped.txt").read_text().strip()
except OSError:
    scores["skipped"] = False
exact = Path("/output/latency.csv").is_file() and Path("/output/latency.csv").read_text() == Path("/tests/expected_latency.csv").read_text()
result = {"reward": int(exact and all(scores.values())), **{k: int(v) for k, v in scores.items()}}
print(json.dumps(result))
