"""A benchmark's Licences panel in a real browser: set, replace, unset, and the value never shown back.

Every request and response the browser makes is kept (a route that fetches
and fulfils each), so the test can say that the value went out once, in a
POST's body, and came back in no response, no page, no URL (the browser's
history), no log and no file of the app's or the jobs', only the secrets
store's own file.
"""

from __future__ import annotations

import base64
import secrets
from pathlib import Path
from unittest import mock

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from app_world import shot
from catalogue_world import catalogue, catalogue_app, catalogue_env, nullius  # noqa: F401

BENCH = "envbench"


class Seen:
    """Every request the page made, and every response body it got."""

    def __init__(self, page):
        self.requests: list[tuple[str, str, bytes]] = []
        self.bodies: list[tuple[str, bytes]] = []
        page.route("**/*", self.keep)

    def keep(self, route) -> None:
        response = route.fetch()
        body = response.body()
        self.requests.append((route.request.method, route.request.url, route.request.post_data_buffer or b""))
        self.bodies.append((route.request.url, body))
        route.fulfill(response=response, body=body)


def state_of(page, name: str) -> str:
    return page.locator(f'tr[data-licence="{name}"] .cat-licence-state').inner_text()


def set_value(page, name: str, value: str, expires: str = "") -> None:
    form = page.locator(f'tr[data-licence="{name}"] form.cat-licence-form')
    form.locator("input[name=value]").fill(value)
    if expires:
        form.locator("input[name=expires]").fill(expires)
    with page.expect_navigation():  # the panel shows the new state once the command has set it
        form.locator("button[type=submit]").click()


def files_holding(root: Path, needle: bytes) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and needle in p.read_bytes())


def test_a_licence_is_set_replaced_and_unset_and_its_value_never_shown_back(catalogue_app, page, tmp_path):
    env = catalogue_app.env
    first, second = f"lic-{secrets.token_hex(12)}", f"lic-{secrets.token_hex(12)}"
    licence_file = tmp_path / "upload" / "license.lic"
    licence_file.parent.mkdir()
    file_value = f"LICENSE-FILE-{secrets.token_hex(12)}\n"
    licence_file.write_text(file_value)
    seen = Seen(page)
    page.goto(f"{catalogue_app.url}/benchmarks/{BENCH}")
    panel = page.locator("#licences")
    assert panel.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.licence)") == [
        "SCORER_TOKEN", "TOOL_LICENSE_FILE", "TOOL_LICENSE_KEY", "TOOL_LICENSE_SERVER"]
    assert "the tool's licence key" in panel.inner_text() and "not set" in state_of(page, "TOOL_LICENSE_KEY")
    shot(page, tmp_path, "licences")

    set_value(page, "TOOL_LICENSE_KEY", first, expires="2999-12-31")
    assert state_of(page, "TOOL_LICENSE_KEY").startswith("set") and "expires 2999-12-31" in state_of(page, "TOOL_LICENSE_KEY")
    secrets_dir = Path(env["XDG_CONFIG_HOME"]) / "nullius" / "secrets"
    stored = secrets_dir / BENCH / "TOOL_LICENSE_KEY"
    assert stored.read_text() == first  # it arrived whole, on the command's stdin
    assert page.locator('tr[data-licence="TOOL_LICENSE_KEY"] form.cat-licence-form button').inner_text() == "Replace"
    shot(page, tmp_path, "set")

    set_value(page, "TOOL_LICENSE_KEY", second)
    assert stored.read_text() == second and "expires" not in state_of(page, "TOOL_LICENSE_KEY")
    form = page.locator('tr[data-licence="TOOL_LICENSE_FILE"] form.cat-licence-form')
    form.locator("input[type=file]").set_input_files(str(licence_file))
    with page.expect_navigation():
        form.locator("button[type=submit]").click()
    assert (secrets_dir / BENCH / "TOOL_LICENSE_FILE").read_text() == file_value  # a file kept as it is, its newline too
    listed = nullius(env, "secrets", "list", BENCH)
    assert "TOOL_LICENSE_FILE        file   to agent   set" in listed.stdout
    shot(page, tmp_path, "replaced")

    with page.expect_navigation():
        page.locator('tr[data-licence="TOOL_LICENSE_KEY"] .cat-licence-unset button').click()
    assert "not set" in state_of(page, "TOOL_LICENSE_KEY") and not stored.exists()
    shot(page, tmp_path, "unset")

    # a licence file goes out as its bytes in base64 (value_b64): that is what to look for in the request
    for value, as_sent in ((first, first), (second, second), (file_value.strip(), base64.b64encode(file_value.encode()).decode())):
        sent = [(method, url) for method, url, body in seen.requests if as_sent.encode() in body]
        assert len(sent) == 1 and sent[0][0] == "POST", sent  # it went out once, in a POST's body
        for needle in {value.encode(), as_sent.encode()}:
            assert not any(needle in url.encode() for _, url, _ in seen.requests)  # never in a URL: never in the history
            assert not any(needle in body for _, body in seen.bodies)  # no response, no page
            assert needle.decode() not in page.content()
    # the file the test uploaded from, and the store's file: nothing else of the app's, the jobs' or the logs' holds a value
    assert files_holding(tmp_path, file_value.strip().encode()) == sorted([licence_file, secrets_dir / BENCH / "TOOL_LICENSE_FILE"])
    assert files_holding(tmp_path, first.encode()) == [] and files_holding(tmp_path, second.encode()) == []
    assert page.url == f"{catalogue_app.url}/benchmarks/{BENCH}"


