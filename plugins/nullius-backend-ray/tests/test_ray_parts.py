"""The ray backend's parts that need no cluster: the unit's folders as a tar, the paths rewritten, the tickets."""

from __future__ import annotations

import io
import tarfile

import pytest

from nullius_backend_ray import files, wire
from nullius_backend_ray.pathmap import PathMap


def test_the_folders_go_and_come_back_whole_links_kept_as_links(tmp_path):
    workspace, home = tmp_path / "ws", tmp_path / "home"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "sub" / "a.txt").write_text("a")
    (workspace / "out").symlink_to("/etc")  # an agent's link leading out: kept, for the driver to take out before the checks
    home.mkdir()
    (home / ".config").write_text("c")
    data = files.pack({"workspace": workspace, "home": home})
    there = {"workspace": tmp_path / "node" / "ws", "home": tmp_path / "node" / "home"}
    (tmp_path / "node" / "ws").mkdir(parents=True)
    (tmp_path / "node" / "ws" / "stale.txt").write_text("from before")
    files.unpack(data, there)
    assert (there["workspace"] / "sub" / "a.txt").read_text() == "a" and (there["home"] / ".config").read_text() == "c"
    assert (there["workspace"] / "out").is_symlink() and str((there["workspace"] / "out").readlink()) == "/etc"
    assert not (there["workspace"] / "stale.txt").exists()  # the folder is what the tar holds, nothing else


def test_a_tar_that_writes_through_a_link_or_outside_its_folders_is_refused(tmp_path):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        link = tarfile.TarInfo("workspace/escape")
        link.type, link.linkname = tarfile.SYMTYPE, str(tmp_path / "victim")
        tar.addfile(link)
        evil = tarfile.TarInfo("workspace/escape/planted.txt")
        evil.size = 4
        tar.addfile(evil, io.BytesIO(b"evil"))
    (tmp_path / "victim").mkdir()
    with pytest.raises(tarfile.TarError):
        files.unpack(out.getvalue(), {"workspace": tmp_path / "ws"})
    assert list((tmp_path / "victim").iterdir()) == []
    other = io.BytesIO()
    with tarfile.open(fileobj=other, mode="w") as tar:
        tar.addfile(tarfile.TarInfo("elsewhere/x"), io.BytesIO(b""))
    with pytest.raises(ValueError, match="outside its folders"):
        files.unpack(other.getvalue(), {"workspace": tmp_path / "ws2"})


def test_paths_are_rewritten_both_ways_the_longest_first():
    paths = PathMap([("/jobs/j/u1/.work/workspace", "/tmp/n/u1/workspace"), ("/jobs/j/u1/.work", "/tmp/n/u1")])
    line = b'{"cwd": "/jobs/j/u1/.work/workspace", "home": "/jobs/j/u1/.work/home"}\n'
    there = paths.to_node(line)
    assert there == b'{"cwd": "/tmp/n/u1/workspace", "home": "/tmp/n/u1/home"}\n'
    assert paths.to_driver(there) == line
    assert paths.env({"HOME": "/jobs/j/u1/.work/home"}) == {"HOME": "/tmp/n/u1/home"}


def test_a_ticket_opens_once_and_no_other_opens():
    tickets = wire.Tickets()
    ticket = tickets.issue("channel")
    assert tickets.spend("not-a-ticket") is None
    assert tickets.spend(ticket) == "channel"
    assert tickets.spend(ticket) is None
