"""`env pack`: build an env (conda + conda-pack when conda exists, else venv + venv-pack) and pack it."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from triton_textops.errors import InputError
from triton_textops.tools.envs.spec import (
    REPO_ROOT,
    libstdcxx_requirement,
    package_dependencies,
    pip_requirements,
    requirement_name,
)
from triton_textops.tools.interpreter import find_python
from triton_textops.tools.proc import run
from triton_textops.tools.stub.releases import Release, default_python_for, numpy_requirement


@dataclass
class PackPlan:
    """The commands `pack` runs, and what it means for the server."""

    tool: str  # conda | venv
    prefix: Path  # where the env is built
    output: Path
    as_dir: bool
    commands: list[list[str]]
    implications: list[str]
    release: Release
    python_version: str
    backends: tuple[str, ...]
    work_dir: Path | None = None  # removed after packing (only when we created it)
    textops_wheel: Path | None = None  # written from the installed distribution before the commands run

    def render(self, commands: bool = True) -> str:
        """The plan; ``commands=False`` leaves the commands out (a real run prints each as it runs it)."""
        lines = [f"tool: {self.tool}; env built at {self.prefix}; output {self.output}"
                 + (" (directory)" if self.as_dir else "")]
        if not commands:
            lines += [f"{len(self.commands)} commands, each printed as it runs", "what this implies:",
                      *(f"  - {i}" for i in self.implications)]
            return "\n".join(lines)
        lines.append("commands:")
        if self.textops_wheel is not None:
            dist = installed_distribution()
            lines.append(f"  (write {self.textops_wheel} from the installed triton-textops {dist.version} in "
                         f"{dist.locate_file('')}: its own files, no package index)")
        lines += ["  " + shlex.join(c) for c in self.commands]
        if self.as_dir:
            lines.append(f"  extract the archive into {self.output}")
        lines += ["what this implies:", *(f"  - {i}" for i in self.implications)]
        return "\n".join(lines)


def default_textops_source() -> str | None:
    """This checkout when triton_textops runs from one (a source tree or an editable install), else None: the
    installed distribution, which :func:`make_pack_plan` repacks as a wheel (:func:`wheel_from_installed`)."""
    if (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "triton_textops").is_dir():
        return str(REPO_ROOT)
    return None


# dist-info files pip writes at install time (a wheel must not carry them; RECORD is written anew)
_INSTALL_ONLY = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def installed_distribution() -> metadata.Distribution:
    """The installed triton-textops distribution whose files are the running ``triton_textops`` package.

    Raises InputError when there is none (e.g. the package is imported from a copied tree): then give
    ``--textops`` a path or wheel."""
    import triton_textops  # noqa: PLC0415

    here = Path(triton_textops.__file__).resolve()
    try:
        dist = metadata.distribution("triton-textops")
    except metadata.PackageNotFoundError:
        dist = None
    if dist is None or not dist.files or Path(str(dist.locate_file("triton_textops/__init__.py"))).resolve() != here:
        raise InputError(f"triton_textops is imported from {here.parent}, which is neither a source checkout nor "
                         "an installed triton-textops distribution: give --textops PATH_OR_WHEEL")
    return dist


def _wheel_name(dist: metadata.Distribution) -> str:
    wheel_meta = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel_meta.splitlines() if line.startswith("Tag:")]
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    return f"{name}-{dist.version.replace('-', '_')}-{tags[0] if tags else 'py3-none-any'}.whl"


def _record_hash(data: bytes) -> str:
    import base64  # noqa: PLC0415
    import hashlib  # noqa: PLC0415

    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_from_installed(dest_dir: str | os.PathLike[str]) -> Path:
    """Write a wheel of the installed triton-textops (:func:`installed_distribution`) into ``dest_dir``.

    Why: a pip user's package has no source tree and may be on no index (a wheel built in-house, a pre-release),
    so ``env pack`` installs exactly the installed version from its own files, offline. The wheel holds the
    files the install's RECORD lists inside site-packages (no ``__pycache__``, no console scripts: pip makes them
    again from ``entry_points.txt``) and a new RECORD with their hashes."""
    import zipfile  # noqa: PLC0415

    dist = installed_distribution()
    base = Path(str(dist.locate_file("")))
    info_dir = next((str(f).split("/", 1)[0] for f in dist.files or () if str(f).split("/", 1)[0].endswith(
        ".dist-info")), None)
    if info_dir is None:
        raise InputError(f"the installed triton-textops in {base} has no .dist-info: give --textops PATH_OR_WHEEL")
    files = []
    for f in dist.files or ():
        rel = str(f).replace(os.sep, "/")
        parts = rel.split("/")
        if rel.startswith("../") or "__pycache__" in parts or rel.endswith((".pyc", ".pyo")):
            continue
        if parts[0] == info_dir and parts[-1] in _INSTALL_ONLY:
            continue
        if (base / rel).is_file():
            files.append(rel)
    if f"{info_dir}/METADATA" not in files:
        raise InputError(f"{base / info_dir}: no METADATA; cannot rebuild a wheel of the installed triton-textops")
    files.sort(key=lambda r: (r.startswith(info_dir + "/"), r))  # package files first, dist-info last
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / _wheel_name(dist)
    record = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in files:
            data = (base / rel).read_bytes()
            zf.writestr(rel, data)
            record.append(f"{rel},{_record_hash(data)},{len(data)}")
        record.append(f"{info_dir}/RECORD,,")
        zf.writestr(f"{info_dir}/RECORD", "\n".join(record) + "\n")
    return out


def _venv_pack_cmd() -> list[str] | None:
    try:
        import venv_pack  # noqa: F401
    except ImportError:
        exe = shutil.which("venv-pack")
        return [exe] if exe else None
    return [sys.executable, "-m", "venv_pack"]


def _conda_pack_cmd(conda: str) -> list[str] | None:
    exe = shutil.which("conda-pack")
    if exe:
        return [exe]
    try:
        import conda_pack  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-m", "conda_pack"]


def _outer_pip_supports_python() -> bool:
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    m = re.match(r"pip (\d+)\.(\d+)", out.stdout)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (22, 3)


def make_pack_plan(
    *,
    kind: str = "cpu",
    release: Release,
    python: str | None = None,
    output: str | os.PathLike[str] = "custom_env.tar.gz",
    as_dir: bool = False,
    tool: str = "auto",
    textops: str | None = None,
    cudf: bool = False,
    extra: Sequence[str] = (),
    pip_args: Sequence[str] = (),
    work_dir: str | os.PathLike[str] | None = None,
) -> PackPlan:
    """Decide conda vs venv and list the commands. `python` is a version or interpreter path (venv) / version (conda)."""
    conda = shutil.which("conda") or shutil.which("mamba")
    if tool == "auto":
        tool = "conda" if conda else "venv"
    if tool not in ("conda", "venv"):
        raise InputError(f"--tool must be auto, conda or venv, not {tool!r}")
    reqs = pip_requirements(kind, release, cudf=cudf)
    have = {requirement_name(r) for r in reqs}
    reqs += [r for r in package_dependencies(kind) if requirement_name(r) not in have] + list(extra)
    textops = textops or default_textops_source()
    wheel_name = _wheel_name(installed_distribution()) if textops is None else None
    temp_work = None if work_dir else Path(tempfile.mkdtemp(prefix="textops-env-"))
    work = Path(work_dir) if work_dir else temp_work
    textops_wheel = None
    if wheel_name is not None:  # a pip user's install: pack that version from its own files, no index
        textops_wheel = (work / "wheels" / wheel_name).absolute()
        textops = str(textops_wheel)
    prefix = (work / "env").absolute()
    out = Path(output).absolute()
    archive = (work / "custom_env.tar.gz").absolute() if as_dir else out
    backends = ("numpy", "cupy", "cudf") if (kind == "gpu" and cudf) else (("numpy", "cupy") if kind == "gpu"
                                                                           else ("numpy",))
    implications = [
        f"in config.pbtxt: parameters: {{ key: \"EXECUTION_ENV_PATH\", value: {{ string_value: "
        f"\"$$TRITON_MODEL_DIRECTORY/{out.name}\" }} }} with the env inside the model directory",
    ]
    if tool == "conda":
        if not conda:
            raise InputError("--tool conda: conda not found on PATH (install miniforge, or use --tool venv)")
        py_version = python if python and re.fullmatch(r"\d+\.\d+(\.\d+)?", python) else None
        if python and not py_version:
            raise InputError("with conda, --python is a version such as 3.11")
        py_version = py_version or default_python_for(release)
        cp = _conda_pack_cmd(conda)
        if cp is None:
            raise InputError("conda-pack not found: conda install -c conda-forge conda-pack")
        spec = work / "environment.yml"
        commands = [
            [conda, "env", "create", "-p", str(prefix), "-f", str(spec)],
            [conda, "run", "-p", str(prefix), "python", "-m", "pip", "install", *pip_args, *reqs[1:]] if len(reqs) > 1
            else [],
            [conda, "run", "-p", str(prefix), "python", "-m", "pip", "install", "--no-deps", *pip_args, textops],
            [*cp, "-p", str(prefix), "-o", str(archive), "--force"],
        ]
        commands = [c for c in commands if c]
        implications += [
            "conda-pack bundles the interpreter and its shared libpython: the server needs no matching Python, only "
            f"a stub built for Python {py_version} (the stock stub if that is the container's Python)",
            "conda-unpack is never run by Triton: prefix-dependent text files keep the build prefix",
        ]
        return PackPlan("conda", prefix, out, as_dir, commands, implications, release, py_version, backends, temp_work,
                        textops_wheel)
    info = find_python(python or default_python_for(release))
    pip_env = [sys.executable, "-m", "pip", "--python", str(prefix / "bin" / "python")]
    if _outer_pip_supports_python():
        commands = [[info.executable, "-m", "venv", "--without-pip", str(prefix)]]
        pip = pip_env
    else:
        commands = [[info.executable, "-m", "venv", str(prefix)]]
        pip = [str(prefix / "bin" / "python"), "-m", "pip"]
    vp = _venv_pack_cmd()
    if vp is None:
        raise InputError("venv-pack not found: pip install 'triton-textops[pack]' (or venv-pack, into the Python "
                         "running triton-textops)")
    commands += [  # (pip compiles the bytecode: without it every server start imports numba from source, ~1 s more
        # per model load here: the env is extracted anew and the stub's Python may not write __pycache__)
        [*pip, "install", *pip_args, *reqs],
        [*pip, "install", "--no-deps", *pip_args, textops],
        [*vp, "-p", str(prefix), "-o", str(archive), "--force"],
    ]
    implications += [
        f"venv-pack does not pack the interpreter: bin/python3 is a symlink to {Path(info.executable).parent}; the "
        f"server must have Python {info.version} at that same path, with {info.libpython} (what a custom stub for "
        f"Python {info.major_minor} links)",
        "Triton documents only conda-pack; venv-pack's activate locates itself, so extraction under "
        "/tmp/python_env_* works (<= r25.07 sources it; >= r25.08 sets PATH/VIRTUAL_ENV itself)",
        f"build a stub for it: triton-textops stub build --triton {release} --python {info.executable}",
    ]
    return PackPlan("venv", prefix, out, as_dir, commands, implications, release, info.major_minor, backends,
                    temp_work, textops_wheel)


def pack_env(plan: PackPlan, *, log: Callable[[str], None] = print) -> Path:
    """Run the plan; returns the tarball or directory."""
    plan.prefix.parent.mkdir(parents=True, exist_ok=True)
    if plan.tool == "conda":
        py = plan.python_version
        spec = plan.commands[0][plan.commands[0].index("-f") + 1]
        conda_deps = [f"python={py}", numpy_requirement(plan.release), "pip"]
        std = libstdcxx_requirement(plan.release)
        if std:
            conda_deps.append(std)
        Path(spec).write_text("channels:\n  - conda-forge\ndependencies:\n"
                              + "".join(f"  - {d}\n" for d in conda_deps))
    try:
        if plan.textops_wheel is not None:
            built = wheel_from_installed(plan.textops_wheel.parent)
            log(f"wrote {built} from the installed triton-textops (no package index)")
        _run_pack(plan, log)
    finally:
        if plan.work_dir is not None:
            shutil.rmtree(plan.work_dir, ignore_errors=True)
    return plan.output


def _run_pack(plan: PackPlan, log: Callable[[str], None]) -> None:
    plan.output.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONNOUSERSITE="True", PIP_DISABLE_PIP_VERSION_CHECK="1")
    for i, cmd in enumerate(plan.commands, 1):
        log(f"step {i}/{len(plan.commands)}:")
        run(cmd, "packing step", error=RuntimeError, log=log, env=env, merge_output=True, tail_lines=30)
    archive = plan.commands[-1][plan.commands[-1].index("-o") + 1]
    # venv-pack and conda-pack write through a private temporary file (mode 0600): give the tarball the
    # permissions any new file gets here (0644 with the usual umask), so a server running as another user reads it
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(archive, 0o666 & ~umask)
    if plan.as_dir:
        if plan.output.exists():
            raise RuntimeError(f"{plan.output} exists; remove it first")
        plan.output.mkdir(parents=True)
        with tarfile.open(archive) as tar:
            if sys.version_info >= (3, 12) or hasattr(tarfile, "tar_filter"):
                tar.extractall(plan.output, filter="tar")
            else:  # pragma: no cover
                tar.extractall(plan.output)
        log(f"extracted into {plan.output}")


