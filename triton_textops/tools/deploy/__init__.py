"""Deploy a generated model repository on managed serving: KServe and SageMaker (issue 9).

:func:`inspect_repository` reads a repository with Triton's config schema
(:mod:`triton_textops.triton.config`) and checks what a remote server will need: every top-level folder is
a model with a parsable ``config.pbtxt`` of its own name, every ensemble step names a model that is
there, every ``EXECUTION_ENV_PATH`` under ``$$TRITON_MODEL_DIRECTORY`` and every custom stub travels
with the repository. :mod:`.kserve` writes an ``InferenceService``, :mod:`.sagemaker` the
``model.tar.gz`` of SageMaker's Triton container.
"""

from __future__ import annotations

import ast
import os
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triton_textops.triton.config import ConfigError, load_config, model_config_pb2

__all__ = ["DeployError", "RepositoryInfo", "inspect_repository", "stock_image_problems", "DEFAULT_MODEL"]

DEFAULT_MODEL = "ensemble_all"
STUB_NAME = "triton_python_backend_stub"
MODEL_DIR_VAR = "$$TRITON_MODEL_DIRECTORY"


class DeployError(ValueError):
    """The repository or the options cannot be deployed as asked (the message says what to change)."""


@dataclass
class RepositoryInfo:
    """What a deployment needs to know about a model repository."""

    root: Path
    configs: dict[str, Any]  # model name -> ModelConfig message, sorted by name
    ensembles: list[str] = field(default_factory=list)
    python_models: list[str] = field(default_factory=list)
    gpu_models: list[str] = field(default_factory=list)  # models with a KIND_GPU instance group
    gpus: int = 0  # GPUs the repository needs: 0, or 1 + the highest device id it pins (at least 1)
    envs: dict[str, Path] = field(default_factory=dict)  # model -> packed execution env in the repository
    stubs: dict[str, Path] = field(default_factory=dict)  # model -> custom triton_python_backend_stub
    notes: list[str] = field(default_factory=list)

    @property
    def models(self) -> list[str]:
        return list(self.configs)

    def default_model(self, name: str | None = None) -> str:
        """``name`` if it is a model here; else ``ensemble_all``, else the only ensemble, else the only model."""
        if name is not None:
            if name not in self.configs:
                raise DeployError(f"model {name!r} is not in {self.root} (models: {', '.join(self.models)})")
            return name
        if DEFAULT_MODEL in self.configs:
            return DEFAULT_MODEL
        if len(self.ensembles) == 1:
            return self.ensembles[0]
        if len(self.configs) == 1:
            return self.models[0]
        raise DeployError(
            f"{self.root} has {len(self.configs)} models and no single ensemble to serve by default: "
            "name one (--default-model)"
        )


def _env_path(cfg: Any) -> str | None:
    p = cfg.parameters.get("EXECUTION_ENV_PATH")
    return p.string_value if p is not None and p.string_value else None


