"""Triton's own load generator, ``perf_analyzer``: found or set up (cached, nothing system-wide), run, CSV read.

Where the binary comes from, in order:

1. ``$TRITON_TEXTOPS_PERF_ANALYZER`` (path to a ``perf_analyzer`` binary) or ``perf_analyzer`` on ``PATH``
   (the NGC ``-sdk`` container): used as installed.
2. Otherwise the real binary shipped in the ``tritonclient==2.51.0`` wheel
   (``tritonclient-2.51.0.data/data/bin/perf_analyzer``, the release of our server) is unpacked into the cache
   directory of :mod:`triton_textops.tools.server`, with the two shared libraries it needs beside the usual
   system ones: ``libcudart.so.12`` from the ``nvidia-cuda-runtime-cu12`` wheel (loaded even for CPU-only runs)
   and ``libb64.so.0d`` (base64), taken from the system when it has one, else from the Debian/Ubuntu package
   ``libb64-0d`` fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x`` (nothing is installed).
   Later wheels no longer ship the binary (2.73.0 has none), and for Python 3.11 pip resolves the
   ``perf-analyzer`` package only to a 2.3 kB ``0.1.0`` wheel without it (both checked 2026-12-01).

Cache layout (next to ``tritonserver-2.51.0/``)::

    perf_analyzer-2.51.0/
        bin/perf_analyzer
        lib/libcudart.so.12, lib/libb64.so.0d (the latter only when the system has none)
        .complete

:func:`run_perf_analyzer` runs one measurement (one concurrency level or one request rate) against a running
server and returns the rows of its CSV (``-f``) as :class:`PerfRow`; :func:`write_input_data` writes the
``--input-data`` JSON for real inputs (texts for BYTES tensors, arrays with their shapes).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import fcntl
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from triton_textops.tools.proc import run
from triton_textops.tools.server import TRITON_VERSION, cache_dir

TRITONCLIENT_REQUIREMENT = f"tritonclient=={TRITON_VERSION}"  # the last wheel with the binary; = our server
CUDART_REQUIREMENT = "nvidia-cuda-runtime-cu12==12.9.79"
LIBB64_PACKAGE = "libb64-0d"
LIBB64 = "libb64.so.0d"
CUDART = "libcudart.so.12"
_WHEEL_BINARY = f"tritonclient-{TRITON_VERSION}.data/data/bin/perf_analyzer"
_WHEEL_CUDART = f"nvidia/cuda_runtime/lib/{CUDART}"
_COMPLETE = ".complete"
# explicit --platform tags are taken literally by pip: without manylinux1 it picks tritonclient's py3-none-any
# wheel, which has no binary
_PLATFORMS = ("manylinux1_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")

# perf_analyzer's CSV (-f): the load, throughput, the time split (Client Send, ..., Server Queue, Server Compute
# Infer, ...) and client-side latency percentiles, all times in microseconds
CSV_THROUGHPUT = "Inferences/Second"
CSV_LATENCIES = ("p50 latency", "p90 latency", "p95 latency", "p99 latency")
CSV_LOADS = ("Concurrency", "Request Rate")


class PerfAnalyzerError(RuntimeError):
    """perf_analyzer could not be found, set up or run (the message says what is missing or its output)."""


@dataclass(frozen=True)
class PerfAnalyzer:
    """A runnable perf_analyzer: the binary and the library directories it needs on ``LD_LIBRARY_PATH``."""

    executable: Path
    lib_dirs: tuple[Path, ...]
    origin: str  # "env", "path" or "wheel"

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with our library directories first."""
        env = dict(os.environ if base is None else base)
        dirs = [str(d) for d in self.lib_dirs]
        if env.get("LD_LIBRARY_PATH"):
            dirs.append(env["LD_LIBRARY_PATH"])
        if dirs:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(dirs)
        return env

    def version(self) -> str:
        """``Perf Analyzer Version ...`` as the binary prints it; :class:`PerfAnalyzerError` if it cannot run."""
        proc = subprocess.run([str(self.executable), "--version"], capture_output=True, text=True,
                              env=self.environment(), timeout=60)
        text = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0 or "Perf Analyzer Version" not in text:
            missing = _missing_libraries(self.executable, self.environment())
            why = f"; missing shared libraries: {', '.join(missing)}" if missing else ""
            raise PerfAnalyzerError(f"{self.executable} does not run (exit {proc.returncode}){why}\n{text[-2000:]}")
        return next(line for line in text.splitlines() if "Perf Analyzer Version" in line).strip()


