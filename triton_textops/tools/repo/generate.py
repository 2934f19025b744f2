"""Generate the seed's Triton model repository ``ensemble_all`` (issue 5).

``preprocess`` (python) → ``bert-large`` and ``cuml`` in parallel → ``postprocess`` (python), wired by the
ensemble ``ensemble_all`` (``excerpt``, ``BERT_WEIGHT`` → ``SCORE``). Every config is built as a
``model_config_pb2.ModelConfig`` message and written with :func:`triton_textops.triton.config.write_config`
(which checks that the text parses back to the same message).

Moving the deployment between CPU and GPU changes only the ``instance_group`` kind of each member
(``device="cpu"|"gpu"``); every python model keeps ``FORCE_CPU_ONLY_INPUT_TENSORS: "no"`` so GPU tensors
travel between the steps without a trip to the host.

:func:`plan_repository` validates the inputs and returns the configs and files without touching the
disk; :func:`create_repository` writes that plan.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triton_textops.tools.repo.requirements import (
    REQUIREMENTS_FILE,
    SHARED_ENV,
    read_requirements,
    requirements_text,
)
from triton_textops.triton.config import (
    CLIENT_NAMES_PARAM,
    ConfigError,
    ensemble_client_names,
    model_config_pb2,
    write_config,
)
from triton_textops.triton.params import parse_bool

__all__ = [
    "RepositoryError",
    "RepositoryPlan",
    "ENSEMBLE",
    "MODELS",
    "SAMPLE_EXCERPT",
    "plan_repository",
    "create_repository",
    "write_plan",
    "MODEL_REQUIREMENTS",
    "REQUIREMENTS_FILE",
    "SHARED_ENV",
    "read_requirements",
]

ENSEMBLE = "ensemble_all"
PREPROCESS, BERT, CUML, POSTPROCESS = "preprocess", "bert-large", "cuml", "postprocess"
MODELS = (PREPROCESS, BERT, CUML, POSTPROCESS, ENSEMBLE)
MODEL_DIR = "$$TRITON_MODEL_DIRECTORY"
STUB_NAME = "triton_python_backend_stub"
WARMUP_DIR = "warmup"  # Triton reads model_warmup input_data_file from <model dir>/warmup/
SAMPLE_EXCERPT = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife."
)
# Third-party packages each python model imports besides numpy and triton_textops (pins as the 'example' extra).
MODEL_REQUIREMENTS: dict[str, tuple[str, ...]] = {
    BERT: ("onnxruntime>=1.18",),
    CUML: ("treelite>=4.1,<5",),
}
_MODULES = {
    PREPROCESS: "triton_textops.models.preprocess",
    POSTPROCESS: "triton_textops.models.postprocess",
    BERT: "triton_textops.models.onnx_regressor",
    CUML: "triton_textops.models.forest",
}
# the same by model module (what `deploy` checks a repository's python models against: their model.py imports it)
MODULE_REQUIREMENTS: dict[str, tuple[str, ...]] = {_MODULES[m]: reqs for m, reqs in MODEL_REQUIREMENTS.items()}
# dynamic batching max_queue_delay_microseconds by default: 0 (was 100). On the CPU (benchmarks/perf.py tune, issue
# 27) preprocess had more throughput with no delay than with 100 us at concurrency 1 and 64 (the same at 8): what
# queues while an instance is busy is still batched. One value for both devices (--device changes only the
# instance_group kind); GPU not measured yet. (Figures: benchmarks/RESULTS.md, Design measurements,
# tools/repo/generate.py.)
DEFAULT_QUEUE_DELAY_US = 0
# Parameters create_repository sets itself; preprocess_params may not override them.
_OWN_PREPROCESS_PARAMS = ("vocab", "tokenizer", "features", "max_length")


class RepositoryError(ValueError):
    """The repository cannot be generated from these options (message names the option)."""


@dataclass
class RepositoryPlan:
    """What :func:`create_repository` writes: configs, files to copy, files to write, version dirs."""

    configs: dict[str, Any]  # model name -> ModelConfig message
    copies: dict[str, Path] = field(default_factory=dict)  # "model/relative/path" -> source file or dir
    files: dict[str, bytes] = field(default_factory=dict)  # "model/relative/path" -> content
    executables: set[str] = field(default_factory=set)  # relative paths written with mode 0755
    notes: list[str] = field(default_factory=list)  # what the user still has to add
    python_models: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)  # what the python models need (REQUIREMENTS_FILE)


# --------------------------------------------------------------------------- message helpers


def _pb() -> Any:
    return model_config_pb2()


def _io(entry: Any, name: str, data_type: str, dims: list[int]) -> None:
    entry.name = name
    entry.data_type = _pb().DataType.Value(data_type)
    entry.dims.extend(dims)


def _param(cfg: Any, key: str, value: str) -> None:
    cfg.parameters[key].string_value = value


def _member(
    name: str,
    *,
    backend: str,
    max_batch_size: int,
    kind: str,
    instances: int,
    delay_us: int,
    inputs: list[tuple[str, str, list[int]]],
    outputs: list[tuple[str, str, list[int]]],
) -> Any:
    pb2 = _pb()
    cfg = pb2.ModelConfig()
    cfg.name = name
    cfg.backend = backend
    cfg.max_batch_size = max_batch_size
    for spec in inputs:
        _io(cfg.input.add(), *spec)
    for spec in outputs:
        _io(cfg.output.add(), *spec)
    group = cfg.instance_group.add()
    group.count = instances
    group.kind = pb2.ModelInstanceGroup.Kind.Value(kind)
    cfg.dynamic_batching.max_queue_delay_microseconds = delay_us
    return cfg


def _python_extras(cfg: Any, env_value: str | None) -> None:
    _param(cfg, "FORCE_CPU_ONLY_INPUT_TENSORS", "no")
    if env_value is not None:
        _param(cfg, "EXECUTION_ENV_PATH", env_value)


def _warmup(cfg: Any, name: str, inputs: Mapping[str, tuple[str, list[int], str | None]]) -> None:
    """One warmup sample of batch 1; ``None`` source = zero data, else an input_data_file name."""
    pb2 = _pb()
    w = cfg.model_warmup.add()
    w.name = name
    w.batch_size = 1
    for key, (data_type, dims, source) in inputs.items():
        inp = w.inputs[key]
        inp.data_type = pb2.DataType.Value(data_type)
        inp.dims.extend(dims)
        if source is None:
            inp.zero_data = True
        else:
            inp.input_data_file = source


def _one_line_model(module: str) -> bytes:
    return f"from {module} import TritonPythonModel  # noqa: F401\n".encode()


# --------------------------------------------------------------------------- validation


def _existing_file(value: str | os.PathLike[str] | None, option: str) -> Path | None:
    if value is None:
        return None
    p = Path(value)
    if not p.is_file():
        raise RepositoryError(f"{option}: file not found: {p}")
    return p


def _as_param_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _check_preprocess_params(params: Mapping[str, Any], features_lowercase: bool) -> dict[str, str]:
    from triton_textops.models.preprocess import TritonPythonModel as Preprocess  # noqa: PLC0415
    from triton_textops.triton.base import COMMON_PARAMS  # noqa: PLC0415

    known = {p.name for p in [*COMMON_PARAMS, *Preprocess.PARAMS]}
    out: dict[str, str] = {}
    for key, value in params.items():
        if key in _OWN_PREPROCESS_PARAMS:
            use = "vocab" if key == "tokenizer" else key  # (the repository's tokenizer is the vocab= file it copies)
            raise RepositoryError(
                f"preprocess_params: '{key}' is set by create_repository (use its {use}= option)"
            )
        if key not in known:
            raise RepositoryError(
                f"preprocess_params: unknown parameter '{key}' (known: {', '.join(sorted(known - set(_OWN_PREPROCESS_PARAMS)))})"
            )
        out[key] = _as_param_value(value)
    try:
        lowercase = parse_bool(out.get("lowercase", "true"))  # (as the model will read it at load)
    except ValueError as exc:
        raise RepositoryError(f"preprocess_params: invalid value for parameter 'lowercase': {exc}") from None
    if lowercase != features_lowercase:
        casing = "uncased" if features_lowercase else "cased"
        raise RepositoryError(
            f"features: the artifact is {casing} but preprocess lowercase={str(lowercase).lower()}; "
            f"set preprocess_params={{'lowercase': {str(features_lowercase).lower()}}} or refit the features"
        )
    return out


def _positive(value: int, option: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise RepositoryError(f"{option}: expected an integer >= {minimum}, got {value!r}")
    return value


# --------------------------------------------------------------------------- plan


def plan_repository(
    *,
    device: str = "cpu",
    vocab: str | os.PathLike[str],
    features: str | os.PathLike[str],
    bert_model: str | os.PathLike[str] | None = None,
    forest: str | os.PathLike[str] | None = None,
    backends: str = "native",
    env: str | os.PathLike[str] | None = None,
    shared_env: str | os.PathLike[str] | None = None,
    stub: str | os.PathLike[str] | None = None,
    instances: int = 1,
    max_batch_size: int = 32,
    max_queue_delay_us: int = DEFAULT_QUEUE_DELAY_US,
    warmup: bool = False,
    max_length: int = 128,
    preprocess_params: Mapping[str, Any] | None = None,
    member_max_batch_size: Mapping[str, int] | None = None,
    ensemble_max_batch_size: int | None = None,
) -> RepositoryPlan:
    """Validate the options and build every config and file of the repository (nothing is written).

    ``env`` (tarball or directory) is copied into every python model's directory
    (``$$TRITON_MODEL_DIRECTORY/<name>``: what Triton documents, works with cloud repositories too);
    ``shared_env`` (a ``.tar.gz``) is placed once at the repository's top as ``python_env.tar.gz`` and named by
    every python model as ``$$TRITON_MODEL_DIRECTORY/../python_env.tar.gz`` (one copy, extracted once per server;
    needs the repository on a local disk, as KServe's storage initializer and SageMaker provide).
    ``member_max_batch_size`` overrides ``max_batch_size`` per member model; the ensemble's
    max_batch_size defaults to the smallest member's and may not exceed it.
    """
    if device not in ("cpu", "gpu"):
        raise RepositoryError(f"device: expected 'cpu' or 'gpu', got {device!r}")
    if backends not in ("native", "python"):
        raise RepositoryError(f"backends: expected 'native' or 'python', got {backends!r}")
    kind = "KIND_GPU" if device == "gpu" else "KIND_CPU"
    _positive(instances, "instances")
    _positive(max_queue_delay_us, "max_queue_delay_us", 0)
    _positive(max_length, "max_length", 3)
    sizes = {m: _positive(max_batch_size, "max_batch_size") for m in MODELS[:-1]}
    for m, b in (member_max_batch_size or {}).items():
        if m not in sizes:
            raise RepositoryError(f"member_max_batch_size: unknown model '{m}' (models: {', '.join(sizes)})")
        sizes[m] = _positive(b, f"member_max_batch_size[{m!r}]")
    smallest = min(sizes.values())
    ens_mbs = smallest if ensemble_max_batch_size is None else _positive(ensemble_max_batch_size, "ensemble_max_batch_size")
    too_small = [m for m, b in sizes.items() if b < ens_mbs]
    if too_small:
        raise RepositoryError(
            f"ensemble_max_batch_size: {ens_mbs} exceeds the max_batch_size of "
            + ", ".join(f"'{m}' ({sizes[m]})" for m in too_small)
            + "; the ensemble's max_batch_size must be <= every member's"
        )

    vocab_path = _existing_file(vocab, "vocab")
    features_path = _existing_file(features, "features")
    assert vocab_path is not None and features_path is not None
    from triton_textops.ops.features import ReadabilityFeatures  # noqa: PLC0415

    try:
        feats = ReadabilityFeatures.load(features_path)
    except (ValueError, OSError) as exc:
        raise RepositoryError(f"features: {features_path} is not a features artifact: {exc}") from None
    width = feats.n_features
    pre_params = _check_preprocess_params(dict(preprocess_params or {}), feats.lowercase)

    bert_path = _existing_file(bert_model, "bert_model")
    forest_path = _existing_file(forest, "forest")
    if bert_path is not None and bert_path.suffix not in (".onnx", ".pt"):
        raise RepositoryError(f"bert_model: expected a .onnx or .pt file, got {bert_path.name}")
    if backends == "python" and bert_path is not None and bert_path.suffix != ".onnx":
        raise RepositoryError("bert_model: backends='python' runs an ONNX model; give a .onnx file")
    env_path = None
    if env is not None:
        env_path = Path(env)
        if not env_path.exists():
            raise RepositoryError(f"env: not found: {env_path}")
    shared_path = _existing_file(shared_env, "shared_env")
    if shared_path is not None:
        if env_path is not None:
            raise RepositoryError("env and shared_env: give one execution environment, not both")
        if not shared_path.name.endswith((".tar.gz", ".tgz")):
            raise RepositoryError(f"shared_env: expected a .tar.gz (a folder at the top would be read as a model), "
                                  f"got {shared_path.name}")
    stub_path = _existing_file(stub, "stub")

    plan = RepositoryPlan(configs={})
    common = {"kind": kind, "instances": instances, "delay_us": max_queue_delay_us}
    python_models: list[str] = [PREPROCESS, POSTPROCESS]

    # preprocess -------------------------------------------------------------------------------
    pre = _member(
        PREPROCESS,
        backend="python",
        max_batch_size=sizes[PREPROCESS],
        inputs=[("INPUT0", "TYPE_STRING", [1])],
        outputs=[
            ("BERT_IDS", "TYPE_INT64", [max_length]),
            ("BERT_AM", "TYPE_INT64", [max_length]),
            ("TREE_FEATS", "TYPE_FP32", [width]),
        ],
        **common,
    )
    _param(pre, "vocab", f"{MODEL_DIR}/vocab.txt")
    _param(pre, "features", f"{MODEL_DIR}/features.json")
    _param(pre, "max_length", str(max_length))
    for key, value in pre_params.items():
        _param(pre, key, value)
    plan.copies[f"{PREPROCESS}/vocab.txt"] = vocab_path
    plan.copies[f"{PREPROCESS}/features.json"] = features_path
    if warmup:
        text = SAMPLE_EXCERPT.encode()
        # A TYPE_STRING warmup file is the serialized BYTES tensor: <uint32 LE length><bytes>.
        plan.files[f"{PREPROCESS}/{WARMUP_DIR}/sample_excerpt"] = struct.pack("<I", len(text)) + text
        _warmup(pre, "sample_excerpt", {"INPUT0": ("TYPE_STRING", [1], "sample_excerpt")})

    # bert-large -------------------------------------------------------------------------------
    bert_io = {
        "inputs": [("INPUT__0", "TYPE_INT64", [max_length]), ("INPUT__1", "TYPE_INT64", [max_length])],
        "outputs": [("OUTPUT__0", "TYPE_FP32", [1])],
    }
    if backends == "native":
        onnx = bert_path is not None and bert_path.suffix == ".onnx"
        backend, filename = ("onnxruntime", "model.onnx") if onnx else ("pytorch", "model.pt")
        bert = _member(BERT, backend=backend, max_batch_size=sizes[BERT], **bert_io, **common)
        target = f"{BERT}/1/{filename}"
    else:
        bert = _member(BERT, backend="python", max_batch_size=sizes[BERT], **bert_io, **common)
        _param(bert, "model", f"{MODEL_DIR}/model.onnx")
        target = f"{BERT}/model.onnx"
        python_models.append(BERT)
    if bert_path is not None:
        plan.copies[target] = bert_path
    else:
        plan.notes.append(f"{BERT}: no bert_model given; add {target} before starting the server")
    if warmup:
        ones = struct.pack(f"<{max_length}q", *([1] * max_length))
        plan.files[f"{BERT}/{WARMUP_DIR}/ones"] = ones
        _warmup(bert, "zeros_ids_ones_mask", {
            "INPUT__0": ("TYPE_INT64", [max_length], None),
            "INPUT__1": ("TYPE_INT64", [max_length], "ones"),
        })

    # cuml -------------------------------------------------------------------------------------
    cuml_io = {"inputs": [("input__0", "TYPE_FP32", [width])], "outputs": [("output__0", "TYPE_FP32", [1])]}
    if backends == "native":
        cuml = _member(CUML, backend="fil", max_batch_size=sizes[CUML], **cuml_io, **common)
        _param(cuml, "model_type", "treelite_checkpoint")
        _param(cuml, "is_classifier", "false")
        _param(cuml, "output_class", "false")
        target = f"{CUML}/1/checkpoint.tl"
    else:
        cuml = _member(CUML, backend="python", max_batch_size=sizes[CUML], **cuml_io, **common)
        _param(cuml, "checkpoint", f"{MODEL_DIR}/checkpoint.tl")
        target = f"{CUML}/checkpoint.tl"
        python_models.append(CUML)
    if forest_path is not None:
        plan.copies[target] = forest_path
    else:
        plan.notes.append(f"{CUML}: no forest given; add {target} before starting the server")
    if warmup:
        _warmup(cuml, "zeros", {"input__0": ("TYPE_FP32", [width], None)})

    # postprocess ------------------------------------------------------------------------------
    post = _member(
        POSTPROCESS,
        backend="python",
        max_batch_size=sizes[POSTPROCESS],
        inputs=[
            ("BERT_WEIGHT_INPUT", "TYPE_FP32", [1]),
            ("BERT_LARGE_SCORE", "TYPE_FP32", [1]),
            ("CUML_SCORE", "TYPE_FP32", [1]),
        ],
        outputs=[("OUTPUT0", "TYPE_FP32", [1])],
        **common,
    )
    if warmup:
        _warmup(post, "zeros", {
            n: ("TYPE_FP32", [1], None) for n in ("BERT_WEIGHT_INPUT", "BERT_LARGE_SCORE", "CUML_SCORE")
        })

    # python model extras: model.py, env, stub ---------------------------------------------------
    env_name = env_path.name if env_path is not None else None
    env_value = f"{MODEL_DIR}/{env_name}" if env_name is not None else None
    if shared_path is not None:
        env_value = f"{MODEL_DIR}/../{SHARED_ENV}"
        plan.copies[SHARED_ENV] = shared_path
    for cfg in (pre, bert, cuml, post):
        if cfg.name in python_models:
            _python_extras(cfg, env_value)
            plan.files[f"{cfg.name}/1/model.py"] = _one_line_model(_MODULES[cfg.name])
            if env_path is not None:
                plan.copies[f"{cfg.name}/{env_name}"] = env_path
            if stub_path is not None:
                plan.copies[f"{cfg.name}/{STUB_NAME}"] = stub_path
                plan.executables.add(f"{cfg.name}/{STUB_NAME}")
        plan.configs[cfg.name] = cfg

    plan.configs[ENSEMBLE] = _ensemble(ens_mbs, width)
    plan.python_models = [m for m in MODELS if m in python_models]
    plan.requirements = list(dict.fromkeys(r for m in plan.python_models for r in MODEL_REQUIREMENTS.get(m, ())))
    plan.files[REQUIREMENTS_FILE] = requirements_text(plan.python_models, plan.requirements)
    return add_client_names(plan)


def _ensemble(max_batch_size: int, width: int) -> Any:
    pb2 = _pb()
    cfg = pb2.ModelConfig()
    cfg.name = ENSEMBLE
    cfg.platform = "ensemble"
    cfg.max_batch_size = max_batch_size
    _io(cfg.input.add(), "excerpt", "TYPE_STRING", [1])
    _io(cfg.input.add(), "BERT_WEIGHT", "TYPE_FP32", [1])
    _io(cfg.output.add(), "SCORE", "TYPE_FP32", [1])
    steps = [
        (PREPROCESS, {"INPUT0": "excerpt"}, {"BERT_IDS": "bert_ids", "BERT_AM": "bert_am", "TREE_FEATS": "tree_feats"}),
        (BERT, {"INPUT__0": "bert_ids", "INPUT__1": "bert_am"}, {"OUTPUT__0": "bert_score"}),
        (CUML, {"input__0": "tree_feats"}, {"output__0": "cuml_score"}),
        (
            POSTPROCESS,
            {"BERT_WEIGHT_INPUT": "BERT_WEIGHT", "BERT_LARGE_SCORE": "bert_score", "CUML_SCORE": "cuml_score"},
            {"OUTPUT0": "SCORE"},
        ),
    ]
    for model, input_map, output_map in steps:
        step = cfg.ensemble_scheduling.step.add()
        step.model_name = model
        step.model_version = -1
        for k, v in input_map.items():
            step.input_map[k] = v
        for k, v in output_map.items():
            step.output_map[k] = v
    return cfg


# --------------------------------------------------------------------------- write


def create_repository(
    out_dir: str | os.PathLike[str],
    *,
    device: str = "cpu",
    vocab: str | os.PathLike[str],
    features: str | os.PathLike[str],
    bert_model: str | os.PathLike[str] | None = None,
    forest: str | os.PathLike[str] | None = None,
    backends: str = "native",
    env: str | os.PathLike[str] | None = None,
    shared_env: str | os.PathLike[str] | None = None,
    stub: str | os.PathLike[str] | None = None,
    instances: int = 1,
    max_batch_size: int = 32,
    max_queue_delay_us: int = DEFAULT_QUEUE_DELAY_US,
    warmup: bool = False,
    max_length: int = 128,
    preprocess_params: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    member_max_batch_size: Mapping[str, int] | None = None,
    ensemble_max_batch_size: int | None = None,
    pack_env: Mapping[str, Any] | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Write the ``ensemble_all`` repository into ``out_dir`` and return its path.

    Everything is validated before anything is written. Existing model directories of the same names
    are an error unless ``overwrite`` (then only those five directories are replaced; other content of
    ``out_dir`` is left alone). ``bert_model`` (.onnx → onnxruntime, .pt → pytorch; python backend:
    .onnx only) and ``forest`` (treelite checkpoint) may be omitted and added later.

    ``pack_env`` (options of :func:`triton_textops.tools.envs.pack_repository_env`, ``{}`` for its defaults) packs an
    env with the python models' requirements and shares it as ``shared_env``; progress goes to ``log``.
    """
    options = dict(
        device=device,
        vocab=vocab,
        features=features,
        bert_model=bert_model,
        forest=forest,
        backends=backends,
        env=env,
        shared_env=shared_env,
        stub=stub,
        instances=instances,
        max_batch_size=max_batch_size,
        max_queue_delay_us=max_queue_delay_us,
        warmup=warmup,
        max_length=max_length,
        preprocess_params=preprocess_params,
        member_max_batch_size=member_max_batch_size,
        ensemble_max_batch_size=ensemble_max_batch_size,
    )
    if pack_env is not None and (env is not None or shared_env is not None):
        raise RepositoryError("pack_env packs the execution environment: do not give env or shared_env too")
    plan = plan_repository(**options)  # everything is validated before an env is packed (minutes)
    _check_target(plan, Path(out_dir), overwrite)
    if pack_env is None:
        return write_plan(plan, out_dir, overwrite=overwrite)
    from triton_textops.tools.envs import pack_repository_env  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="textops-shared-env-") as tmp:
        try:
            env = pack_repository_env(plan.requirements, Path(tmp) / SHARED_ENV, kind=device, log=log,
                                      **dict(pack_env))
        except (RuntimeError, ValueError) as exc:
            raise RepositoryError(f"pack_env: {exc}") from None
        plan = plan_repository(**dict(options, env=None, shared_env=env))
        return write_plan(plan, out_dir, overwrite=overwrite)


