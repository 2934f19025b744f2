"""A server cleans up its shared memory, and a dead model is noticed by a real inference where /ready is fooled.

Each TritonServer gives the Python backend its own region prefix; after start, requests, a failed model load and
stop, ``/dev/shm`` holds nothing of it. A stub process killed in the real server (as a crash would) leaves
``/v2/health/ready`` and ``/v2/models/M/ready`` at 200 while :meth:`TritonServer.probe`, ``triton-textops probe`` and
the KServe manifest's exec-probe script all fail.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from triton_helpers import MODELS, Runtime, make_repository, server_infer, start_server

from triton_textops.tools.server import TritonServer, TritonServerError, shm_regions

SHM = Path("/dev/shm")


def _shm() -> set[str]:
    return {p.name for p in SHM.iterdir()} if SHM.is_dir() else set()


def _cmdlines() -> dict[int, str]:
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if cmd and state != "Z":
                out[int(entry.name)] = cmd
    return out


def _foreign_servers(own: set[int]) -> bool:
    """Other tritonservers running now (other tests, other users) may add or remove their own regions."""
    return any("tritonserver" in cmd and "--model-repository" in cmd and pid not in own
               for pid, cmd in _cmdlines().items())


def _stub_of(server: TritonServer, model: str) -> int:
    """The pid of ``model``'s stub process of this server: its command line names the model file and a region
    with this server's own prefix (so a stub of another server is never touched)."""
    pids = [pid for pid, cmd in _cmdlines().items()
            if cmd.split(" ", 1)[0].endswith("triton_python_backend_stub") and server.shm_prefix in cmd
            and f"/{model}/1/model.py" in cmd]
    assert len(pids) == 1, pids
    return pids[0]


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.server
def test_dev_shm_unchanged_after_start_requests_failed_load_and_stop(triton_runtime: Runtime, tmp_path: Path) -> None:
    repo = make_repository(tmp_path / "repo", "add_sub", "env_probe")
    broken = repo / "broken"
    shutil.copytree(MODELS / "env_probe", broken)
    (broken / "config.pbtxt").write_text((broken / "config.pbtxt").read_text().replace('"env_probe"', '"broken"'))
    (broken / "1" / "model.py").write_text("import numpy\nraise RuntimeError('this model cannot load')\n")
    before = _shm()
    server = start_server(triton_runtime, repo, "shm test (explicit model control)",
                          extra_args=["--model-control-mode=explicit", "--load-model=add_sub",
                                      "--load-model=env_probe"])
    own = {server.process.pid}
    with server:
        assert f"--backend-config=python,shm-region-prefix-name={server.shm_prefix}python_" in server.command
        regions = shm_regions(server.shm_prefix)
        assert regions, "the python backend should use this server's own prefix"
        for n in (1, 3):
            inputs = {"INPUT0": np.ones((n, 4), np.float32), "INPUT1": np.ones((n, 4), np.int32),
                      "TEXT": np.array([[b"x"]] * n, dtype=np.object_)}
            _, err = server_infer(server.http_url, "add_sub", inputs, ["OUTPUT0"])
            assert err is None
        import tritonclient.http as httpclient
        from tritonclient.utils import InferenceServerException

        client = httpclient.InferenceServerClient(server.http_url)
        try:
            with pytest.raises(InferenceServerException, match="this model cannot load"):
                client.load_model("broken")
        finally:
            client.close()
        assert server.running
    assert shm_regions(server.shm_prefix) == []
    if not _foreign_servers(own):  # nobody else's server could have changed /dev/shm meanwhile
        assert _shm() == before


@pytest.mark.server
def test_failed_start_leaves_no_regions(triton_runtime: Runtime, tmp_path: Path) -> None:
    repo = make_repository(tmp_path / "repo", "env_probe")
    (repo / "env_probe" / "1" / "model.py").write_text("raise RuntimeError('broken on purpose')\n")
    server = TritonServer(repo, install=triton_runtime.install, python_env=triton_runtime.python_env,
                          startup_timeout=60)
    with pytest.raises(TritonServerError, match="broken on purpose"):
        server.start()
    assert "shm-region-prefix-name" in " ".join(server.command)
    assert shm_regions(server.shm_prefix) == []


