"""Issue 8 end to end: our preprocess model served from a venv-pack env given by EXECUTION_ENV_PATH.

The env is built and packed once per module by our own pack code (``triton_textops.tools.envs``: venv + venv-pack,
numpy<2 for the 24.10 stub, triton_textops installed from a copy of this checkout). The model directories point at
it with ``$$TRITON_MODEL_DIRECTORY/custom_env.tar.gz``. The server itself is started with a bare venv (neither
numpy nor triton_textops) first on PATH, so the models can only load and answer from inside the extracted env; an
``env_probe`` model with the same env reports its ``sys.prefix`` and where triton_textops was imported from.
``triton-textops env check`` runs on the same tarball.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from model_dirs import PREPROCESS, write_model
from textops_repo import assert_same_outputs, config_dtypes, harness_infer, text_tensor
from triton_helpers import MODELS, TIMINGS, Runtime, server_infer, start_server

from triton_textops.bundled import austen_paragraphs as austen
from triton_textops.bundled import vocab_path
from triton_textops.tools.server import TritonServer

pytestmark = pytest.mark.server

harness = pytest.importorskip("triton_textops.testing.harness")

REPO = Path(__file__).resolve().parents[2]
ENV_NAME = "custom_env.tar.gz"
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"  # the packed env's Python (the base of this venv)
EXEC_ENV = f'parameters: {{ key: "EXECUTION_ENV_PATH" value: {{ string_value: "$$TRITON_MODEL_DIRECTORY/{ENV_NAME}" }} }}\n'


def _base_python() -> str:
    """The interpreter behind the test venv (a venv-pack env links it; the stub needs its libpython)."""
    return getattr(sys, "_base_executable", sys.executable)


@pytest.fixture(scope="module")
def packed_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """custom_env.tar.gz built by ``make_pack_plan``/``pack_env`` (venv + venv-pack) for Triton 24.10."""
    pytest.importorskip("venv_pack")
    from triton_textops.tools.envs import make_pack_plan, pack_env
    from triton_textops.tools.stub import parse_release

    t0 = time.monotonic()
    tmp = tmp_path_factory.mktemp("exec_env")
    src = tmp / "src"  # pip builds in the source tree: build from a copy, never in the shared checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "triton_textops", src / "triton_textops",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    plan = make_pack_plan(kind="cpu", release=parse_release("24.10"), python=_base_python(), output=tmp / ENV_NAME,
                          textops=str(src), tool="venv")
    assert plan.tool == "venv" and any("numpy>=1.21,<2" in c for c in plan.commands[1])
    out = pack_env(plan, log=lambda _: None)
    TIMINGS["setup: pack exec env (venv-pack)"] = time.monotonic() - t0
    return out


@pytest.fixture(scope="module")
def bare_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv of the same Python with no packages at all: what the server puts first on PATH here."""
    env = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([_base_python(), "-m", "venv", "--without-pip", str(env)], check=True)
    probe = subprocess.run([str(env / "bin" / "python3"), "-c", "import numpy"], capture_output=True)
    assert probe.returncode != 0  # so a model that loads got numpy (and triton_textops) from its packed env
    return env


@pytest.fixture(scope="module")
def env_repo(tmp_path_factory: pytest.TempPathFactory, packed_env: Path, textops_features: Path) -> Path:
    root = tmp_path_factory.mktemp("exec_env_repo")
    files = {"vocab.txt": vocab_path(), "features.json": textops_features}
    d = write_model(root, "preprocess_env", "preprocess", PREPROCESS + EXEC_ENV, files)
    probe = root / "env_probe"
    shutil.copytree(MODELS / "env_probe", probe)
    with open(probe / "config.pbtxt", "a") as fh:
        fh.write(EXEC_ENV)
    for model_dir in (d, probe):  # each model has the env in its own directory (hard link: no copy)
        try:
            os.link(packed_env, model_dir / ENV_NAME)
        except OSError:
            shutil.copy2(packed_env, model_dir / ENV_NAME)
    return root


_EXTRACTED: list[Path] = []  # env copies the server extracted under /tmp (removed after it stops)