def inspect_repository(root: str | os.PathLike[str]) -> RepositoryInfo:
    """Read and check the repository at ``root`` (see the module docstring); DeployError if it is not servable."""
    pb2 = model_config_pb2()
    kind_gpu = pb2.ModelInstanceGroup.Kind.Value("KIND_GPU")
    path = Path(root)
    if not path.is_dir():
        raise DeployError(f"{path}: not a directory")
    if (path / "config.pbtxt").exists():
        raise DeployError(
            f"{path} holds a config.pbtxt: that is one model's folder; give the repository folder above it"
        )
    info = RepositoryInfo(root=path, configs={})
    for d in sorted(p for p in path.iterdir() if p.is_dir()):
        if not (d / "config.pbtxt").is_file():
            raise DeployError(f"{d}: a folder of the repository without a config.pbtxt (not a model)")
        try:
            cfg = load_config(d)
        except ConfigError as exc:
            raise DeployError(str(exc)) from None
        if cfg.name and cfg.name != d.name:
            raise DeployError(f"{d}/config.pbtxt: name {cfg.name!r} differs from its folder {d.name!r}")
        if not any(v.is_dir() and v.name.isdigit() for v in d.iterdir()):
            raise DeployError(f"{d}: no numeric version folder (e.g. {d.name}/1)")
        info.configs[d.name] = cfg
    if not info.configs:
        raise DeployError(f"{path}: no models (folders with a config.pbtxt)")
    for name, cfg in info.configs.items():
        if cfg.platform == "ensemble":
            info.ensembles.append(name)
            missing = sorted({s.model_name for s in cfg.ensemble_scheduling.step} - set(info.configs))
            if missing:
                raise DeployError(f"ensemble {name!r} uses model(s) not in the repository: {', '.join(missing)}")
            continue
        versions = [v for v in (path / name).iterdir() if v.is_dir() and v.name.isdigit()]
        if not any(f.is_file() for v in versions for f in v.rglob("*")):
            raise DeployError(
                f"model {name!r}: its version folder is empty (the model file is missing); complete the repository"
            )
        for key, param in cfg.parameters.items():
            value = param.string_value
            if key != "EXECUTION_ENV_PATH" and value.startswith(MODEL_DIR_VAR + "/"):
                if not (path / name / value[len(MODEL_DIR_VAR) + 1 :]).exists():
                    raise DeployError(
                        f"model {name!r}: parameter {key} = {value} names a file that is not in the repository"
                    )
        groups = [g for g in cfg.instance_group if g.kind == kind_gpu]
        if groups:
            info.gpu_models.append(name)
            pinned = [int(i) for g in groups for i in g.gpus]
            info.gpus = max(info.gpus, (max(pinned) + 1) if pinned else 1)
        if cfg.backend != "python":
            continue
        info.python_models.append(name)
        env = _env_path(cfg)
        if env is not None:
            if env.startswith(MODEL_DIR_VAR + "/"):
                local = path / name / env[len(MODEL_DIR_VAR) + 1 :]
                if not local.exists():
                    raise DeployError(f"model {name!r}: EXECUTION_ENV_PATH {env} is missing ({local})")
                info.envs[name] = local
            else:
                info.notes.append(
                    f"model {name!r}: EXECUTION_ENV_PATH {env} is outside the repository; the serving image must have it"
                )
        stub = path / name / STUB_NAME
        if stub.exists():
            info.stubs[name] = stub
    return info


_TEXTOPS_IN_ENV = re.compile(r"(?:^|/)lib/python3\.\d+/site-packages/triton_textops/__init__\.py$")


def _imports_textops(model_dir: Path, cfg: Any) -> bool:
    """Whether a version's model file imports triton_textops (what the one-line model.py of our models does)."""
    filename = cfg.default_model_filename or "model.py"
    for version in (v for v in model_dir.iterdir() if v.is_dir() and v.name.isdigit()):
        path = version / filename
        if not path.is_file():
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "triton_textops" or n.startswith("triton_textops.") for n in names):
                return True
    return False


def _env_has_textops(env: Path) -> bool:
    if env.is_dir():
        return any(env.glob("lib/python3.*/site-packages/triton_textops/__init__.py"))
    try:
        with tarfile.open(env, "r:*") as tar:
            return any(_TEXTOPS_IN_ENV.search(name) for name in tar.getnames())
    except (tarfile.TarError, OSError):
        return False


def _model_module(model_dir: Path, cfg: Any) -> str | None:
    """The ``triton_textops.models.X`` module a version's model file imports its model from, if any."""
    filename = cfg.default_model_filename or "model.py"
    for version in sorted(v for v in model_dir.iterdir() if v.is_dir() and v.name.isdigit()):
        path = version / filename
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("triton_textops.models."):
                return node.module
    return None


def _dist_name(requirement: str) -> str:
    """``onnxruntime>=1.18`` -> ``onnxruntime`` (normalized as pip compares names)."""
    name = re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


