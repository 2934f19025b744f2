"""The cache the unpacked server and the model runtime envs live in, and the lock that builds each entry once."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path

COMPLETE_MARKER = ".complete"

def cache_dir() -> Path:
    """Directory for the unpacked server and model runtime environments (created on demand)."""
    env = os.environ.get("TRITON_TEXTOPS_CACHE")
    if env:
        root = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "triton-textops"
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Exclusive inter-process lock (so parallel test processes build a cache entry once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def pip_cmd() -> list[str]:
    """pip of the calling interpreter (used with ``--python`` for other environments)."""
    return [sys.executable, "-m", "pip", "--disable-pip-version-check"]

