"""Commit subjects stay <= 72 characters (issue 48).

``python scripts/check_commit_subjects.py`` checks every commit after :data:`BASE` (the history before it is left
as it was); ``python scripts/check_commit_subjects.py --message FILE`` checks one message (the ``commit-msg`` hook
that ``make hooks`` installs). Exit status 1 names each offending subject.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

MAX_SUBJECT = 72
BASE = "4799c7d"  # the last commit before the rule; older subjects are not checked
ROOT = Path(__file__).resolve().parents[1]


def subject_of(message: str) -> str:
    """The first line of a commit message that is not a git comment (``#``), stripped of trailing blanks."""
    for line in message.splitlines():
        if not line.startswith("#"):
            return line.rstrip()
    return ""


def too_long(subjects: dict[str, str], limit: int = MAX_SUBJECT) -> list[str]:
    """``"<commit> (<n> chars): <subject>"`` for each subject over ``limit``."""
    return [f"{c} ({len(s)} chars): {s}" for c, s in subjects.items() if len(s) > limit]


def has_base(base: str = BASE, cwd: Path = ROOT) -> bool:
    """Whether ``base`` is in this checkout's history (not in a shallow clone or an unpacked sdist)."""
    res = subprocess.run(["git", "merge-base", "--is-ancestor", base, "HEAD"], cwd=cwd, capture_output=True)
    return res.returncode == 0


def subjects_since(base: str = BASE, head: str = "HEAD", cwd: Path = ROOT) -> dict[str, str]:
    """Commit (short hash) -> subject for the commits in ``base..head``."""
    out = subprocess.run(["git", "log", "--format=%h%x00%s", f"{base}..{head}"], cwd=cwd, check=True,
                         capture_output=True, text=True).stdout
    return dict(line.split("\0", 1) for line in out.splitlines() if line)


def main(argv: list[str] | None = None) -> int:
    """Check the commits after BASE, or one message file (``--message``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--message", type=Path, help="check this commit message file instead of the history")
    args = ap.parse_args(argv)
    if args.message is not None:
        bad = too_long({"this commit": subject_of(args.message.read_text(encoding="utf-8"))})
    elif not has_base():
        print(f"commit subjects not checked: commit {BASE} is not in this checkout's history")
        return 0
    else:
        bad = too_long(subjects_since())
    for line in bad:
        print(f"commit subject over {MAX_SUBJECT} characters: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
