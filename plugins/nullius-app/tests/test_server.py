"""The app's server: it starts as a user starts it, serves its pages to a real browser, and keeps to its own browser."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from app_world import shot


def request(url: str, method: str = "GET", data: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=120) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def token_of(app) -> str:
    status, html = request(app.url + "/")
    assert status == 200
    return html.split('name="nullius-token" content="', 1)[1].split('"', 1)[0]


def test_the_front_page_lists_the_catalogue_in_a_real_browser(app, page, tmp_path):
    page.goto(app.url + "/")
    page.wait_for_selector("text=benchmarks")
    cards = page.locator(".card").all_inner_texts()
    listing = json.loads(__import__("subprocess").run([__import__("sys").executable, "-m", "nullius_core", "list", "--json"],
                                                      env=app.env, capture_output=True, text=True).stdout)
    assert f"{len(listing['benchmarks'])}\nbenchmarks" in cards[0]
    shot(page, tmp_path, "home")


def test_a_request_from_another_origin_or_without_the_token_changes_nothing(app):
    token = token_of(app)
    own = {"Origin": app.url, "Content-Type": "application/json"}
    assert request(app.url + "/nothing-here", "POST", b"{}", {**own, "X-Nullius-Token": token})[0] == 404  # passes the guard
    no_token = request(app.url + "/nothing-here", "POST", b"{}", own)
    assert no_token[0] == 403 and "form token" in no_token[1]
    wrong = request(app.url + "/nothing-here", "POST", b"{}", {**own, "X-Nullius-Token": "guessed"})
    assert wrong[0] == 403 and "form token" in wrong[1]
    other = request(app.url + "/nothing-here", "POST", b"{}", {"Origin": "http://evil.example", "X-Nullius-Token": token})
    assert other[0] == 403 and "app's own pages alone" in other[1]
    no_origin = request(app.url + "/nothing-here", "POST", b"{}", {"X-Nullius-Token": token})
    assert no_origin[0] == 403


def test_a_page_asked_under_another_host_name_is_refused(app):
    port = app.url.rsplit(":", 1)[1]
    status, body = request(app.url + "/", headers={"Host": f"attacker.example:{port}"})  # DNS rebinding
    assert status == 421 and "not attacker.example" in body


def test_the_app_listens_on_loopback_alone(app_env, tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "nullius_core", "app", "--host", "0.0.0.0", "--port", "0"], env=app_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "listens on a loopback address alone" in done.stderr


@pytest.mark.parametrize("path", ["/static/../../etc/passwd", "/static/%2e%2e/%2e%2e/etc/passwd"])
def test_a_path_out_of_the_static_folder_is_refused(app, path):
    status, body = request(app.url + path)
    assert status in (403, 404) and "root:" not in body
