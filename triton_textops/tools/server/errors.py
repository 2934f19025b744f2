"""The server tool's one error type, and the one-line-per-model summary of a failed start's log."""

from __future__ import annotations

import re
from collections.abc import Mapping


class TritonServerError(RuntimeError):
    """The server could not be found, installed, started or stopped (message includes the server log).

    ``failures`` maps each model the server failed to load to the server's reason (see :func:`load_failures`)."""

    def __init__(self, message: str, failures: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.failures: dict[str, str] = dict(failures or {})


_LOAD_FAILURE = re.compile(r"failed to load '(?P<model>[^']+)' version (?P<version>\d+): (?P<reason>.*)")


def load_failures(log: str) -> dict[str, str]:
    """The models a tritonserver log says failed to load, each with the first line of the server's reason.

    Why: a failed start ends in ~20 KB of log and wide status tables; one line per model is what to act on."""
    out: dict[str, str] = {}
    for line in log.splitlines():
        m = _LOAD_FAILURE.search(line)
        if m is None:
            continue
        reason = m.group("reason").rstrip()
        if reason.endswith('"'):  # 24.x quotes each log message and escapes its newlines and quotes
            reason = reason[:-1]
        reason = reason.split("\\n", 1)[0].replace('\\"', '"').strip()
        out.setdefault(m.group("model"), reason)
    return out
