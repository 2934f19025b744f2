"""Issue 8 end to end: our preprocess model served from a venv-pack env given by EXECUTION_ENV_PATH.

The env is built and packed once per module as a pip user does it: ``triton-textops env pack --triton 24.10
--python <this Python>`` run from a venv where triton-textops was installed from a wheel whose version is on no
index (venv + venv-pack, numpy<2 for the 24.10 stub, triton-textops repacked from its installed files). The model directories point at
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
from wheels import build_textops_wheel

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


WHEEL_VERSION = "0.1.0+wheeltest"  # on no index: `env pack` can only have taken it from the installed files


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pip user's venv: triton-textops installed from a wheel (not editable, a version on no index).

    The wheel is built from a copy of this checkout with its version changed to WHEEL_VERSION; the venv sees the
    test venv's third-party packages (numpy, numba, venv-pack) through a .pth line, but not this checkout."""
    t0 = time.monotonic()
    tmp = tmp_path_factory.mktemp("pip_user")
    wheel = build_textops_wheel(tmp, WHEEL_VERSION)
    venv = tmp / "venv"
    subprocess.run([_base_python(), "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([str(venv / "bin" / "python"), "-c", purelib], capture_output=True, text=True,
                          check=True).stdout.strip()
    Path(site, "_test_venv_packages.pth").write_text(subprocess.run(
        [sys.executable, "-c", purelib], capture_output=True, text=True, check=True).stdout)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True)
    TIMINGS["setup: wheel + pip user's venv"] = time.monotonic() - t0
    return venv


