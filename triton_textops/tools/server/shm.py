"""The Python backend's shared-memory regions: one prefix per server, removed once it has exited."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Sequence
from pathlib import Path

SHM_DIR = Path("/dev/shm")
SHM_PREFIX = "triton_textops_"  # + <pid of the starting process>_<8 hex>_ ; python_backend appends a UUID

def _pid_namespace() -> int:
    """Inode of this process's pid namespace: a pid in a region name means something only inside it."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def own_shm_prefix(extra_args: Sequence[str]) -> str:
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


def sets_shm_prefix(extra_args: Sequence[str], backend: str) -> bool:
    return any(_shm_prefix_arg(a, backend) is not None for a in extra_args)


def python_backends(repository: Path, backends: Path) -> list[str]:
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


def sweep_stale_shm() -> None:
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