def _check_target(plan: RepositoryPlan, root: Path, overwrite: bool) -> None:
    if root.exists() and not root.is_dir():
        raise RepositoryError(f"{root} exists and is not a directory")
    existing = [m for m in plan.configs if (root / m).exists()]
    if existing and not overwrite:
        raise RepositoryError(
            f"{root} already has model(s) {', '.join(existing)}; use overwrite=True (--overwrite) to replace them"
        )


def add_client_names(plan: RepositoryPlan) -> RepositoryPlan:
    """Our Python models learn which ensemble input the client sends for each of theirs (the ``client_names``
    parameter), so their errors name it: a Python model never sees the ensemble that calls it."""
    ours = {rel.split("/")[0] for rel, data in plan.files.items()
            if rel.endswith("/1/model.py") and data.startswith(b"from triton_textops.models.")}
    for name, names in ensemble_client_names(plan.configs).items():
        if name in ours:
            _param(plan.configs[name], CLIENT_NAMES_PARAM, ",".join(f"{k}={v}" for k, v in names.items()))
    return plan


def write_plan(plan: RepositoryPlan, out_dir: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write a :class:`RepositoryPlan` (configs, version dirs, copies, files, stub modes)."""
    root = Path(out_dir)
    _check_target(plan, root, overwrite)
    existing = [m for m in plan.configs if (root / m).exists()]
    for m in existing:
        target = root / m
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink()
    for name, cfg in plan.configs.items():
        model_dir = root / name
        (model_dir / "1").mkdir(parents=True, exist_ok=True)  # every model, the ensemble too, needs a version
        try:
            write_config(cfg, model_dir / "config.pbtxt")
        except ConfigError as exc:  # pragma: no cover - the plan builds valid messages
            raise RepositoryError(str(exc)) from None
    for rel, src in plan.copies.items():
        dst = root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, symlinks=True)
        else:
            shutil.copyfile(src, dst)
    for rel, data in plan.files.items():
        dst = root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
    for rel in plan.executables:
        os.chmod(root / rel, 0o755)
    return root