# ----------------------------------------------------------------------------------------------------------------
# finding / setting up


def _system_perf_analyzer() -> PerfAnalyzer | None:
    for origin, cand in (("env", os.environ.get("TRITON_TEXTOPS_PERF_ANALYZER")),
                         ("path", shutil.which("perf_analyzer"))):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return PerfAnalyzer(Path(cand).resolve(), (), origin)
    return None


def _layout(root: Path) -> PerfAnalyzer:
    return PerfAnalyzer(root / "bin" / "perf_analyzer", (root / "lib",), "wheel")


def find_perf_analyzer(*, install: bool = True, cache: Path | None = None) -> PerfAnalyzer:
    """A perf_analyzer that runs: the system's if there is one, else the cached one (set up now if ``install``)."""
    system = _system_perf_analyzer()
    if system is not None:
        return system
    final = (cache or cache_dir()) / f"perf_analyzer-{TRITON_VERSION}"
    if (final / _COMPLETE).is_file():
        return _layout(final)
    if not install:
        raise PerfAnalyzerError("no perf_analyzer on PATH and none set up in the cache (call install_perf_analyzer)")
    return install_perf_analyzer(cache)


def install_perf_analyzer(cache: Path | None = None) -> PerfAnalyzer:
    """Set up perf_analyzer from the tritonclient 2.51.0 wheel in the cache (once) and return it.

    Built in a temporary directory and renamed into place once ``perf_analyzer --version`` runs, so an
    interrupted or failed set-up never looks complete. Raises :class:`PerfAnalyzerError` naming what could not
    be obtained and how to provide it."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        raise PerfAnalyzerError(f"the tritonclient wheel's perf_analyzer is built for Linux x86_64, not "
                                f"{sys.platform} {platform.machine()}; set TRITON_TEXTOPS_PERF_ANALYZER to one")
    root = cache or cache_dir()
    final = root / f"perf_analyzer-{TRITON_VERSION}"
    with _locked(root / f".{final.name}.lock"):
        if (final / _COMPLETE).is_file():
            return _layout(final)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=root))
        try:
            build = tmp / "pa"
            (build / "bin").mkdir(parents=True)
            (build / "lib").mkdir()
            exe = build / "bin" / "perf_analyzer"
            _extract(_download(TRITONCLIENT_REQUIREMENT, tmp / "dl-client"), _WHEEL_BINARY, exe)
            exe.chmod(0o755)
            _extract(_download(CUDART_REQUIREMENT, tmp / "dl-cudart"), _WHEEL_CUDART, build / "lib" / CUDART)
            layout = _layout(build)
            if LIBB64 in _missing_libraries(exe, layout.environment()):
                _fetch_libb64(tmp / "deb", build / "lib")
            version = layout.version()
            (build / _COMPLETE).write_text(json.dumps({"version": version, "from": TRITONCLIENT_REQUIREMENT}))
            if final.exists():
                shutil.rmtree(final)
            os.rename(build, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return _layout(final)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Exclusive inter-process lock (parallel test processes set the cache entry up once)."""
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _download(requirement: str, dest: Path) -> Path:
    """``pip download --no-deps`` of one binary wheel (Linux x86_64) into ``dest``; the wheel's path."""
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "download", "--no-deps",
           "--only-binary=:all:", *(a for tag in _PLATFORMS for a in ("--platform", tag)),
           "--python-version", f"{sys.version_info.major}.{sys.version_info.minor}", "-d", str(dest), requirement]
    run(cmd, f"perf_analyzer set-up: pip download {requirement}", error=PerfAnalyzerError)
    wheels = sorted(dest.glob("*.whl")) if dest.is_dir() else []
    if not wheels:
        raise PerfAnalyzerError(f"perf_analyzer set-up: pip download {requirement} left no wheel in {dest}")
    return wheels[0]


