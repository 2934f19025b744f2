"""``model.tar.gz`` for a SageMaker endpoint running NVIDIA's Triton container (``sagemaker-tritonserver``).

SageMaker extracts the archive into ``/opt/ml/model`` and the container's ``serve`` script starts
``tritonserver --model-repository=/opt/ml/model --model-control-mode=explicit
--load-model=$SAGEMAKER_TRITON_DEFAULT_MODEL_NAME`` (triton-inference-server/server
``docker/sagemaker/serve``). So the model folders sit at the archive root (a ``config.pbtxt`` at the root
is refused by that script), and with several models ``SAGEMAKER_TRITON_DEFAULT_MODEL_NAME`` must name
the one to serve (the ensemble; Triton loads the models it uses with it).

The archive keeps every file byte for byte, with its permission bits (the custom stub stays
executable) and symlinks as links (as in a venv-style execution environment folder); owners are
reset to root and entries are sorted, so the same repository gives the same archive listing.
"""

from __future__ import annotations

import json
import os
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

from triton_textops.tools.deploy import DeployError, RepositoryInfo

__all__ = ["DEFAULT_MODEL_ENV", "ENV_FILE_NAME", "container_environment", "write_model_archive"]

DEFAULT_MODEL_ENV = "SAGEMAKER_TRITON_DEFAULT_MODEL_NAME"
ENV_FILE_NAME = "sagemaker-env.json"


def container_environment(info: RepositoryInfo, default_model: str | None = None,
                          extra: dict[str, str] | None = None) -> dict[str, str]:
    """The container environment: the model to serve, plus ``extra`` (e.g. ``SAGEMAKER_TRITON_*`` settings)."""
    env = {DEFAULT_MODEL_ENV: info.default_model(default_model)}
    for key, value in (extra or {}).items():
        if not key or "=" in key:
            raise DeployError(f"environment variable name {key!r} is not valid")
        if key == DEFAULT_MODEL_ENV and value != env[DEFAULT_MODEL_ENV]:
            raise DeployError(f"set the served model with --default-model, not {DEFAULT_MODEL_ENV}")
        env[key] = str(value)
    return env


def _normalize(ti: tarfile.TarInfo) -> tarfile.TarInfo:
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = "root"
    return ti


def write_model_archive(info: RepositoryInfo, out: str | os.PathLike[str], *,
                        progress: Callable[[str], None] | None = None, every_s: float = 5.0) -> Path:
    """Write the repository ``info.root`` as a gzip tar with its model folders at the archive root.
    ``progress`` gets a line every ``every_s`` seconds (bytes archived of the total: an env makes it minutes)."""
    root = info.root.resolve()
    target = Path(out).resolve()
    if target == root or root in target.parents:
        raise DeployError(f"{target}: write the archive outside the repository it packs")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    entries = _entries(root)
    total = sum(p.lstat().st_size for p in entries if p.is_file() and not p.is_symlink())
    done, last = 0, time.monotonic()
    with tarfile.open(tmp, "w:gz") as tar:
        for path in entries:
            ti = tar.gettarinfo(str(path), arcname=path.relative_to(root).as_posix())
            if ti is None:
                raise DeployError(f"{path}: not a file, folder or link; cannot be archived")
            ti = _normalize(ti)
            if ti.isreg():
                with open(path, "rb") as f:
                    tar.addfile(ti, f)
                done += ti.size
                if progress is not None and time.monotonic() - last >= every_s:
                    last = time.monotonic()
                    progress(f"archived {done / 2**20:.0f} of {total / 2**20:.0f} MiB ({path.relative_to(root)})")
            else:
                tar.addfile(ti)
    os.replace(tmp, target)
    return target


def _entries(root: Path) -> list[Path]:
    """Everything under ``root`` (not ``root`` itself), sorted, links kept as links (never followed)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        base = Path(dirpath)
        out.extend(base / n for n in dirnames)
        out.extend(base / n for n in sorted(filenames))
    return sorted(out, key=lambda p: p.relative_to(root).parts)


def write_environment(env: dict[str, str], path: str | os.PathLike[str]) -> Path:
    """Write the container environment as JSON (the ``env`` of ``sagemaker.Model`` / ``CreateModel``)."""
    p = Path(path)
    p.write_text(json.dumps(env, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return p
