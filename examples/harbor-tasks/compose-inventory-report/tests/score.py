import json
import urllib.error
import urllib.request
from pathlib import Path

want = json.loads(Path("/tests/expected_report.json").read_text())


def same(report):
    return isinstance(report, dict) and report == want


try:
    saved = json.loads(Path("/app/report.json").read_text())
except (OSError, ValueError):
    saved = None
request = urllib.request.Request("http://inventory-api:9000/reports/latest", headers={"Authorization": "Bearer tok-7f3a9c51"})
try:
    with urllib.request.urlopen(request, timeout=15) as resp:
        posted = json.loads(resp.read())
except (urllib.error.URLError, ValueError, OSError):
    posted = None
file_ok, posted_ok = same(saved), same(posted)
print(json.dumps({"reward": int(file_ok and posted_ok), "report_file": int(file_ok), "report_posted": int(posted_ok)}))
