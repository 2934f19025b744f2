"""The cached venv the Python-backend stub runs the models in (numpy<2 for the 24.10 stub, this package,
what the repository's requirements.txt records).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import triton_textops
from triton_textops.tools.interpreter import PythonInfo, query_python
from triton_textops.tools.proc import run
from triton_textops.tools.repo.requirements import read_requirements
from triton_textops.tools.server.cache import COMPLETE_MARKER, cache_dir, locked, pip_cmd
from triton_textops.tools.server.errors import TritonServerError

# numpy<2: the 24.10 stub (pybind11 2.10) returns garbage / aborts on BYTES inputs with NumPy 2.
RUNTIME_REQUIREMENTS: tuple[str, ...] = ("numpy>=1.21,<2", "numba>=0.60")  # numba: the ops are kernels


def require_libpython(info: PythonInfo) -> Path:
    """The shared libpython the stub needs for ``info``'s Python; TritonServerError saying how to get one if none."""
    lib = info.find_libpython()
    if lib is None:
        raise TritonServerError(
            f"The Python-backend stub links libpython{info.major_minor}.so.1.0 dynamically, but {info.executable} has "
            f"no shared libpython (Py_ENABLE_SHARED={info.shared}, LIBDIR={info.libdir}). Use a Python built with "
            "--enable-shared (system, pyenv with PYTHON_CONFIGURE_OPTS=--enable-shared, conda) for the model env.")
    return lib


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
    info = query_python(base, error=TritonServerError)
    require_libpython(info)
    reqs = sorted({*RUNTIME_REQUIREMENTS, *packages})
    pkg = _package_dir()
    key = hashlib.sha256(
        json.dumps([str(base.resolve()), info.major_minor, reqs, str(pkg)]).encode()
    ).hexdigest()[:12]
    root = cache or cache_dir()
    env = root / f"model-env-py{info.major_minor}-{key}"
    if (env / COMPLETE_MARKER).is_file():
        return env
    with locked(root / f".{env.name}.lock"):
        if (env / COMPLETE_MARKER).is_file():
            return env
        if env.exists():
            shutil.rmtree(env)
        # A venv is not relocatable (activate, script shebangs), so it is built in place and marked complete last.
        print(f"building the model runtime env {env} ({', '.join(reqs)}; once, then cached: about a minute)...",
              file=sys.stderr, flush=True)
        run([base, "-m", "venv", "--without-pip", env], "creating the model runtime venv", error=TritonServerError)
        env_python = env / "bin" / "python"
        pip_ok = subprocess.run([*pip_cmd(), "--version"], capture_output=True).returncode == 0
        if pip_ok:
            run([*pip_cmd(), "--python", env_python, "install", "-q", *reqs], "pip install into model env",
                error=TritonServerError)
        else:  # no pip next to us: bootstrap one inside the env
            run([env_python, "-m", "ensurepip", "-q"], "ensurepip in model env", error=TritonServerError)
            run([env_python, "-m", "pip", "install", "-q", *reqs], "pip install into model env",
                error=TritonServerError)
        src = env / "textops-src"
        src.mkdir()
        (src / "triton_textops").symlink_to(pkg, target_is_directory=True)
        site = run([str(env_python), "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
                    "locating site", error=TritonServerError).stdout.strip()
        Path(site, "triton_textops_src.pth").write_text(f"{src}\n")
        check = run([str(env_python), "-c", "import numpy, triton_textops; print(numpy.__version__)"],
                     "checking the model env", error=TritonServerError).stdout.strip()
        if int(check.split(".")[0]) >= 2:
            raise TritonServerError(f"model env got numpy {check}; the 24.10 stub needs numpy<2")
        (env / COMPLETE_MARKER).write_text(json.dumps({"python": str(base), "requirements": reqs, "package": str(pkg)}))
    return env


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