@pytest.fixture(scope="module")
def user_packed_env(tmp_path_factory: pytest.TempPathFactory, user_venv: Path) -> Path:
    """custom_env.tar.gz made by `triton-textops env pack --triton 24.10 --python <this Python>` run from the pip
    user's venv (venv + venv-pack; numpy<2 for the 24.10 stub; triton-textops from its installed files)."""
    pytest.importorskip("venv_pack")
    t0 = time.monotonic()
    tmp = tmp_path_factory.mktemp("exec_env")
    check = "import triton_textops, importlib.metadata as m; print(triton_textops.__file__, m.version('triton-textops'))"
    where = subprocess.run([str(user_venv / "bin" / "python"), "-c", check], capture_output=True, text=True,
                           check=True, cwd=tmp).stdout.split()
    assert where[0].startswith(str(user_venv)) and where[1] == WHEEL_VERSION  # the installed wheel, not the checkout
    res = subprocess.run([str(user_venv / "bin" / "triton-textops"), "env", "pack", "--triton", "24.10", "--python",
                          _base_python(), "-o", str(tmp / ENV_NAME)], capture_output=True, text=True, cwd=tmp)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "from the installed triton-textops" in res.stdout and "result: OK" in res.stdout
    assert f"triton_textops-{WHEEL_VERSION}-py3-none-any.whl" in res.stdout
    if PY != "3.10":  # the documented `env pack --triton 24.10 --python 3.11`: exit 0, the custom stub it needs named
        assert f"this env needs a custom stub built for Python {PY}" in res.stdout
    assert any("numpy>=1.21,<2" in line for line in res.stdout.splitlines() if line.startswith("$ "))
    out = tmp / ENV_NAME
    assert out.stat().st_mode & 0o777 == 0o666 & ~_umask()  # not venv-pack's private 0600
    TIMINGS["setup: pack exec env (env pack from a wheel install)"] = time.monotonic() - t0
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.fixture(scope="module")
def bare_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv of the same Python with no packages at all: what the server puts first on PATH here."""
    env = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([_base_python(), "-m", "venv", "--without-pip", str(env)], check=True)
    probe = subprocess.run([str(env / "bin" / "python3"), "-c", "import numpy"], capture_output=True)
    assert probe.returncode != 0  # so a model that loads got numpy (and triton_textops) from its packed env
    return env


@pytest.fixture(scope="module")
def env_repo(tmp_path_factory: pytest.TempPathFactory, user_packed_env: Path, textops_features: Path) -> Path:
    root = tmp_path_factory.mktemp("exec_env_repo")
    files = {"vocab.txt": vocab_path(), "features.json": textops_features}
    d = write_model(root, "preprocess_env", "preprocess", PREPROCESS + EXEC_ENV, files)
    probe = root / "env_probe"
    shutil.copytree(MODELS / "env_probe", probe)
    with open(probe / "config.pbtxt", "a") as fh:
        fh.write(EXEC_ENV)
    for model_dir in (d, probe):  # each model has the env in its own directory (hard link: no copy)
        try:
            os.link(user_packed_env, model_dir / ENV_NAME)
        except OSError:
            shutil.copy2(user_packed_env, model_dir / ENV_NAME)
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


def test_probe_runs_inside_the_extracted_env(probe_info: dict, bare_env: Path, user_packed_env: Path) -> None:
    prefix = os.path.realpath(probe_info["sys_prefix"])
    assert Path(prefix).parent.name.startswith("python_env_"), prefix  # extracted by the server, not our bare venv
    assert prefix != os.path.realpath(bare_env) and prefix != os.path.realpath(user_packed_env.parent)
    assert probe_info["triton_textops"].startswith(prefix + os.sep)  # imported from the packed env
    assert probe_info["path_head"] == os.path.join(probe_info["sys_prefix"], "bin")  # bin/activate was sourced
    assert probe_info["python"] == PY
    assert int(probe_info["numpy"].split(".")[0]) == 1  # the pinned numpy<2 of the env
    # the version the pip user installed (from a wheel on no index), packed from its installed files
    assert list(Path(prefix).glob(f"lib/python{PY}/site-packages/triton_textops-{WHEEL_VERSION}.dist-info/RECORD"))


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


def test_env_check_on_the_same_env(user_packed_env: Path, probe_info: dict, triton_runtime: Runtime,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    from triton_textops.tools.envs import main

    stub = triton_runtime.install.backend_directory(PY) / "python" / "triton_python_backend_stub"
    # the tarball, against the stub this server runs (the wheel's stub for our Python) and release 24.10: all good
    assert main(["env", "check", str(user_packed_env), "--stub", str(stub), "--triton", "24.10"]) == 0
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


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def test_a_restart_loads_the_kernels_compiled_at_the_first_start(triton_runtime: Runtime, bare_env: Path,
                                                                  env_repo: Path, tmp_path: Path) -> None:
    """Triton extracts the tarball to a new /tmp/python_env_* at each start and deletes it at shutdown. numba's own
    cache locations are keyed by that path, so every start compiled every kernel again; ours are keyed by the
    sources' content (ops.core.jitcache): the second start compiles nothing (no cache file added or rewritten) and the
    model answers the same."""
    repo = tmp_path / "repo"
    shutil.copytree(env_repo / "preprocess_env", repo / "preprocess_env", copy_function=_link_or_copy)
    cache = tmp_path / "numba-cache"
    inputs = {"INPUT0": text_tensor(austen()[:3] + ["naïve café 😀"])}
    extracted, caches, answers = [], [], []
    for start in (1, 2):
        srv = start_server(Runtime(triton_runtime.install, bare_env), repo, f"exec env, start {start} of 2",
                           env={"NUMBA_CACHE_DIR": str(cache)}, log_verbose=1)
        try:
            out, err = server_infer(srv.http_url, "preprocess_env", inputs)
            assert err is None, err
            answers.append(out)
        finally:
            srv.stop()
        extracted.append(set(re.findall(r"Starting Python backend stub: source (\S+)/bin/activate", srv.log)))
        caches.append({p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()})
    assert extracted[0] and extracted[1] and extracted[0].isdisjoint(extracted[1])  # two extractions
    kernels = [p for p in caches[0] if p.suffix == ".nbc"]
    assert kernels and all((cache / "triton_textops") in p.parents for p in kernels)
    assert caches[1] == caches[0]  # nothing compiled at the second start
    for name in answers[0]:
        np.testing.assert_array_equal(answers[1][name], answers[0][name])
