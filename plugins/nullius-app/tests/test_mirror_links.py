"""The host mirror makes a job's links here only where, followed as the kernel follows them, they stay inside the job."""

from __future__ import annotations

import os

from nullius_app.host.mirror import _apply_listing


def test_a_chain_of_links_inside_cannot_make_a_path_that_reads_out(tmp_path):
    (tmp_path / "SECRET").write_text("this machine's own\n")
    job = tmp_path / "j" / "job"
    job.mkdir(parents=True)
    listing = {
        "b": ["dir", 0, 0, 0o755, None],
        "b/c": ["link", 0, 0, 0o777, "."],  # b/c is b: inside, and harmless alone
        "a": ["link", 0, 0, 0o777, "b/c/c/c/../../../SECRET"],  # reads b/SECRET by its letters, tmp/SECRET once followed
        "fine": ["link", 0, 0, 0o777, "b/c/c"],
        "out": ["link", 0, 0, 0o777, "../../SECRET"],
    }
    not_made = _apply_listing(job, listing)
    assert "a -> b/c/c/c/../../../SECRET" in not_made and "out -> ../../SECRET" in not_made
    assert not os.path.lexists(job / "a") and not os.path.lexists(job / "out")
    assert (job / "b" / "c").is_symlink() and (job / "fine").resolve() == (job / "b").resolve()
    assert not any("own" in p.read_text() for p in job.rglob("*") if p.is_file())