def test_a_licence_is_not_set_by_a_get_nor_from_another_origin(catalogue_app):
    import urllib.error
    import urllib.request

    value = f"lic-{secrets.token_hex(12)}"
    url = f"{catalogue_app.url}/benchmarks/{BENCH}/licences/TOOL_LICENSE_KEY"
    for request, refused in ((urllib.request.Request(f"{url}?value={value}"), 405),  # a link, or a GET form: never
                             (urllib.request.Request(url, data=f'{{"value": "{value}"}}'.encode(), method="POST",
                                                     headers={"Origin": "http://evil.example", "Content-Type": "application/json"}), 403)):
        try:
            with urllib.request.urlopen(request, timeout=120) as reply:
                status = reply.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status == refused
    assert "not set" in nullius(catalogue_app.env, "secrets", "list", BENCH).stdout.split("TOOL_LICENSE_KEY", 1)[1].splitlines()[0]


@pytest.mark.parametrize("path", [f"/benchmarks/{BENCH}/licences/TOOL_LICENSE_KEY", f"/benchmarks/{BENCH}/licences/TOOL_LICENSE_KEY/unset"])
def test_only_a_loopback_browser_may_use_the_licences_panel(path):
    """The middleware stands before every route: a request from any other address is refused, whatever it carries."""
    from nullius_app.safety import middleware

    state = mock.Mock(origin="http://127.0.0.1:8765", token="t")
    reached = []

    async def panel(request):
        reached.append(request)
        return web.json_response({"said": "set"})

    guard = middleware(state)
    for address in ("192.0.2.7", "10.0.0.2", "2001:db8::1"):
        transport = mock.Mock()
        transport.get_extra_info.side_effect = lambda name, default=None, a=address: (a, 40000) if name == "peername" else default
        request = make_mocked_request("POST", path, headers={"Host": "127.0.0.1:8765", "Origin": "http://127.0.0.1:8765",
                                                             "X-Nullius-Token": "t"}, transport=transport)
        response = _run(guard(request, panel))
        assert response.status == 403 and "loopback alone" in response.text
    transport = mock.Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: ("127.0.0.1", 40000) if name == "peername" else default
    request = make_mocked_request("POST", path, headers={"Host": "127.0.0.1:8765", "Origin": "http://127.0.0.1:8765", "X-Nullius-Token": "t"},
                                  transport=transport)
    assert _run(guard(request, panel)).status == 200 and len(reached) == 1  # the same request from loopback reaches the panel


def _run(coroutine):
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as thread:  # a loop of its own: Playwright's sync API may keep one running in this thread
        return thread.submit(asyncio.run, coroutine).result()
