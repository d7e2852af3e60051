"""The agent's changes to a box's working directory as one git patch, taken in the box before the check's files go in.

A task in its own image has no workspace on this machine: its working
directory lives in the container, which is gone after the unit. Where that
directory is a git repository and the image has git (the Harbor examples'
repository fixes), the patch is made inside, as nullius_core.jobs.workspace_patch
makes one here: against the first commit, untracked files included, through a
temporary index and object folder, so the repository the check then reads is
untouched. Elsewhere there is no patch, and `docker diff`'s paths
(agent/container-changes.txt) are what is known of the changes.
"""

from __future__ import annotations

LIMIT = 8 * 2**20  # a patch larger than this is cut, and says so: the box's files are the check's to read, not ours
NO_REPOSITORY = 3  # the script's exit when there is no repository or no git: no patch, not an error

# $1: the working directory. git's safe.directory: the repository belongs to the image's user, the exec is root.
SCRIPT = r"""
cd "$1" 2>/dev/null || exit 3
command -v git >/dev/null 2>&1 || exit 3
g() { git -c safe.directory='*' "$@"; }
g rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit 3
base=$(g rev-list --max-parents=0 HEAD 2>/dev/null | tail -n 1)
[ -n "$base" ] || base=4b825dc642cb6eb9a060e54bf8d69288fbee4904
objects=$(cd "$(g rev-parse --git-path objects)" && pwd) || exit 1
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/objects/pack"
export GIT_INDEX_FILE="$t/index" GIT_OBJECT_DIRECTORY="$t/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$objects"
if [ "$base" = 4b825dc642cb6eb9a060e54bf8d69288fbee4904 ]; then g read-tree --empty; else g read-tree "$base"; fi || exit 1
g add -A -- . || exit 1
g diff --cached --binary --no-color --no-ext-diff "$base"
"""


def argv(workdir: str) -> list[str]:
    return ["sh", "-c", SCRIPT, "nullius-patch", workdir]


def reading(code: int | None, output: bytes) -> str | None:
    """The patch from the script's exit and output: None where there is none to take (no repository, no git)."""
    if code == NO_REPOSITORY:
        return None
    if code != 0:
        text = output.decode(errors="replace").strip()[-300:]
        return f"# the working directory's patch could not be made in the box (exit {code}): {text}\n"
    if len(output) > LIMIT:
        return output[:LIMIT].decode(errors="replace") + f"\n# cut at {LIMIT} bytes of {len(output)}\n"
    return output.decode(errors="replace")