@pytest.fixture(scope="module")
def env_server(triton_runtime: Runtime, bare_env: Path, env_repo: Path) -> Iterator[TritonServer]:
    # Started from the checkout on purpose: the stub's sys.path starts with '' (the server's working
    # directory), and TritonServer must keep the checkout's triton_textops/ from shadowing the packed one.
    srv = start_server(Runtime(triton_runtime.install, bare_env), env_repo, "exec env (preprocess, env_probe)",
                       log_verbose=1)
    try:
        yield srv
    finally:
        t0 = time.monotonic()
        srv.stop()
        TIMINGS["server stop: exec env"] = time.monotonic() - t0
        for d in _EXTRACTED:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def probe_info(env_server: TritonServer) -> dict:
    out, err = server_infer(env_server.http_url, "env_probe", {"X": np.array([1], dtype=np.int32)}, ["INFO"])
    assert err is None, err
    info = json.loads(out["INFO"][0])
    base = Path(info["sys_prefix"]).parent  # the server extracts into /tmp/python_env_XXXXXX/<n>
    if base.name.startswith("python_env_"):
        _EXTRACTED.append(base)
    return info


def test_probe_runs_inside_the_extracted_env(probe_info: dict, bare_env: Path, packed_env: Path) -> None:
    prefix = os.path.realpath(probe_info["sys_prefix"])
    assert Path(prefix).parent.name.startswith("python_env_"), prefix  # extracted by the server, not our bare venv
    assert prefix != os.path.realpath(bare_env) and prefix != os.path.realpath(packed_env.parent)
    assert probe_info["triton_textops"].startswith(prefix + os.sep)  # imported from the packed env
    assert probe_info["path_head"] == os.path.join(probe_info["sys_prefix"], "bin")  # bin/activate was sourced
    assert probe_info["python"] == PY
    assert int(probe_info["numpy"].split(".")[0]) == 1  # the pinned numpy<2 of the env


def test_server_log_shows_stubs_started_in_the_extracted_env(env_server: TritonServer, env_repo: Path,
                                                             probe_info: dict) -> None:
    """Both models' stubs were launched by sourcing bin/activate of an env extracted under /tmp/python_env_*."""
    started = {}
    for m in re.finditer(r"Starting Python backend stub: source (\S+)/bin/activate && exec .* (\S+)/1/model\.py ",
                         env_server.log):
        model_dir = Path(m.group(2))
        assert model_dir.parent == env_repo.resolve()
        started[model_dir.name] = m.group(1)
    assert set(started) == {"preprocess_env", "env_probe"}, env_server.log[-5000:]
    for model, env in started.items():
        assert Path(env).parent.name.startswith("python_env_"), (model, env)
    assert started["env_probe"] == probe_info["sys_prefix"]


def test_preprocess_from_packed_env_answers_like_the_harness(env_server: TritonServer, env_repo: Path) -> None:
    texts = austen()[1500:1506] + ["", "naïve café 😀"]
    inputs = {"INPUT0": text_tensor(texts)}
    model = harness.load_model(env_repo / "preprocess_env")  # in-process: numpy 2, this checkout
    try:
        mock, merr = harness_infer(model, inputs)
        dtypes = config_dtypes(model.config)
    finally:
        model.finalize()
    assert merr is None
    for protocol, url in (("http", env_server.http_url), ("grpc", env_server.grpc_url)):
        real, err = server_infer(url, "preprocess_env", inputs, protocol=protocol)
        assert err is None, err
        assert_same_outputs(real, mock, dtypes)
    _, err = server_infer(env_server.http_url, "preprocess_env", {"INPUT0": text_tensor([b"\xff"])})
    assert err == "input 'INPUT0' row 0: text is not valid UTF-8"


def test_env_check_on_the_same_env(packed_env: Path, probe_info: dict, triton_runtime: Runtime,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    from triton_textops.tools.envs import main

    stub = triton_runtime.install.backend_directory(PY) / "python" / "triton_python_backend_stub"
    # the tarball, against the stub this server runs (the wheel's stub for our Python) and release 24.10: all good
    assert main(["env", "check", str(packed_env), "--stub", str(stub), "--triton", "24.10"]) == 0
    out = capsys.readouterr().out
    assert "result: OK" in out and "[ok]   numpy 1." in out and "[ok]   import triton_textops" in out
    assert "[ok]   activates in place: sys.prefix = the env" in out
    # the copy the server extracted (still running), against the stock 24.10 container, whose stub embeds
    # Python 3.10: only the Python version is wrong
    rc = main(["env", "check", probe_info["sys_prefix"], "--triton", "24.10"])
    out = capsys.readouterr().out
    fails = [line for line in out.splitlines() if line.startswith("[FAIL]")]
    assert "[ok]   numpy 1." in out and "[ok]   activates in place: sys.prefix = the env" in out
    if PY == "3.10":
        assert rc == 0 and fails == []
    else:
        assert rc == 1 and len(fails) == 1, out
        assert f"the env has Python {PY}, the stock stub of tritonserver:24.10-py3 embeds Python 3.10" in fails[0]
