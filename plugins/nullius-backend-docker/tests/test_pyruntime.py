"""The standalone Python's install (pyruntime.py) with the real uv, from a mirror on the loopback: once, whoever asks at once."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor

from docker_world import python_mirror
from nullius_backend_docker import pyruntime


def test_two_installs_at_once_download_and_install_once(tmp_path, monkeypatch):
    with python_mirror(tmp_path / "mirror") as mirror:
        for name, value in mirror.env.items():
            monkeypatch.setenv(name, value)
        with ThreadPoolExecutor(2) as pool:
            found = list(pool.map(lambda _: pyruntime.ensure(tmp_path / "runtimes", "3.11"), range(2)))
        again = pyruntime.ensure(tmp_path / "runtimes", "3.11")  # installed: uv is not asked
    assert found[0] == found[1] == again
    assert [p for p in mirror.served if p.endswith(".tar.gz")] == [f"/build/{next((tmp_path / 'mirror' / 'build').glob('*.tar.gz')).name}"]
    assert found[0].record() == {"python": "3.11.2", "name": "cpython-3.11.2-linux-x86_64-gnu", "build": "debian-bookworm", "uv": "0.13.9",
                                 "source": f"UV_PYTHON_DOWNLOADS_JSON_URL={mirror.env['UV_PYTHON_DOWNLOADS_JSON_URL']}",
                                 "at": "/opt/nullius/python"}
    # what uv installed runs from where it lies, its extension modules on the libraries beside it
    said = subprocess.run([str(found[0].folder / "bin" / "python3.11"), "-c", "import ssl, sqlite3, ctypes, lzma, sys; print(sys.prefix)"],
                          capture_output=True, text=True, timeout=60)
    assert said.returncode == 0 and said.stdout.strip() == str(found[0].folder), said.stderr