def _extract(wheel: Path, member: str, target: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        try:
            data = zf.read(member)
        except KeyError:
            raise PerfAnalyzerError(f"perf_analyzer set-up: {wheel.name} has no {member}") from None
    target.write_bytes(data)


def _fetch_libb64(work: Path, lib: Path) -> None:
    """``libb64.so.0d`` from the Debian/Ubuntu package, downloaded and unpacked without installing it."""
    hint = (f"perf_analyzer needs {LIBB64}: install the package {LIBB64_PACKAGE} (Debian/Ubuntu) or put a "
            f"directory holding {LIBB64} on LD_LIBRARY_PATH, then run again")
    apt, dpkg = shutil.which("apt-get"), shutil.which("dpkg-deb")
    if not apt or not dpkg:
        raise PerfAnalyzerError(f"{hint} (no apt-get/dpkg-deb here to fetch it)")
    work.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([apt, "download", LIBB64_PACKAGE], cwd=work, capture_output=True, text=True)
    debs = sorted(work.glob(f"{LIBB64_PACKAGE}_*.deb"))
    if proc.returncode != 0 or not debs:
        raise PerfAnalyzerError(f"{hint} (`apt-get download {LIBB64_PACKAGE}` failed, exit {proc.returncode}; "
                                f"an empty package list needs `apt-get update` first):\n{proc.stderr[-2000:]}")
    unpacked = work / "x"
    proc = subprocess.run([dpkg, "-x", str(debs[0]), str(unpacked)], capture_output=True, text=True)
    found = sorted(unpacked.rglob(LIBB64)) if proc.returncode == 0 else []
    if not found:
        raise PerfAnalyzerError(f"{hint} (`dpkg-deb -x {debs[0].name}` gave no {LIBB64}): {proc.stderr[-2000:]}")
    shutil.copyfile(found[0], lib / LIBB64)


def _missing_libraries(exe: Path, env: Mapping[str, str]) -> list[str]:
    """Shared libraries of ``exe`` that the loader cannot find under ``env`` (``ldd``; [] if ldd is missing)."""
    ldd = shutil.which("ldd")
    if not ldd:
        return []
    proc = subprocess.run([ldd, str(exe)], capture_output=True, text=True, env=dict(env))
    return [line.split("=>")[0].strip() for line in proc.stdout.splitlines() if "not found" in line]


# ----------------------------------------------------------------------------------------------------------------
# input data


def write_input_data(path: str | os.PathLike[str], entries: Sequence[Mapping[str, Any]]) -> Path:
    """Write perf_analyzer's ``--input-data`` JSON: one request's tensors per entry (without the batch dim).

    A value is a ``str``/``bytes`` (one BYTES element), a sequence of them, or an array (any shape; written as
    ``{"content": [...], "shape": [...]}`` so variable dims are given per entry). perf_analyzer sends the entries
    round robin; with ``-b N`` a request takes N of them."""
    data = []
    for entry in entries:
        row: dict[str, Any] = {}
        for name, value in entry.items():
            if isinstance(value, (str, bytes)):
                value = [value]
            arr = np.asarray(value, dtype=object if _is_text(value) else None)
            if arr.dtype == object:
                content = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in arr.ravel()]
            else:
                content = arr.ravel().tolist()
            row[name] = {"content": content, "shape": list(arr.shape)}
        data.append(row)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"data": data}, ensure_ascii=False), encoding="utf-8")
    return out