_DIST_INFO = re.compile(r"(?:^|/)lib/python3\.\d+/site-packages/([^/]+?)-[^/-]+\.dist-info/?")


def _env_distributions(env: Path) -> set[str]:
    """The distributions installed in a packed env (tarball or folder): its site-packages' dist-info names."""
    if env.is_dir():
        names = [str(p.relative_to(env)) for p in env.glob("lib/python3.*/site-packages/*.dist-info")]
    else:
        try:
            with tarfile.open(env, "r:*") as tar:
                names = tar.getnames()
        except (tarfile.TarError, OSError):
            return set()
    return {_dist_name(m.group(1)) for n in names if (m := _DIST_INFO.search(n))}


def needs_problems(info: RepositoryInfo, image_has: set[str] | None = None, image_has_textops: bool = False
                   ) -> list[str]:
    """What a python model needs and will not find where it runs: the packages its model module imports (as
    ``repo create`` records them in requirements.txt) checked against its packed env, or, for a model without
    one in the repository, against ``image_has`` (what the serving image is said to have: ``--image-has``).
    One line per model and missing package."""
    from triton_textops.tools.repo.generate import MODULE_REQUIREMENTS  # noqa: PLC0415
    from triton_textops.tools.repo.requirements import read_requirements  # noqa: PLC0415

    recorded = {_dist_name(r): r for r in read_requirements(info.root) or []}
    have_image = {_dist_name(p) for p in image_has or ()}
    envs: dict[Path, set[str]] = {}
    out = []
    for name in info.python_models:
        module = _model_module(info.root / name, info.configs[name])
        needs = {_dist_name(r): r for r in MODULE_REQUIREMENTS.get(module or "", ())}
        if not needs:
            continue
        env = info.envs.get(name)
        if env is not None:
            have = envs.setdefault(env.resolve(), _env_distributions(env))
            where = f"its env {env.relative_to(info.root)}"
        elif _env_path(info.configs[name]) is not None:
            continue  # an env outside the repository: noted by inspect_repository, not readable here
        else:
            have = have_image
            where = "the serving image (say what it has with --image-has PACKAGE)"
            if not image_has_textops:
                continue  # refused already: no triton_textops there (stock_image_problems)
        for dist, req in sorted(needs.items()):
            if dist not in have:
                note = "" if dist in recorded else f"; the repository's {REQUIREMENTS_NOTE} does not record it"
                out.append(f"python model '{name}' ({module}) imports {recorded.get(dist, req)}, which {where} "
                           f"does not have{note}")
    return out


REQUIREMENTS_NOTE = "requirements.txt"


def stock_image_problems(info: RepositoryInfo) -> list[str]:
    """Why python models of the repository cannot load in a stock Triton image (no triton_textops there).

    A python model whose model file imports triton_textops needs it from an ``EXECUTION_ENV_PATH`` env that
    travels with the repository (``repo create --pack-env``, or ``env pack`` + ``--env``), unless the serving
    image was built with triton-textops. One line per problem; empty when every such model has an env with it.
    """
    no_env, env_without = [], []
    checked: dict[Path, bool] = {}
    for name in info.python_models:
        if not _imports_textops(info.root / name, info.configs[name]):
            continue
        env = info.envs.get(name)
        if env is None:
            if _env_path(info.configs[name]) is None:
                no_env.append(name)
            continue  # an env outside the repository: noted by inspect_repository, not readable here
        key = env.resolve()
        if key not in checked:
            checked[key] = _env_has_textops(env)
        if not checked[key]:
            env_without.append(f"{name} ({env.relative_to(info.root)})")
    out = []
    if no_env:
        out.append(f"python model(s) {', '.join(no_env)} import triton_textops but name no EXECUTION_ENV_PATH: "
                   "the stock tritonserver image has no triton_textops, so they cannot load there")
    if env_without:
        out.append(f"the EXECUTION_ENV_PATH env of {', '.join(env_without)} has no triton_textops in "
                   "lib/python3.X/site-packages: those models cannot import it")
    return out
