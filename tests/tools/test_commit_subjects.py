"""Commit subjects after the rule's start are <= 72 characters (issue 48; scripts/check_commit_subjects.py)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_commit_subjects", ROOT / "scripts/check_commit_subjects.py")
ccs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ccs)


def test_subjects_after_the_base_commit_fit() -> None:
    if not ccs.has_base():
        pytest.skip(f"not a git checkout holding commit {ccs.BASE} (shallow clone or sdist)")
    assert ccs.too_long(ccs.subjects_since()) == []


def test_the_check_names_a_long_subject_and_ignores_comments_and_body(tmp_path: Path) -> None:
    assert ccs.too_long({"a": "x" * 72, "b": "y" * 73}) == [f"b (73 chars): {'y' * 73}"]
    msg = tmp_path / "COMMIT_EDITMSG"
    msg.write_text("# Please enter the commit message\nshort subject\n\n" + "body " * 40 + "\n")
    assert ccs.subject_of(msg.read_text()) == "short subject"
    assert ccs.main(["--message", str(msg)]) == 0
    msg.write_text("z" * 80 + "\n")
    assert ccs.main(["--message", str(msg)]) == 1


def test_the_hook_runs_the_check(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "scripts").mkdir()
    (repo / "scripts/check_commit_subjects.py").write_bytes((ROOT / "scripts/check_commit_subjects.py").read_bytes())
    msg = tmp_path / "m"
    msg.write_text("w" * 73 + "\n")
    res = subprocess.run(["sh", str(ROOT / "scripts/hooks/commit-msg"), str(msg)], cwd=repo,
                         capture_output=True, text=True)
    assert res.returncode == 1 and "73 chars" in res.stderr
    msg.write_text("fine\n")
    assert subprocess.run(["sh", str(ROOT / "scripts/hooks/commit-msg"), str(msg)], cwd=repo).returncode == 0
