"""`triton-textops serve REPO`: run tritonserver on a repository until interrupted."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from triton_textops.tools.server.errors import TritonServerError, load_failures
from triton_textops.tools.server.install import find_server
from triton_textops.tools.server.process import LOG_TAIL_CHARS, TritonServer


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


def _print_failures(failures: Mapping[str, str], log_file: Path | None) -> None:
    print(f"tritonserver could not load {len(failures)} model(s):", file=sys.stderr)
    for model, reason in failures.items():
        print(f"  {model}: {reason}", file=sys.stderr)
    if log_file is not None:
        print(f"full server log: {log_file}", file=sys.stderr)


def _serve(args: argparse.Namespace) -> int:
    from triton_textops.tools import import_client  # noqa: PLC0415
    from triton_textops.triton.config import model_config_pb2  # noqa: PLC0415

    import_client("http")  # the server extra, checked before a server starts
    model_config_pb2()  # the config schema (the summary reads each config.pbtxt)
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
    server.progress = lambda line: print(f"  {line}", flush=True)
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
    if server.failures:  # --exit-on-error=false: it serves the others (said before "ready", not after it)
        _print_failures(server.failures, None)
    print(f"tritonserver ready in {time.monotonic() - t0:.1f}s serving {server.model_repository}\n"
          f"  HTTP    http://{server.http_url}\n  gRPC    {server.grpc_url}\n  metrics {server.metrics_url}\n"
          f"  log     {server.log_path}\n  probe   triton-textops probe {server.http_url}\n"
          "Press Ctrl-C to stop.", flush=True)
    try:
        while server.running:
            time.sleep(0.5)
        failures = load_failures(server.log)
        if failures:
            _print_failures(failures, log_file)
        else:
            print(server.log[-LOG_TAIL_CHARS:], file=sys.stderr)
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