@pytest.mark.server
def test_probe_notices_a_dead_stub_that_ready_does_not(triton_runtime: Runtime, tmp_path: Path) -> None:
    from triton_textops.cli import main
    from triton_textops.tools.deploy import inspect_repository
    from triton_textops.tools.deploy.kserve import liveness_targets
    from triton_textops.tools.probe import exec_probe_command

    repo = make_repository(tmp_path / "repo", "add_sub", "env_probe")
    server = start_server(triton_runtime, repo, "liveness test (add_sub, env_probe)")
    with server:
        url = f"http://{server.http_url}"
        assert sorted(r.model for r in server.probe()) == ["add_sub", "env_probe"]
        assert main(["probe", server.http_url]) == 0
        info = inspect_repository(repo)
        script = exec_probe_command(liveness_targets(info, "add_sub"), port=server.http_port, timeout=5)
        script[0] = sys.executable  # the manifest says python3 (the Triton image's); same script
        assert subprocess.run(script, capture_output=True, timeout=60).returncode == 0

        stub = _stub_of(server, "add_sub")
        os.kill(stub, signal.SIGKILL)  # what a segfault in the model or the OOM killer does
        deadline = time.monotonic() + 10
        while stub in _cmdlines() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert stub not in _cmdlines()

        with pytest.raises(TritonServerError, match="add_sub") as failed:
            server.probe()
        assert "env_probe" not in str(failed.value)  # the live model still answers
        assert _status(f"{url}/v2/health/ready") == 200  # what readiness probes see: all fine
        assert _status(f"{url}/v2/models/add_sub/ready") == 200
        assert main(["probe", server.http_url]) == 1
        assert main(["probe", server.http_url, "--model", "env_probe"]) == 0
        res = subprocess.run(script, capture_output=True, text=True, timeout=60)
        assert res.returncode == 1 and "add_sub" in res.stderr

        # the server itself killed: its regions stay behind until stop() removes them
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=30)
        left = shm_regions(server.shm_prefix)
    assert shm_regions(server.shm_prefix) == []
    print(f"regions a killed server left and stop() removed: {len(left)}")


@pytest.mark.skipif(not SHM.is_dir(), reason="no /dev/shm")
def test_stale_regions_of_a_dead_starter_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    """What a starter killed before it could stop its server leaves is removed by the next start; regions of a
    live starter (or another pid namespace) are not touched."""
    from triton_textops.tools.server.shm import SHM_PREFIX, _pid_namespace, sweep_stale_shm

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)  # exited: nothing has this pid now (a reuse within the test is very unlikely)
    ns = _pid_namespace()
    names = {"dead": f"{SHM_PREFIX}{ns}_{dead_pid}_0badc0de_python_region",
             "live": f"{SHM_PREFIX}{ns}_{os.getppid()}_0badc0de_python_region",
             "other_ns": f"{SHM_PREFIX}{ns + 1}_{dead_pid}_0badc0de_python_region"}
    try:
        for name in names.values():
            (SHM / name).write_bytes(b"x")
        sweep_stale_shm()
        assert not (SHM / names["dead"]).exists()
        assert (SHM / names["live"]).exists() and (SHM / names["other_ns"]).exists()
    finally:
        for name in names.values():
            (SHM / name).unlink(missing_ok=True)


def test_own_prefix_per_server_or_the_callers() -> None:
    a, b = TritonServer("."), TritonServer(".")
    assert a.shm_prefix != b.shm_prefix and a.shm_prefix.startswith("triton_textops_")
    given = TritonServer(".", extra_args=["--backend-config=python,shm-region-prefix-name=mine_"])
    assert given.shm_prefix == "mine_"
