"""The tritonserver process: ports, environment, start, readiness (through tritonclient.http), stop, probe."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from triton_textops.tools.interpreter import query_python
from triton_textops.tools.server.errors import TritonServerError, load_failures
from triton_textops.tools.server.install import ServerInstall, find_server
from triton_textops.tools.server.runtime_env import repository_runtime_env, require_libpython
from triton_textops.tools.server.shm import (
    own_shm_prefix,
    python_backends,
    remove_shm_regions,
    sets_shm_prefix,
    sweep_stale_shm,
)

if TYPE_CHECKING:
    from tritonclient.http import InferenceServerClient

    from triton_textops.tools.probe import ProbeResult

T = TypeVar("T")
LOG_TAIL_CHARS = 20000

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
        # called every progress_every_s seconds of a start still waiting (serve prints it: a first load of packed
        # envs, extracted by the server, or a cold numba cache can take minutes)
        self.progress: Callable[[str], None] | None = None
        self.progress_every_s = 15.0
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
        self.shm_prefix = own_shm_prefix(self.extra_args)
        # models that failed to load, with the server's reason (set at start; with --exit-on-error=false in
        # extra_args the server starts anyway and serves the others)
        self.failures: dict[str, str] = {}

    # -- public properties ------------------------------------------------------------------------------------
    @property
    def http_url(self) -> str:
        """``host:port`` for ``tritonclient.http`` (no scheme, as tritonclient expects: ``http://`` + it for a
        URL, as ``serve`` prints it)."""
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
            info = query_python(python, error=TritonServerError)
            version = info.major_minor
            lib_dirs.insert(0, str(require_libpython(info).parent))
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
        sweep_stale_shm()
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
                             for b in python_backends(self.model_repository, backends)
                             if not sets_shm_prefix(self.extra_args, b)]
            self.command += self.extra_args
            self._final_log = None
            with open(self._log_path, "wb") as log:
                # own session: the server and its stub processes form one process group we can reap.
                # cwd: the 24.10 stub puts '' (the server's working directory) first on the models'
                # sys.path, so starting in the caller's directory could shadow packages of the model env.
                self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                                preexec_fn=die_with_parent, cwd=self._tmpdir)
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
        tail = text[-LOG_TAIL_CHARS:]
        cut = "" if len(tail) == len(text) else f"(last {LOG_TAIL_CHARS} chars of {self._log_path})\n"
        failures = load_failures(text)
        summary = "".join(f"\nfailed to load {m}: {r}" for m, r in failures.items())
        return TritonServerError(f"{why}{summary}\ncommand: {' '.join(self.command)}\n--- tritonserver log ---\n"
                                 f"{cut}{tail}", failures)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        # with --exit-on-error=false a model that failed to load keeps /ready at 503 (strict readiness) while the
        # server serves the others: it is up once it is live and no model is still loading
        tolerate = not exit_on_error(self.extra_args)
        assert self.process is not None
        client = _http_client(self.http_url)
        started = last = time.monotonic()
        try:
            while True:
                if self.progress is not None and time.monotonic() - last >= self.progress_every_s:
                    last = time.monotonic()
                    self.progress(f"still starting ({last - started:.0f} s): tritonserver is loading the models (a "
                                  "python model with a packed env extracts it first; numba compiles on a cold cache)")
                rc = self.process.poll()
                if rc is not None:
                    raise self._fail(f"tritonserver exited with code {rc} during startup")
                if _answers(client.is_server_ready) and port_open(self.grpc_port):
                    self.failures = load_failures(self.log)
                    return
                if tolerate and self._loaded_with_failures(client):
                    self.failures = load_failures(self.log)
                    return
                if time.monotonic() > deadline:
                    raise self._fail(f"tritonserver not ready after {self.startup_timeout:.0f}s")
                time.sleep(0.1)
        finally:
            client.close()

    def _loaded_with_failures(self, client: InferenceServerClient) -> bool:
        """Live, gRPC up, every model of the repository index settled (none LOADING) and at least one UNAVAILABLE."""
        if not (_answers(client.is_server_live) and port_open(self.grpc_port)):
            return False
        index = _answers(client.get_model_repository_index)
        states = [m.get("state", "") for m in index or ()]
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
            kill_group(proc.pid)
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

        results = probe(self.http_url, models, timeout=timeout, grpc_url=self.grpc_url)
        failed = [r for r in results if not r.ok]
        if failed or not results:
            lines = [r.render() for r in failed] or ["no python models to probe (name one)"]
            raise TritonServerError("liveness probe failed:\n" + "\n".join(lines))
        return results

def die_with_parent() -> None:
    """In the child before exec: get SIGINT (graceful stop) when the starting thread dies, even by SIGKILL.

    Linux ``PR_SET_PDEATHSIG``; it fires when the *thread* that started the server exits, so start servers from a
    thread that outlives them (the main thread, typically). No-op where unavailable.
    """
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGINT), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


def kill_group(pgid: int) -> None:
    for _ in range(50):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def exit_on_error(args: Sequence[str]) -> bool:
    """tritonserver's --exit-on-error (default true) as the extra arguments leave it (the last one wins)."""
    value = True
    for a in args:
        if a.startswith("--exit-on-error="):
            value = a.split("=", 1)[1].strip().lower() not in ("false", "0", "no", "off")
    return value


def _http_client(url: str) -> InferenceServerClient:
    """A tritonclient.http client for ``host:port`` with short timeouts (the startup loop polls it)."""
    try:
        import tritonclient.http as httpclient  # noqa: PLC0415 - the 'server' extra, needed only to start one
    except ModuleNotFoundError as exc:  # the CLI turns it into one line naming the extra
        raise ModuleNotFoundError("starting tritonserver needs tritonclient[http]: "
                                  "pip install 'triton-textops[server]'", name=exc.name) from exc
    return httpclient.InferenceServerClient(url, connection_timeout=2.0, network_timeout=2.0)


def _answers(call: Callable[[], T]) -> T | None:
    """``call()``'s result, or None while the server does not answer it yet (not up, connection refused)."""
    from tritonclient.utils import InferenceServerException  # noqa: PLC0415

    try:
        return call()
    except (OSError, InferenceServerException):
        return None
