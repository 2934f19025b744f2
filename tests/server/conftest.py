"""Fixtures for tests against a real tritonserver (marker ``server``).

Everything is set up here, once per session, so a clean clone needs nothing else: the server is found or unpacked
from the nvidia-pytriton wheel into the cache (``$TRITON_TEXTOPS_CACHE``, default ``~/.cache/triton-textops``),
and the model runtime venv (numpy<2 + triton_textops) is built. One server serves ``add_sub`` + ``env_probe`` for
the whole session. Timings of the setup and of each server start are printed in the terminal summary.

Helpers (repository building, one-request inference for parity checks) live in ``triton_helpers.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from triton_helpers import TIMINGS, Runtime, make_repository, start_server

from triton_textops.tools.server import TritonServer, find_server, model_runtime_env


@pytest.fixture(scope="session")
def triton_runtime() -> Runtime:
    """The server install and model runtime venv (downloaded/built on first use, then cached)."""
    t0 = time.monotonic()
    install = find_server()
    TIMINGS["setup: find/unpack tritonserver"] = time.monotonic() - t0
    t0 = time.monotonic()
    env = model_runtime_env()
    TIMINGS["setup: model runtime venv"] = time.monotonic() - t0
    return Runtime(install, env)


@pytest.fixture(scope="session")
def server_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repository(tmp_path_factory.mktemp("repo"), "add_sub", "env_probe")


@pytest.fixture(scope="session")
def textops_features(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """features.json fitted once per session on every other bundled Austen paragraph (our-model server tests)."""
    from model_dirs import fit_features

    return fit_features(tmp_path_factory.mktemp("textops_artifacts") / "features.json")


@pytest.fixture(scope="session")
def server(triton_runtime: Runtime, server_repo: Path) -> Iterator[TritonServer]:
    """One real server for the session serving add_sub and env_probe."""
    srv = start_server(triton_runtime, server_repo, "session (add_sub, env_probe)")
    try:
        yield srv
    finally:
        t0 = time.monotonic()
        srv.stop()
        TIMINGS["server stop: session"] = time.monotonic() - t0


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TIMINGS:
        terminalreporter.write_sep("-", "real tritonserver timings")
        for what, secs in TIMINGS.items():
            terminalreporter.write_line(f"{what:45s} {secs:7.2f} s")
