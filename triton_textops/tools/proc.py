"""The one subprocess runner of the tools: runs a command with its output captured and, when it fails, raises
the caller's error type with the command line and the tail of what it printed (the part that says why)."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


class CommandError(RuntimeError):
    """A command could not start, timed out or exited non-zero (the default error of :func:`run`)."""


def run(
    cmd: Sequence[str | os.PathLike[str]],
    what: str = "command",
    *,
    error: Callable[[str], Exception] = CommandError,
    log: Callable[[str], None] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    merge_output: bool = False,
    tail_lines: int = 40,
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` and return its completed process (text output captured).

    ``log`` gets ``$ <command>`` first. ``merge_output`` sends stderr into stdout (a build log reads in order).
    On failure ``error("<what> failed (exit N): <command>\\n<last tail_lines lines of output>")`` is raised;
    a command that cannot start or runs past ``timeout`` raises it too.
    """
    argv = [os.fspath(c) for c in cmd]
    line = shlex.join(argv)
    if log is not None:
        log("$ " + line)
    try:
        res = subprocess.run(argv, cwd=Path(cwd) if cwd is not None else None, env=dict(env) if env else None,
                             timeout=timeout, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT if merge_output else subprocess.PIPE)
    except subprocess.TimeoutExpired as exc:
        out = exc.output.decode(errors="replace") if isinstance(exc.output, bytes) else (exc.output or "")
        tail = "\n".join(out.splitlines()[-tail_lines:])
        raise error(f"{what} did not finish in {timeout:g} s: {line}\n{tail}") from None
    except OSError as exc:
        raise error(f"{what} failed: {line}: {exc}") from exc
    if res.returncode != 0:
        output = (res.stdout or "") + ("" if merge_output else (res.stderr or ""))
        tail = "\n".join(output.splitlines()[-tail_lines:])
        raise error(f"{what} failed (exit {res.returncode}): {line}\n{tail}")
    return res
