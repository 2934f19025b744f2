"""Load the stub built from the real r24.10 sources in the wheel's tritonserver 2.51 with our `tokenize` model.

Usage (from a source checkout, after `make venv`): .venv/bin/python stub_build/serve_check.py STUB
Three runs: (A) stub in the model directory, (B) stub in the backend directory backends/python/, (C) stub only in
the model directory and none in backends/python/ (r24.10 refuses to initialize the backend).
Proof that OUR stub ran: while the server is up, the server's stub child processes (/proc/<pid>/exe) are copies of
it and nothing else. Needs the wheel's server (downloaded into the cache on first use) and a stub for Python 3.11.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "server")]

import numpy as np  # noqa: E402
from model_dirs import TOKENIZE, write_model  # noqa: E402
from textops_repo import text_tensor  # noqa: E402
from triton_helpers import server_infer  # noqa: E402

from triton_textops import BertTokenizer  # noqa: E402
from triton_textops.bundled import vocab_path  # noqa: E402
from triton_textops.tools.server import (  # noqa: E402
    ServerInstall,
    TritonServer,
    TritonServerError,
    find_server,
    model_runtime_env,
)

STUB = Path(sys.argv[1]).resolve()
TEXTS = ["Hello, world!", "Ça coûte 12,50 € – naïve café ☕ 東京", "It is a truth universally acknowledged."]


def stub_processes(server_pid: int) -> list[str]:
    """Executables of the stub processes that are children of our server (other servers may run here)."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
                ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == server_pid and exe.endswith("triton_python_backend_stub"):
                out.append(exe)
    return out


def repo_stubs(repo: Path) -> list[Path]:
    return list(repo.glob("*/triton_python_backend_stub"))


def backend_copy(install: ServerInstall, tmp: Path, stub: Path | None) -> ServerInstall:
    """A copy of the wheel's backends-py3.11 (same depth, so its $ORIGIN RUNPATHs still work) with `stub` as
    backends/python/triton_python_backend_stub (None: no stub file there)."""
    src = install.backend_directory("3.11")
    dst = src.parent / f"backends-stubcheck-{os.getpid()}-{tmp.name}"
    shutil.copytree(src, dst)
    target = dst / "python" / "triton_python_backend_stub"
    target.unlink()
    if stub is not None:
        shutil.copy2(stub, target)
        target.chmod(0o755)
    return ServerInstall(install.executable, dst, install.lib_dirs, None, "stubcheck")


def run(label: str, install: ServerInstall, repo: Path, env: Path) -> str | None:
    """Start, check one request, stop; returns None, or the server's error when it did not start."""
    t0 = time.monotonic()
    server = TritonServer(repo, install=install, python_env=env, log_verbose=1)
    try:
        server.start()
    except TritonServerError as err:
        lines = [ln for ln in str(err).splitlines() if "not found" in ln or "failed to load" in ln.lower()]
        print(f"[{label}] server did not start ({time.monotonic() - t0:.1f} s):")
        for ln in lines[:4]:
            print("   ", ln.strip()[:300])
        return str(err)
    try:
        procs = stub_processes(server.process.pid)
        print(f"[{label}] ready in {time.monotonic() - t0:.1f} s; stub processes of this server: {procs}")
        t1 = time.monotonic()
        out, error = server_infer(server.http_url, "tokenize", {"TEXT": text_tensor(TEXTS)})
        dt = time.monotonic() - t1
        assert error is None, error
        want = BertTokenizer.from_vocab(vocab_path()).encode([t.encode() for t in TEXTS], max_length=32)
        np.testing.assert_array_equal(out["INPUT_IDS"], want.input_ids)
        print(f"[{label}] request ok in {dt * 1000:.0f} ms: INPUT_IDS {out['INPUT_IDS'].shape} equal to "
              f"BertTokenizer; first row {out['INPUT_IDS'][0][:8].tolist()}")
        ours = {str(p) for p in install.backends.glob("python/triton_python_backend_stub")} | {
            str(p) for p in repo_stubs(server.model_repository)}
        assert procs and set(procs) <= ours, f"other stubs ran: {procs} vs ours {ours}"
        assert all(Path(p).read_bytes() == STUB.read_bytes() for p in procs), "a running stub is not our build"
    finally:
        server.stop()
    return None


def main() -> None:
    install = find_server()
    env = model_runtime_env()
    print(f"server {install.executable}; model env {env}; stub {STUB}")
    with tempfile.TemporaryDirectory(prefix="stubcheck-") as t:
        tmp = Path(t)
        # (A) per-model stub; backends/python/ keeps the wheel's own 3.11 stub
        repo_a = tmp / "repo_a"
        model = write_model(repo_a, "tokenize", "tokenize", TOKENIZE, {"vocab.txt": vocab_path()})
        shutil.copy2(STUB, model / "triton_python_backend_stub")
        assert run("A: <model dir>/triton_python_backend_stub", install, repo_a, env) is None
        # (B) our stub as backends/python/triton_python_backend_stub, none in the model dir
        repo_b = tmp / "repo_b"
        write_model(repo_b, "tokenize", "tokenize", TOKENIZE, {"vocab.txt": vocab_path()})
        b_install = backend_copy(install, tmp / "b", STUB)
        try:
            assert run("B: backends/python/triton_python_backend_stub", b_install, repo_b, env) is None
        finally:
            shutil.rmtree(b_install.backends, ignore_errors=True)
        # (C) per-model stub only, no stub file in backends/python/
        c_install = backend_copy(install, tmp / "c", None)
        try:
            err = run("C: <model dir> only, none in backends/python/", c_install, repo_a, env)
            assert err is not None and "triton_python_backend_stub is not found" in err, "C was expected to fail"
        finally:
            shutil.rmtree(c_install.backends, ignore_errors=True)


if __name__ == "__main__":
    main()
    print("all three placements behaved as expected")