def _is_text(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.dtype == object or value.dtype.kind in "SU"
    return bool(value) and all(isinstance(v, (str, bytes)) for v in value)


# ----------------------------------------------------------------------------------------------------------------
# running


@dataclass
class PerfRow:
    """One line of perf_analyzer's CSV: the load (concurrency or request rate), throughput, client latencies."""

    mode: str  # "concurrency" or "request_rate"
    load: float
    throughput: float  # inferences/s (= rows/s: requests/s x batch size)
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    raw: dict[str, str] = field(default_factory=dict)  # every CSV column as written


def read_csv(path: str | os.PathLike[str]) -> list[PerfRow]:
    """The measurement rows of a perf_analyzer ``-f`` CSV (latencies converted from microseconds to ms)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        load_col = next((c for c in CSV_LOADS if c in r), None)
        if load_col is None or CSV_THROUGHPUT not in r or not r[load_col]:
            raise PerfAnalyzerError(f"{path}: not a perf_analyzer CSV (columns {list(r)})")
        lat = [float(r[c]) / 1e3 if r.get(c) else float("nan") for c in CSV_LATENCIES]
        out.append(PerfRow("concurrency" if load_col == "Concurrency" else "request_rate", float(r[load_col]),
                           float(r[CSV_THROUGHPUT]), *lat, raw=dict(r)))
    return out


def run_perf_analyzer(
    pa: PerfAnalyzer,
    model: str,
    url: str,
    csv_path: str | os.PathLike[str],
    *,
    concurrency: int | None = None,
    request_rate: float | None = None,
    input_data: str | os.PathLike[str] | None = None,
    batch_size: int = 1,
    protocol: str = "grpc",
    shared_memory: str = "none",
    output_shared_memory_size: int | None = None,
    measurement_interval_ms: int = 5000,
    stability_percentage: float = 10.0,
    max_trials: int = 10,
    extra_args: Sequence[str] = (),
    timeout: float | None = None,
) -> list[PerfRow]:
    """Measure ``model`` at one concurrency level or one request rate (exactly one of them) and return its rows.

    ``url`` is the server's ``host:port`` for ``protocol`` (``grpc`` or ``http``). ``shared_memory``
    ``"system"`` passes the tensors through system shared memory instead of the socket (same machine only).
    perf_analyzer repeats windows of ``measurement_interval_ms`` until the last three agree within
    ``stability_percentage`` (at most ``max_trials``); raises :class:`PerfAnalyzerError` with its output if it
    fails, writes no CSV or does not finish within ``timeout`` seconds."""
    if (concurrency is None) == (request_rate is None):
        raise ValueError("give exactly one of concurrency and request_rate")
    csv_file = Path(csv_path)
    csv_file.parent.mkdir(parents=True, exist_ok=True)
    csv_file.unlink(missing_ok=True)
    cmd = [str(pa.executable), "-m", model, "-u", url, "-i", protocol, "-b", str(batch_size),
           "--measurement-interval", str(measurement_interval_ms),
           "--stability-percentage", f"{stability_percentage:g}", "--max-trials", str(max_trials),
           "--shared-memory", shared_memory, "-f", str(csv_file)]
    if concurrency is not None:
        cmd += ["--concurrency-range", str(int(concurrency))]
    else:
        cmd += ["--request-rate-range", f"{request_rate:g}"]
    if input_data is not None:
        cmd += ["--input-data", str(input_data)]
    if output_shared_memory_size is not None:
        cmd += ["--output-shared-memory-size", str(output_shared_memory_size)]
    cmd += list(extra_args)
    proc = run(cmd, "perf_analyzer", error=PerfAnalyzerError, env=pa.environment(), timeout=timeout)
    if not csv_file.is_file():
        raise PerfAnalyzerError(f"perf_analyzer wrote no {csv_file}: {' '.join(cmd)}\n"
                                f"{(proc.stdout + proc.stderr)[-3000:]}")
    return read_csv(csv_file)


# ----------------------------------------------------------------------------------------------------------------
# command line


def add_parser(sub: argparse._SubParsersAction) -> None:
    """``triton-textops perf-analyzer [ARGS...]``: run perf_analyzer (set up on first use) with ARGS."""
    p = sub.add_parser("perf-analyzer", help="run Triton's perf_analyzer (set up in the cache on first use)",
                       description="Run perf_analyzer with ARGS (e.g. -m preprocess -u 127.0.0.1:8001 -i grpc "
                       "--concurrency-range 1:8:2). Without ARGS: set it up and print where it is.")
    p.add_argument("pa_args", nargs=argparse.REMAINDER, help="arguments passed to perf_analyzer")
    p.set_defaults(func=_cli)


def _cli(args: argparse.Namespace) -> int:
    try:
        pa = find_perf_analyzer()
        if not args.pa_args:
            print(f"{pa.version()}\n{pa.executable} ({pa.origin})\n"
                  f"LD_LIBRARY_PATH={os.pathsep.join(str(d) for d in pa.lib_dirs)}")
            return 0
    except PerfAnalyzerError as err:
        print(f"triton-textops perf-analyzer: error: {err}", file=sys.stderr)
        return 1
    pa_args = args.pa_args[1:] if args.pa_args[:1] == ["--"] else args.pa_args
    return subprocess.run([str(pa.executable), *pa_args], env=pa.environment()).returncode
