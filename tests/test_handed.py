"""nullius_core.handed: a folder someone else handed over is read without leaving it, trusting its names or its sizes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nullius_core import handed


def test_a_path_is_used_only_while_it_stays_under_its_root(tmp_path):
    root = tmp_path / "job"
    (root / "trial").mkdir(parents=True)
    (root / "trial" / "sibling").symlink_to(root / "trial")  # a link inside is followed
    assert handed.within(root, Path("trial/sibling")) == (root / "trial").resolve()
    (root / "out").symlink_to(tmp_path)
    for path in (Path("out"), Path("../job2"), Path("trial/../../x"), tmp_path / "elsewhere"):
        with pytest.raises(handed.Refused, match="leads out of"):
            handed.within(root, path)


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "a\\b", "a\x00b", "x" * 256, 7, None])
def test_a_name_from_a_record_is_one_plain_part(name, tmp_path):
    with pytest.raises(handed.Refused) as refused:
        handed.plain_name(name, tmp_path / "result.json", "$.trial_name")
    assert str(refused.value).startswith(f"{tmp_path / 'result.json'}: $.trial_name: expected a plain name")


def test_a_file_is_read_within_its_bound_and_only_if_regular(tmp_path):
    (tmp_path / "ok.json").write_text('{"a": 1}')
    assert handed.read_json(tmp_path, Path("ok.json")) == {"a": 1}
    with (tmp_path / "sparse").open("wb") as file:
        file.truncate(5 * 1024**3)
    with pytest.raises(handed.Refused, match="expected at most 100 bytes, found 5368709120"):
        handed.read_bytes(tmp_path, Path("sparse"), limit=100)
    os.mkfifo(tmp_path / "fifo")  # would block a reader forever
    with pytest.raises(handed.Refused, match="expected a regular file"):
        handed.read_bytes(tmp_path, Path("fifo"))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(handed.Refused, match="expected JSON"):
        handed.read_json(tmp_path, Path("bad.json"))
    with pytest.raises(FileNotFoundError):
        handed.read_bytes(tmp_path, Path("absent"))


def test_a_copy_never_writes_through_a_link_at_its_target(tmp_path):
    (tmp_path / "src").write_text("data")
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (tmp_path / "target").symlink_to(victim)
    handed.copy_file(tmp_path, Path("src"), tmp_path / "target")
    assert victim.read_text() == "untouched" and (tmp_path / "target").read_text() == "data"
