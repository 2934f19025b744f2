"""Run a real NVIDIA Triton Inference Server on a model repository (tests, the demo, benchmarks).

Where the server comes from, in order:

1. ``$TRITON_TEXTOPS_SERVER`` (path to a ``tritonserver`` binary), ``tritonserver`` on ``PATH`` or
   ``/opt/tritonserver/bin/tritonserver`` (the NGC container layout): used as installed.
2. Otherwise Triton 2.51.0 (container 24.10) is taken from the PyPI wheel ``nvidia-pytriton==0.7.0``: the wheel
   is fetched with ``pip download --no-deps`` and only the server, the Python backend, the stubs and the bundled
   shared libraries are unpacked into a cache directory. pytriton's Python package (which pins ``numpy<2``) is
   never installed into the calling environment.

The 24.10 Python-backend stub has two constraints that shape this module:

* it is built with pybind11 2.10 and breaks with NumPy 2, so models must run in an environment with ``numpy<2``;
* for Python >= 3.11 it runs the interpreter isolated (``PYTHONPATH`` ignored) and takes ``sys.prefix`` from the
  first ``python3`` on ``PATH``.

So models run in a separate, cached "model runtime" virtual environment (:func:`model_runtime_env`: ``numpy<2``
plus this package, linked from its source location) whose ``bin/`` is put first on the server's ``PATH``. A
repository written by ``triton-textops repo create`` / ``example readability`` records what its python models import
besides (``requirements.txt`` at its top); those packages go into that env, so such a repository serves as written.

Each server gets its own prefix for the Python backend's shared-memory regions
(``--backend-config=python,shm-region-prefix-name=...``), and :meth:`TritonServer.stop` removes the regions of that
prefix from ``/dev/shm`` once the server has exited, also after a failed start or a killed server (Docker's
default ``/dev/shm`` is 64 MB: leftover 1-3 MiB regions of a few dozen restarts make every python model fail to load).

Cache layout (``$TRITON_TEXTOPS_CACHE``, default ``$XDG_CACHE_HOME/triton-textops`` or ``~/.cache/triton-textops``)::

    tritonserver-2.51.0/                   unpacked server (created in a temp dir, renamed into place)
        pytriton/tritonserver/bin/tritonserver
        pytriton/tritonserver/backends-py3.11/python/   backend dir with the 3.11 stub placed (0755)
        nvidia_pytriton.libs/
    model-env-py3.11-<hash>/              model runtime venv (complete once ``.complete`` exists)
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import triton_textops
from triton_textops.tools.repo.requirements import read_requirements

if TYPE_CHECKING:
    from triton_textops.tools.probe import ProbeResult

TRITON_VERSION = "2.51.0"
PYTRITON_REQUIREMENT = "nvidia-pytriton==0.7.0"
# numpy<2: the 24.10 stub (pybind11 2.10) returns garbage / aborts on BYTES inputs with NumPy 2.
RUNTIME_REQUIREMENTS: tuple[str, ...] = ("numpy>=1.21,<2", "numba>=0.60")  # numba: the ops are kernels
_WHEEL_PREFIXES = ("pytriton/tritonserver/", "nvidia_pytriton.libs/")
_COMPLETE = ".complete"
_LOG_TAIL_CHARS = 20000
SHM_DIR = Path("/dev/shm")
SHM_PREFIX = "triton_textops_"  # + <pid of the starting process>_<8 hex>_ ; python_backend appends a UUID


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


# ----------------------------------------------------------------------------------------------------------------
# cache, locking


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
def _locked(path: Path) -> Iterator[None]:
    """Exclusive inter-process lock (so parallel test processes build a cache entry once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(cmd: Sequence[str], what: str, **kw: object) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if proc.returncode != 0:
        raise TritonServerError(
            f"{what} failed (exit {proc.returncode}): {' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def _pip_cmd() -> list[str]:
    """pip of the calling interpreter (used with ``--python`` for other environments)."""
    return [sys.executable, "-m", "pip", "--disable-pip-version-check"]


# ----------------------------------------------------------------------------------------------------------------
# Python interpreter facts


@dataclass(frozen=True)
class PythonInfo:
    """What the stub needs to know about the Python that runs the models."""

    executable: str
    version: str  # "3.11"
    libdir: str  # directory holding the shared libpython
    soname: str  # "libpython3.11.so.1.0"
    shared: bool


def python_info(python: str | os.PathLike[str]) -> PythonInfo:
    """Query an interpreter for its version and where its shared libpython lives."""
    code = (
        "import json,sys,sysconfig as s;print(json.dumps({'v':'%d.%d'%sys.version_info[:2],"
        "'libdir':s.get_config_var('LIBDIR') or '','so':s.get_config_var('INSTSONAME') or '',"
        "'shared':bool(s.get_config_var('Py_ENABLE_SHARED'))}))"
    )
    out = _run([str(python), "-c", code], f"querying {python}").stdout
    d = json.loads(out.strip().splitlines()[-1])
    return PythonInfo(str(python), d["v"], d["libdir"], d["so"], d["shared"])


def _find_libpython(info: PythonInfo) -> Path:
    candidates = [Path(info.libdir) / info.soname] if info.soname else []
    candidates += [Path(d) / f"libpython{info.version}.so.1.0" for d in (info.libdir, "/usr/lib/x86_64-linux-gnu",
                                                                         "/usr/lib64", "/usr/lib")]
    for c in candidates:
        if c.is_file():
            return c
    raise TritonServerError(
        f"The Python-backend stub links libpython{info.version}.so.1.0 dynamically, but {info.executable} has no "
        f"shared libpython (Py_ENABLE_SHARED={info.shared}, LIBDIR={info.libdir}). Use a Python built with "
        "--enable-shared (system, pyenv with PYTHON_CONFIGURE_OPTS=--enable-shared, conda) for the model env."
    )


# ----------------------------------------------------------------------------------------------------------------
# model runtime environment


def _package_dir() -> Path:
    return Path(triton_textops.__file__).resolve().parent


def model_runtime_env(
    packages: Sequence[str] = (),
    *,
    python: str | os.PathLike[str] | None = None,
    cache: Path | None = None,
) -> Path:
    """Create (once, cached) and return a venv in which the Python-backend stub can run our models.

    It holds ``numpy<2`` plus ``packages`` (pip requirement strings), and this ``triton_textops`` package exposed
    from its current location through a ``.pth`` entry (edits in a source checkout are seen, nothing else from the
    calling environment leaks in). ``python`` is the interpreter to base it on (default: the running one); its
    major.minor selects the stub. The venv is complete only once its ``.complete`` marker exists, so a crash
    mid-build is repaired on the next call. Built under a file lock, safe across processes.
    """
    base = Path(python) if python else Path(sys.executable)
    info = python_info(base)
    _find_libpython(info)
    reqs = sorted({*RUNTIME_REQUIREMENTS, *packages})
    pkg = _package_dir()
    key = hashlib.sha256(
        json.dumps([str(base.resolve()), info.version, reqs, str(pkg)]).encode()
    ).hexdigest()[:12]
    root = cache or cache_dir()
    env = root / f"model-env-py{info.version}-{key}"
    if (env / _COMPLETE).is_file():
        return env
    with _locked(root / f".{env.name}.lock"):
        if (env / _COMPLETE).is_file():
            return env
        if env.exists():
            shutil.rmtree(env)
        # A venv is not relocatable (activate, script shebangs), so it is built in place and marked complete last.
        _run([str(base), "-m", "venv", "--without-pip", str(env)], "creating the model runtime venv")
        env_python = env / "bin" / "python"
        pip_ok = subprocess.run([*_pip_cmd(), "--version"], capture_output=True).returncode == 0
        if pip_ok:
            _run([*_pip_cmd(), "--python", str(env_python), "install", "-q", *reqs], "pip install into model env")
        else:  # no pip next to us: bootstrap one inside the env
            _run([str(env_python), "-m", "ensurepip", "-q"], "ensurepip in model env")
            _run([str(env_python), "-m", "pip", "install", "-q", *reqs], "pip install into model env")
        src = env / "textops-src"
        src.mkdir()
        (src / "triton_textops").symlink_to(pkg, target_is_directory=True)
        site = _run(
            [str(env_python), "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"], "locating site"
        ).stdout.strip()
        Path(site, "triton_textops_src.pth").write_text(f"{src}\n")
        check = _run(
            [str(env_python), "-c", "import numpy, triton_textops; print(numpy.__version__)"],
            "checking the model env",
        ).stdout.strip()
        if int(check.split(".")[0]) >= 2:
            raise TritonServerError(f"model env got numpy {check}; the 24.10 stub needs numpy<2")
        (env / _COMPLETE).write_text(json.dumps({"python": str(base), "requirements": reqs, "package": str(pkg)}))
    return env


# ----------------------------------------------------------------------------------------------------------------
# finding / installing the server


@dataclass(frozen=True)
class ServerInstall:
    """A usable tritonserver: binary, backend directory root and library directories."""

    executable: Path
    backends: Path  # the --backend-directory for a system install; the wheel's pristine backends/ otherwise
    lib_dirs: tuple[Path, ...]
    stubs: Path | None  # python_backend_stubs/ of the wheel install (None for a system install)
    origin: str  # "env", "path", "opt" or "wheel"

    @property
    def from_wheel(self) -> bool:
        return self.stubs is not None

    def backend_directory(self, python_version: str | None) -> Path:
        """``--backend-directory`` to use; for the wheel a per-Python copy with the matching stub placed in it."""
        if self.stubs is None or python_version is None:
            return self.backends
        return _prepare_wheel_backends(self, python_version)


def _system_server() -> ServerInstall | None:
    for origin, cand in (
        ("env", os.environ.get("TRITON_TEXTOPS_SERVER")),
        ("path", shutil.which("tritonserver")),
        ("opt", "/opt/tritonserver/bin/tritonserver"),
    ):
        if cand and os.access(cand, os.X_OK) and Path(cand).is_file():
            exe = Path(cand).resolve()
            root = exe.parent.parent
            return ServerInstall(exe, root / "backends", (root / "lib",), None, origin)
    return None


def _wheel_layout(root: Path) -> ServerInstall:
    ts = root / "pytriton" / "tritonserver"
    return ServerInstall(ts / "bin" / "tritonserver", ts / "backends", (root / "nvidia_pytriton.libs",),
                         ts / "python_backend_stubs", "wheel")


def install_server(cache: Path | None = None, wheel: str | os.PathLike[str] | None = None) -> ServerInstall:
    """Unpack Triton from the nvidia-pytriton wheel into the cache (once) and return it.

    ``wheel`` (or ``$TRITON_TEXTOPS_PYTRITON_WHEEL``) may point at an already downloaded wheel (offline use);
    otherwise ``pip download --no-deps`` fetches it. Unpacked into a temporary directory and renamed into
    place, so an interrupted install never looks complete.
    """
    root = cache or cache_dir()
    final = root / f"tritonserver-{TRITON_VERSION}"
    if (final / _COMPLETE).is_file():
        return _wheel_layout(final)
    with _locked(root / f".{final.name}.lock"):
        if (final / _COMPLETE).is_file():
            return _wheel_layout(final)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=root))
        try:
            wheel = wheel or os.environ.get("TRITON_TEXTOPS_PYTRITON_WHEEL")
            if wheel is None:
                dl = tmp / "download"
                _run([*_pip_cmd(), "download", "--no-deps", "--only-binary=:all:", "--platform",
                      "manylinux_2_35_x86_64", "--python-version", "3.11", "-d", str(dl), PYTRITON_REQUIREMENT],
                     f"pip download {PYTRITON_REQUIREMENT}")
                wheels = sorted(dl.glob("nvidia_pytriton-*.whl"))
                if not wheels:
                    raise TritonServerError(f"pip download produced no wheel in {dl}")
                wheel = wheels[0]
            unpacked = tmp / "unpacked"
            with zipfile.ZipFile(wheel) as zf:
                for zi in zf.infolist():
                    if not zi.filename.startswith(_WHEEL_PREFIXES):
                        continue
                    target = Path(zf.extract(zi, unpacked))
                    mode = (zi.external_attr >> 16) & 0o777
                    if mode and not zi.is_dir():
                        target.chmod(mode | 0o444)
            layout = _wheel_layout(unpacked)
            if not layout.executable.is_file():
                raise TritonServerError(f"{wheel} has no pytriton/tritonserver/bin/tritonserver")
            layout.executable.chmod(0o755)
            (unpacked / _COMPLETE).write_text(json.dumps({"wheel": Path(wheel).name, "triton": TRITON_VERSION}))
            if final.exists():  # a leftover without marker
                shutil.rmtree(final)
            os.rename(unpacked, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return _wheel_layout(final)


def _prepare_wheel_backends(install: ServerInstall, version: str) -> Path:
    """``backends-py<ver>/python/``: libtriton_python.so + utils + the stub for ``version``, mode 0755."""
    assert install.stubs is not None
    stub = install.stubs / version / "triton_python_backend_stub"
    if not stub.is_file():
        have = sorted(p.name for p in install.stubs.iterdir())
        raise TritonServerError(f"the Triton wheel has no Python-backend stub for Python {version} (has {have})")
    final = install.backends.parent / f"backends-py{version}"
    if (final / _COMPLETE).is_file():
        return final
    with _locked(final.parent / f".{final.name}.lock"):
        if (final / _COMPLETE).is_file():
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
        try:
            # same depth as backends/python, so the libraries' $ORIGIN/../../../../nvidia_pytriton.libs still works
            shutil.copytree(install.backends, tmp / "b")
            dst = tmp / "b" / "python" / "triton_python_backend_stub"
            shutil.copy2(stub, dst)
            dst.chmod(0o755)
            (tmp / "b" / _COMPLETE).write_text(version)
            if final.exists():
                shutil.rmtree(final)
            os.rename(tmp / "b", final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def find_server(*, install: bool = True, cache: Path | None = None) -> ServerInstall:
    """A system tritonserver if there is one, else the cached wheel install (installing it if ``install``)."""
    system = _system_server()
    if system is not None:
        return system
    final = (cache or cache_dir()) / f"tritonserver-{TRITON_VERSION}"
    if (final / _COMPLETE).is_file():
        return _wheel_layout(final)
    if not install:
        raise TritonServerError("no tritonserver found (PATH, /opt/tritonserver) and the wheel is not installed")
    return install_server(cache)


# ----------------------------------------------------------------------------------------------------------------
# the server process


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_is_free(port: int) -> bool:
    """True if a server could bind 127.0.0.1:``port`` now (nothing listens; TIME_WAIT leftovers are fine,
    servers such as tritonserver bind with SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_LIVE: set[TritonServer] = set()


@atexit.register
def _stop_all() -> None:  # pragma: no cover - interpreter shutdown safety net
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop()


class TritonServer:
    """A tritonserver process serving ``model_repository`` on loopback ports, as a context manager.

    ``http_port``/``grpc_port``/``metrics_port`` default to free ports. ``exit_timeout`` is the server's
    ``--exit-timeout-secs``: how long a graceful stop waits for in-flight requests and open client connections
    (tritonclient keeps HTTP connections alive) before exiting anyway. ``env`` adds/overrides environment
    variables of the server. ``python_env`` is the venv the Python-backend models run in (its ``bin/`` goes first
    on ``PATH``); for the wheel server it defaults to :func:`model_runtime_env` with the packages the repository's
    ``requirements.txt`` records (see :func:`repository_runtime_env`), for a system server (NGC container) to the
    inherited environment. ``extra_args`` are appended to the command line; one that sets
    ``shm-region-prefix-name`` for the python backend replaces the server's own prefix (:attr:`shm_prefix`).

    Example::

        with TritonServer("repo") as server:
            client = tritonclient.http.InferenceServerClient(server.http_url)
    """

    def __init__(
        self,
        model_repository: str | os.PathLike[str],
        *,
        http_port: int | None = None,
        grpc_port: int | None = None,
        metrics_port: int | None = None,
        env: Mapping[str, str] | None = None,
        python_env: str | os.PathLike[str] | None = None,
        startup_timeout: float = 120.0,
        exit_timeout: int = 5,
        log_verbose: int = 0,
        log_path: str | os.PathLike[str] | None = None,
        extra_args: Sequence[str] = (),
        install: ServerInstall | None = None,
    ) -> None:
        self.model_repository = Path(model_repository).resolve()
        self._ports_fixed = {"http": http_port, "grpc": grpc_port, "metrics": metrics_port}
        self._env = dict(env or {})
        self._python_env = Path(python_env).resolve() if python_env else None
        self.startup_timeout = startup_timeout
        self.exit_timeout = exit_timeout
        self.log_verbose = log_verbose
        self._log_path_arg = Path(log_path) if log_path else None
        self.extra_args = list(extra_args)
        self._install = install
        self.process: subprocess.Popen[bytes] | None = None
        self.http_port = self.grpc_port = self.metrics_port = 0
        self._tmpdir: Path | None = None
        self._log_path: Path | None = None
        self._final_log: str | None = None
        self.command: list[str] = []
        self.shm_prefix = _own_shm_prefix(self.extra_args)
        # models that failed to load, with the server's reason (set at start; with --exit-on-error=false in
        # extra_args the server starts anyway and serves the others)
        self.failures: dict[str, str] = {}

    # -- public properties ------------------------------------------------------------------------------------
    @property
    def http_url(self) -> str:
        """``host:port`` for ``tritonclient.http`` (no scheme, as tritonclient expects)."""
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        """``host:port`` for ``tritonclient.grpc``."""
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        """Prometheus metrics endpoint."""
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    @property
    def log_path(self) -> Path | None:
        """File the server's stdout/stderr go to (removed at stop unless ``log_path`` was given)."""
        return self._log_path

    @property
    def log(self) -> str:
        """The server log so far (kept after stop)."""
        if self._final_log is not None:
            return self._final_log
        if self._log_path is not None and self._log_path.is_file():
            return self._log_path.read_text(errors="replace")
        return ""

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    # -- lifecycle --------------------------------------------------------------------------------------------
    def __enter__(self) -> TritonServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _environment(self, install: ServerInstall) -> tuple[dict[str, str], str | None]:
        env = dict(os.environ)
        env.pop("PYTHONHOME", None)
        py_env = self._python_env
        if py_env is None and install.from_wheel:
            py_env = repository_runtime_env(self.model_repository)
        version = None
        lib_dirs = [str(d) for d in install.lib_dirs if d.is_dir()]
        if py_env is not None:
            python = py_env / "bin" / "python3"
            if not python.exists():
                raise TritonServerError(f"python_env {py_env} has no bin/python3")
            info = python_info(python)
            version = info.version
            lib_dirs.insert(0, str(_find_libpython(info).parent))
            env["PATH"] = f"{py_env / 'bin'}{os.pathsep}{env.get('PATH', '')}"
            env["VIRTUAL_ENV"] = str(py_env)
        if env.get("LD_LIBRARY_PATH"):
            lib_dirs.append(env["LD_LIBRARY_PATH"])
        env["LD_LIBRARY_PATH"] = os.pathsep.join(lib_dirs)
        env.update(self._env)
        return env, version

    def start(self) -> TritonServer:
        """Start the server and wait until it is ready; raise :class:`TritonServerError` with the log if not."""
        if self.running:
            return self
        _sweep_stale_shm()
        if not self.model_repository.is_dir():
            raise TritonServerError(f"model repository {self.model_repository} is not a directory")
        install = self._install or find_server()
        env, version = self._environment(install)
        backends = install.backend_directory(version)
        attempts = 1 if all(self._ports_fixed.values()) else 3
        for attempt in range(attempts):
            self._pick_ports()
            if self._tmpdir is None:
                self._tmpdir = Path(tempfile.mkdtemp(prefix="triton-textops-server-"))
            self._log_path = self._log_path_arg or self._tmpdir / f"tritonserver-{attempt}.log"
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            self.command = [
                str(install.executable),
                f"--model-repository={self.model_repository}",
                f"--backend-directory={backends}",
                "--http-address=127.0.0.1", f"--http-port={self.http_port}",
                "--grpc-address=127.0.0.1", f"--grpc-port={self.grpc_port}",
                "--metrics-address=127.0.0.1", f"--metrics-port={self.metrics_port}",
                f"--log-verbose={self.log_verbose}",
                f"--exit-timeout-secs={self.exit_timeout}",
            ]
            if install.from_wheel:
                self.command.append(f"--cache-directory={install.executable.parent.parent / 'caches'}")
            self.command += [f"--backend-config={b},shm-region-prefix-name={self.shm_prefix}{b}_"
                             for b in _python_backends(self.model_repository, backends)
                             if not _sets_shm_prefix(self.extra_args, b)]
            self.command += self.extra_args
            self._final_log = None
            with open(self._log_path, "wb") as log:
                # own session: the server and its stub processes form one process group we can reap.
                # cwd: the 24.10 stub puts '' (the server's working directory) first on the models'
                # sys.path, so starting in the caller's directory could shadow packages of the model env.
                self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                                preexec_fn=_die_with_parent, cwd=self._tmpdir)
            _LIVE.add(self)
            try:
                self._wait_ready()
                return self
            except TritonServerError as err:
                text = self.log
                self.stop()
                port_clash = "already in use" in text.lower() or "failed to start" in text.lower()
                if attempt + 1 < attempts and port_clash:
                    continue
                raise err
        raise AssertionError("unreachable")

    def _pick_ports(self) -> None:
        chosen: set[int] = set()
        for kind in ("http", "grpc", "metrics"):
            port = self._ports_fixed[kind]
            while port is None or (self._ports_fixed[kind] is None and port in chosen):
                port = free_port()
            chosen.add(port)
            setattr(self, f"{kind}_port", port)

    def _fail(self, why: str) -> TritonServerError:
        text = self.log
        tail = text[-_LOG_TAIL_CHARS:]
        cut = "" if len(tail) == len(text) else f"(last {_LOG_TAIL_CHARS} chars of {self._log_path})\n"
        failures = load_failures(text)
        summary = "".join(f"\nfailed to load {m}: {r}" for m, r in failures.items())
        return TritonServerError(f"{why}{summary}\ncommand: {' '.join(self.command)}\n--- tritonserver log ---\n"
                                 f"{cut}{tail}", failures)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        url = f"http://{self.http_url}/v2/health/ready"
        # with --exit-on-error=false a model that failed to load keeps /ready at 503 (strict readiness) while the
        # server serves the others: it is up once it is live and no model is still loading
        tolerate = not _exit_on_error(self.extra_args)
        assert self.process is not None
        while True:
            rc = self.process.poll()
            if rc is not None:
                raise self._fail(f"tritonserver exited with code {rc} during startup")
            try:
                with urllib.request.urlopen(url, timeout=1.0) as resp:
                    if resp.status == 200 and _port_open(self.grpc_port):
                        self.failures = load_failures(self.log)
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if tolerate and self._loaded_with_failures():
                self.failures = load_failures(self.log)
                return
            if time.monotonic() > deadline:
                raise self._fail(f"tritonserver not ready after {self.startup_timeout:.0f}s")
            time.sleep(0.1)

    def _loaded_with_failures(self) -> bool:
        """Live, gRPC up, every model of the repository index settled (none LOADING) and at least one UNAVAILABLE."""
        try:
            with urllib.request.urlopen(f"http://{self.http_url}/v2/health/live", timeout=1.0) as resp:
                if resp.status != 200 or not _port_open(self.grpc_port):
                    return False
            req = urllib.request.Request(f"http://{self.http_url}/v2/repository/index", data=b"{}", method="POST")
            with urllib.request.urlopen(req, timeout=2.0) as resp:
                index = json.loads(resp.read())
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
            return False
        states = [m.get("state", "") for m in index]
        return bool(states) and "LOADING" not in states and "UNAVAILABLE" in states

    def stop(self) -> int | None:
        """Stop the server: SIGINT (graceful), then SIGTERM, then SIGKILL; reap its stub processes.

        Returns the server's exit code (None if it was not started).
        """
        proc = self.process
        rc = None
        if proc is not None:
            rc = proc.poll()
            for sig, wait in ((signal.SIGINT, self.exit_timeout + 15.0), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                if rc is not None:
                    break
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    rc = proc.wait(timeout=wait)
            # stubs left behind (they normally exit with the server) share its process group
            _kill_group(proc.pid)
            self.process = None
        # the Python backend leaves its regions when the server is killed or exits before its stubs are done
        remove_shm_regions(self.shm_prefix)
        _LIVE.discard(self)
        if self._log_path is not None and self._final_log is None:
            self._final_log = self.log
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
            if self._log_path_arg is None:
                self._log_path = None
        return rc


    def probe(self, models: Sequence[str] | None = None, *, timeout: float = 10.0) -> list[ProbeResult]:
        """Send one tiny real inference to each model of ``models`` (default: every Python-backend model) and
        return the results; raise :class:`TritonServerError` naming each model that did not answer correctly.

        Unlike ``/v2/health/ready`` this notices a model whose stub process died (:mod:`triton_textops.tools.probe`).
        """
        from triton_textops.tools.probe import probe  # noqa: PLC0415

        results = probe(self.http_url, models, timeout=timeout)
        failed = [r for r in results if not r.ok]
        if failed or not results:
            lines = [r.render() for r in failed] or ["no python models to probe (name one)"]
            raise TritonServerError("liveness probe failed:\n" + "\n".join(lines))
        return results


def repository_runtime_env(repository: str | os.PathLike[str]) -> Path:
    """The model runtime env for ``repository``: :func:`model_runtime_env` plus the packages its
    ``requirements.txt`` records (written by ``repo create`` / ``example readability``), cached per package set.
    When every python model names its own ``EXECUTION_ENV_PATH`` (``--pack-env``) those run there, so the record
    is not installed again."""
    packages = read_requirements(repository) or ()
    if packages and _all_python_models_have_env(Path(repository)):
        packages = ()
    return model_runtime_env(packages=packages)


def _all_python_models_have_env(repository: Path) -> bool:
    try:
        from triton_textops.triton.config import ConfigError, load_config  # noqa: PLC0415
    except ImportError:  # pragma: no cover - the config schema comes with tritonclient (the 'server' extra)
        return False
    found = False
    for model in sorted(p for p in repository.iterdir() if (p / "config.pbtxt").is_file()):
        try:
            cfg = load_config(model)
        except (ConfigError, OSError, ValueError):
            return False
        if cfg.backend == "python":
            env = cfg.parameters.get("EXECUTION_ENV_PATH")
            if env is None or not env.string_value:
                return False
            found = True
    return found


# ----------------------------------------------------------------------------------------------------------------
# shared memory of the Python backend


def _pid_namespace() -> int:
    """Inode of this process's pid namespace: a pid in a region name means something only inside it."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _own_shm_prefix(extra_args: Sequence[str]) -> str:
    """This server's region prefix: the caller's ``shm-region-prefix-name`` for ``python`` if given, else
    ``triton_textops_<pid namespace>_<pid>_<random>_`` (per backend, ``<backend>_`` is appended)."""
    for arg in extra_args:
        value = _shm_prefix_arg(arg, "python")
        if value:
            return value
    return f"{SHM_PREFIX}{_pid_namespace()}_{os.getpid()}_{uuid.uuid4().hex[:8]}_"


def _shm_prefix_arg(arg: str, backend: str) -> str | None:
    head = f"--backend-config={backend},shm-region-prefix-name="
    return arg[len(head):] if arg.startswith(head) else None


def _sets_shm_prefix(extra_args: Sequence[str], backend: str) -> bool:
    return any(_shm_prefix_arg(a, backend) is not None for a in extra_args)


def _python_backends(repository: Path, backends: Path) -> list[str]:
    """``python`` plus the Python-based backends (``<backend dir>/<name>/model.py``) the repository's models use:
    each loads libtriton_python.so under its own name, with its own backend config."""
    names = {"python"}
    try:
        from triton_textops.triton.config import ConfigError, load_config  # noqa: PLC0415
    except ImportError:  # pragma: no cover - the config schema comes with tritonclient (the 'server' extra)
        return ["python"]
    for model in sorted(p for p in repository.iterdir() if (p / "config.pbtxt").is_file()):
        try:
            backend = load_config(model).backend
        except (ConfigError, OSError, ValueError):
            continue  # the server reports a broken config itself
        if backend and backend != "python" and (backends / backend / "model.py").is_file():
            names.add(backend)
    return sorted(names)


def shm_regions(prefix: str) -> list[Path]:
    """The shared-memory regions in ``/dev/shm`` whose names start with ``prefix``."""
    if not prefix or not SHM_DIR.is_dir():
        return []
    return sorted(p for p in SHM_DIR.iterdir() if p.name.startswith(prefix))


def remove_shm_regions(prefix: str) -> list[str]:
    """Unlink the regions of ``prefix`` (call only once their server has exited); returns their names."""
    removed = []
    for region in shm_regions(prefix):
        with contextlib.suppress(FileNotFoundError):
            region.unlink()
            removed.append(region.name)
    return removed


def _sweep_stale_shm() -> None:
    """Remove regions of earlier TritonServers whose starting process (same pid namespace) no longer exists:
    what a starter killed before it could stop its server leaves behind."""
    ns = f"{SHM_PREFIX}{_pid_namespace()}_"
    for region in shm_regions(ns):
        pid = region.name[len(ns):].split("_", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(FileNotFoundError):
                region.unlink()
        except PermissionError:
            pass  # alive, another user's


def _die_with_parent() -> None:
    """In the child before exec: get SIGINT (graceful stop) when the starting thread dies, even by SIGKILL.

    Linux ``PR_SET_PDEATHSIG``; it fires when the *thread* that started the server exits, so start servers from a
    thread that outlives them (the main thread, typically). No-op where unavailable.
    """
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGINT), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


def _kill_group(pgid: int) -> None:
    for _ in range(50):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


# ----------------------------------------------------------------------------------------------------------------
# CLI: triton-textops serve REPO


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``triton-textops serve``."""
    p = sub.add_parser(
        "serve", help="run a real tritonserver on a model repository until Ctrl-C",
        description="Run a real tritonserver (the one on PATH or in /opt/tritonserver, else Triton 2.51 from the "
        "nvidia-pytriton wheel, downloaded once, ~55 MB) on REPOSITORY, on loopback ports, until Ctrl-C. Python "
        "models run in a cached model env with numpy<2, triton-textops and the repository's requirements.txt. "
        "When models fail to load, one line per model gives the server's reason. Arguments after -- go to "
        "tritonserver as they are, e.g.: triton-textops serve REPO -- --exit-on-error=false --log-verbose=1")
    p.add_argument("repository", help="model repository directory")
    p.add_argument("--http-port", type=int, default=None, help="HTTP/REST port (default: a free port)")
    p.add_argument("--grpc-port", type=int, default=None, help="gRPC port (default: a free port)")
    p.add_argument("--metrics-port", type=int, default=None, help="Prometheus metrics port (default: a free port)")
    p.add_argument("--python-env", default=None,
                   help="venv the Python-backend models run in, with numpy<2 and triton-textops (default: the "
                        "cached model env, built on first use)")
    p.add_argument("--log-verbose", type=int, default=0, help="tritonserver --log-verbose level (default 0)")
    p.add_argument("--log-file", default=None,
                   help="keep the server log in this file (default: a temporary file, kept only when the server "
                        "fails)")
    p.add_argument("--startup-timeout", type=float, default=300.0,
                   help="seconds to wait for the server and its models to be ready (default 300)")
    p.set_defaults(func=_serve, passthrough=[])
    p.usage = "%(prog)s [options] repository [-- TRITONSERVER_ARG ...]"
    p.epilog = ("-- TRITONSERVER_ARG ...: more tritonserver arguments, each --name=value; they come last on its "
                "command line, so they win over the ones this command sets")


def _exit_on_error(args: Sequence[str]) -> bool:
    """tritonserver's --exit-on-error (default true) as the extra arguments leave it (the last one wins)."""
    value = True
    for a in args:
        if a.startswith("--exit-on-error="):
            value = a.split("=", 1)[1].strip().lower() not in ("false", "0", "no", "off")
    return value


def _print_failures(failures: Mapping[str, str], log_file: Path | None) -> None:
    print(f"tritonserver could not load {len(failures)} model(s):", file=sys.stderr)
    for model, reason in failures.items():
        print(f"  {model}: {reason}", file=sys.stderr)
    if log_file is not None:
        print(f"full server log: {log_file}", file=sys.stderr)


def _serve(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    extra = list(args.passthrough)
    bad = [a for a in extra if not a.startswith("-")]
    if bad:
        print(f"triton-textops serve: error: unexpected argument(s) {bad}; tritonserver arguments go after --, "
              "each written --name=value", file=sys.stderr)
        return 2
    try:
        find_server(install=False)
        print("preparing tritonserver...", flush=True)
    except TritonServerError:
        print("preparing tritonserver (first run: downloads the nvidia-pytriton wheel, ~55 MB, once)...", flush=True)
    keep_log = args.log_file is not None
    if keep_log:
        log_file = Path(args.log_file)
    else:
        fd, name = tempfile.mkstemp(prefix="triton-textops-serve-", suffix=".log")
        os.close(fd)
        log_file = Path(name)
    server = TritonServer(args.repository, http_port=args.http_port, grpc_port=args.grpc_port,
                          metrics_port=args.metrics_port, python_env=args.python_env,
                          startup_timeout=args.startup_timeout, log_verbose=args.log_verbose, log_path=log_file,
                          extra_args=extra)

    def _interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # SIGTERM/SIGHUP (kill, closed terminal) stop the server like Ctrl-C instead of orphaning it
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    try:
        server.start()
    except KeyboardInterrupt:
        server.stop()
        return 130
    except TritonServerError as err:
        logged = log_file.is_file() and log_file.stat().st_size > 0  # empty: the server never ran
        if not logged and not keep_log:
            log_file.unlink(missing_ok=True)
        if err.failures:
            _print_failures(err.failures, log_file if logged else None)
        else:
            print(err, file=sys.stderr)
            if logged:
                print(f"full server log: {log_file}", file=sys.stderr)
        return 1
    print(f"tritonserver ready in {time.monotonic() - t0:.1f}s serving {server.model_repository}\n"
          f"  HTTP    {server.http_url}\n  gRPC    {server.grpc_url}\n  metrics {server.metrics_url}\n"
          f"  log     {server.log_path}\n  probe   triton-textops probe {server.http_url}\n"
          "Press Ctrl-C to stop.", flush=True)
    if server.failures:  # --exit-on-error=false: it serves the others
        _print_failures(server.failures, None)
    try:
        while server.running:
            time.sleep(0.5)
        failures = load_failures(server.log)
        if failures:
            _print_failures(failures, log_file)
        else:
            print(server.log[-_LOG_TAIL_CHARS:], file=sys.stderr)
        print(f"tritonserver exited unexpectedly (full log: {log_file})", file=sys.stderr)
        keep_log = True
        return 1
    except KeyboardInterrupt:
        print("stopping...", flush=True)
        return 0
    finally:
        server.stop()
        if not keep_log:
            log_file.unlink(missing_ok=True)
