"""The one place that reads and writes ``config.pbtxt``, with Triton's own protobuf schema.

Parsing uses ``tritonclient.grpc.model_config_pb2`` + ``google.protobuf.text_format`` (never regexes).
The generated module is loaded straight from its file so that grpcio is not needed (importing
``tritonclient.grpc`` itself raises without grpc support).

Besides load/write this module reproduces what the server does to a config before a Python model
sees it as ``args["model_config"]``: backend auto-fill, ``NormalizeModelConfig``,
``NormalizeInstanceGroup`` (triton-inference-server/core ``src/model_config_utils.cc``) and the JSON
rendering of ``ModelConfigToJson`` (``preserve_proto_field_names``, ``always_print_primitive_fields``,
enum names, only the int64 fields the server fixes rewritten as JSON integers).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from triton_textops.errors import (
    ConfigError,  # a config.pbtxt that cannot be parsed or that the server would reject
)

__all__ = [
    "ConfigError",
    "model_config_pb2",
    "parse_config_text",
    "load_config",
    "config_from_dict",
    "config_to_dict",
    "config_to_text",
    "write_config",
    "config_to_json_dict",
    "normalize_config",
    "normalize_instance_groups",
    "validate_io_config",
    "CLIENT_NAMES_PARAM",
    "ensemble_client_names",
]

_PB2_NAME = "tritonclient.grpc.model_config_pb2"


def model_config_pb2() -> ModuleType:
    """Return Triton's generated ``model_config_pb2`` module without requiring grpcio."""
    mod = sys.modules.get(_PB2_NAME)
    if mod is not None:
        return mod
    spec = importlib.util.find_spec("tritonclient")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "tritonclient (Triton's config schema, no gRPC client needed) is needed to parse config.pbtxt: "
            "pip install 'triton-textops[testing]' (the server, pack and deploy extras carry it too)",
            name="tritonclient",
        )
    for base in spec.submodule_search_locations:
        path = Path(base) / "grpc" / "model_config_pb2.py"
        if path.is_file():
            file_spec = importlib.util.spec_from_file_location(_PB2_NAME, path)
            assert file_spec is not None and file_spec.loader is not None
            mod = importlib.util.module_from_spec(file_spec)
            # Registered under its canonical name so a later normal import returns the same classes.
            sys.modules[_PB2_NAME] = mod
            try:
                file_spec.loader.exec_module(mod)
            except BaseException:
                sys.modules.pop(_PB2_NAME, None)
                raise
            return mod
    raise ModuleNotFoundError("tritonclient is installed but has no grpc/model_config_pb2.py", name="tritonclient")


# the parameter that tells a model which ensemble input the client sent for each of its inputs (see base.py)
CLIENT_NAMES_PARAM = "client_names"


def ensemble_client_names(configs: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """For each model of a repository (``{name: ModelConfig}``) that an ensemble feeds straight from an ensemble
    input under another name: ``{model input: ensemble input}`` (e.g. ``REQUEST_OUTPUT_LEN -> max_tokens``).

    A Python model never sees the ensemble that calls it, and Triton's error for a step is the model's own text
    prefixed with the ensemble's name; written into the model's config as the ``client_names`` parameter, this
    lets the model's errors name the tensor the client sent. A model input fed different ensemble inputs by two
    ensembles is left out (no single name is right)."""
    found: dict[str, dict[str, set[str]]] = {}
    for ens in configs.values():
        if ens.platform != "ensemble":
            continue
        client_inputs = {t.name for t in ens.input}
        for step in ens.ensemble_scheduling.step:
            for model_input, source in step.input_map.items():
                if source in client_inputs and source != model_input:
                    found.setdefault(step.model_name, {}).setdefault(model_input, set()).add(source)
    return {m: {k: next(iter(v)) for k, v in sorted(names.items()) if len(v) == 1}
            for m, names in found.items() if any(len(v) == 1 for v in names.values())}


def _text_format() -> Any:
    from google.protobuf import text_format  # noqa: PLC0415

    return text_format


def _json_format() -> Any:
    from google.protobuf import json_format  # noqa: PLC0415

    return json_format


# --------------------------------------------------------------------------- load / write


def parse_config_text(text: str, source: str = "<string>") -> Any:
    """Parse pbtxt text into a ``ModelConfig`` message; errors name ``source`` and the line."""
    pb2 = model_config_pb2()
    text_format = _text_format()
    config = pb2.ModelConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as exc:
        line, col = exc.GetLine(), exc.GetColumn()
        where = f"{source}:{line}:{col}" if line is not None else source
        raw = str(exc)
        # ParseError's str starts with "line:col : " already; keep only the message part.
        if line is not None and raw.startswith(f"{line}:{col} : "):
            raw = raw[len(f"{line}:{col} : ") :]
        raise ConfigError(f"{where}: {raw}") from None
    return config


def load_config(path: str | os.PathLike[str]) -> Any:
    """Load ``config.pbtxt`` (a file, or a model directory containing one)."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.pbtxt"
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    return parse_config_text(text, str(p))


def config_from_dict(data: Mapping[str, Any]) -> Any:
    """Build a ``ModelConfig`` from a dict in Triton's JSON shape (enum names, int or str int64)."""
    pb2 = model_config_pb2()
    json_format = _json_format()
    config = pb2.ModelConfig()
    try:
        json_format.ParseDict(dict(data), config, ignore_unknown_fields=False)
    except json_format.ParseError as exc:
        raise ConfigError(f"invalid model config: {exc}") from None
    return config


def _as_message(config: Any) -> Any:
    if isinstance(config, Mapping):
        return config_from_dict(config)
    return config


def config_to_dict(config: Any) -> dict[str, Any]:
    """Plain protobuf JSON dict of only the fields that are set (int64 values as ints)."""
    json_format = _json_format()
    d = json_format.MessageToDict(_as_message(config), preserving_proto_field_name=True)
    return _ints_everywhere(d)


def _ints_everywhere(obj: Any) -> Any:
    # MessageToDict renders int64 as str; for a user-facing dict convert the obvious ones back.
    if isinstance(obj, dict):
        return {k: _ints_everywhere(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_ints_everywhere(v) for v in obj]
    if isinstance(obj, str) and obj.lstrip("-").isdigit() and obj == str(int(obj)):
        return int(obj)
    return obj


def config_to_text(config: Any) -> str:
    """Render a ``ModelConfig`` (or dict) as pbtxt text.

    Top-level fields come in the schema's declaration order (``name``, ``platform``, ``backend``,
    ``runtime``, ``version_policy``, ``max_batch_size``, ``input``, ``output``, ...) as people write
    them, rather than protobuf's field-number order that would put ``backend`` last.
    """
    msg = _as_message(config)
    text_format = _text_format()
    set_fields = {fd.name for fd, _ in msg.ListFields()}
    parts = []
    for fd in msg.DESCRIPTOR.fields:
        if fd.name not in set_fields:
            continue
        single = type(msg)()
        repeated = fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == fd.LABEL_REPEATED
        if repeated:
            getattr(single, fd.name).MergeFrom(getattr(msg, fd.name))
        elif fd.message_type is not None:
            getattr(single, fd.name).CopyFrom(getattr(msg, fd.name))
        else:
            setattr(single, fd.name, getattr(msg, fd.name))
        parts.append(text_format.MessageToString(single))
    return "".join(parts)


def write_config(config: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``config`` (message or dict) to ``path`` (a file, or a model dir -> ``config.pbtxt``)."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.pbtxt"
    msg = _as_message(config)
    text = config_to_text(msg)
    # Round-trip check: what we write must parse back to the same message.
    if parse_config_text(text, str(p)) != msg:
        raise ConfigError(f"{p}: rendered config does not parse back identically")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


# --------------------------------------------------------------------------- server normalization

_PYTHON_FILENAME = "model.py"


def _version_dirs(model_dir: Path) -> list[str]:
    if not model_dir.is_dir():
        return []
    # CORE GetDirectorySubdirs returns a std::set (sorted by string).
    return sorted(p.name for p in model_dir.iterdir() if p.is_dir())


def autocomplete_backend_fields(config: Any, model_name: str, model_dir: str | os.PathLike[str]) -> Any:
    """Server-side auto-fill of ``name``, ``backend`` and ``default_model_filename`` (Python case)."""
    cfg = copy.deepcopy(_as_message(config))
    mdir = Path(model_dir)
    versions = _version_dirs(mdir)
    if not cfg.name:
        cfg.name = model_name
    if not cfg.backend and not cfg.platform:
        if cfg.default_model_filename == _PYTHON_FILENAME:
            cfg.backend = "python"
        elif not cfg.default_model_filename and versions:
            if (mdir / versions[0] / _PYTHON_FILENAME).exists():
                cfg.backend = "python"
    if cfg.backend == "python" and not cfg.default_model_filename:
        cfg.default_model_filename = _PYTHON_FILENAME
    return cfg


def normalize_config(config: Any) -> Any:
    """CORE ``NormalizeModelConfig``: version policy, preferred batch size, pinned-memory defaults."""
    cfg = copy.deepcopy(_as_message(config))
    if not cfg.HasField("version_policy"):
        cfg.version_policy.latest.num_versions = 1
    if cfg.HasField("dynamic_batching"):
        if len(cfg.dynamic_batching.preferred_batch_size) == 0 and cfg.max_batch_size > 0:
            cfg.dynamic_batching.preferred_batch_size.append(cfg.max_batch_size)
    if cfg.HasField("sequence_batching"):
        if cfg.sequence_batching.max_sequence_idle_microseconds == 0:
            cfg.sequence_batching.max_sequence_idle_microseconds = 1000000
        if cfg.sequence_batching.HasField("oldest"):
            oldest = cfg.sequence_batching.oldest
            if len(oldest.preferred_batch_size) == 0 and cfg.max_batch_size > 0:
                oldest.preferred_batch_size.append(cfg.max_batch_size)
    if not cfg.HasField("ensemble_scheduling"):
        opt = cfg.optimization
        if not opt.HasField("input_pinned_memory"):
            opt.input_pinned_memory.enable = True
        if not opt.HasField("output_pinned_memory"):
            opt.output_pinned_memory.enable = True
    return cfg


def normalize_instance_groups(
    config: Any,
    supported_gpus: Iterable[int] = (),
    preferred_kind: str = "KIND_GPU",
) -> Any:
    """CORE ``NormalizeInstanceGroup`` with the Python backend's preferred group.

    The Python backend (GPU build) prefers ``KIND_GPU`` with no count; without a GPU the group
    resolves to ``KIND_CPU``. A group added because the config has none is named after the model;
    groups given without a name get ``<model>_<index>``.
    """
    pb2 = model_config_pb2()
    IG = pb2.ModelInstanceGroup
    cfg = copy.deepcopy(_as_message(config))
    if cfg.HasField("ensemble_scheduling"):
        return cfg
    gpus = sorted(set(supported_gpus))
    pref_kind = IG.Kind.Value(preferred_kind)
    if len(cfg.instance_group) == 0:
        group = cfg.instance_group.add()
        group.name = cfg.name
        if pref_kind == IG.KIND_GPU and not gpus:
            pass  # "Don't use preferred group with KIND_GPU if there is no GPU."
        else:
            group.kind = pref_kind
            group.count = 0
    for cnt, group in enumerate(cfg.instance_group):
        if not group.name:
            group.name = f"{cfg.name}_{cnt}"
        if group.kind == IG.KIND_AUTO:
            if not gpus or any(g not in gpus for g in group.gpus):
                group.kind = IG.KIND_CPU
            else:
                group.kind = IG.KIND_GPU
        if group.count < 1:
            group.count = 1
        if group.kind == IG.KIND_GPU and len(group.gpus) == 0:
            group.gpus.extend(gpus)
    return cfg


def _validate_io_shape(io: Any, max_batch_size: int, prefix: str) -> str | None:
    if not io.name:
        return prefix + "must specify 'name'"
    p = f"{prefix}'{io.name}' "
    if io.data_type == 0:
        return p + "must specify 'data_type'"
    if len(io.dims) == 0:
        return p + "must specify 'dims'"
    if io.HasField("reshape") and len(io.reshape.shape) == 0 and max_batch_size == 0:
        return p + "cannot have empty reshape for non-batching model as scalar tensors are not supported"
    for d in io.dims:
        if d < 1 and d != -1:
            return p + "dimension must be integer >= 1, or -1 to indicate a variable-size dimension"
    return None


def validate_io_config(config: Any) -> None:
    """CORE ``ValidateModelIOConfig`` (the checks that matter for Python models)."""
    cfg = _as_message(config)
    for kind, ios in (("model input ", cfg.input), ("model output ", cfg.output)):
        for io in ios:
            msg = _validate_io_shape(io, cfg.max_batch_size, kind)
            if msg is not None:
                raise ConfigError(f"{msg} for {cfg.name}")
    if cfg.max_batch_size < 0:
        raise ConfigError(f"'max_batch_size' must be non-negative value for {cfg.name}")


# --------------------------------------------------------------------------- ModelConfigToJson


def _fix_int_array(obj: dict[str, Any], key: str) -> None:
    if key in obj:
        obj[key] = [int(v) for v in obj[key]]


def _fix_int(obj: dict[str, Any], key: str) -> None:
    if key in obj:
        obj[key] = int(obj[key])


def config_to_json_dict(config: Any) -> dict[str, Any]:
    """The dict the server serializes as ``args["model_config"]`` (CORE ``ModelConfigToJson``).

    All no-presence fields are printed (empty lists/maps, "" and 0), enums by name, and only
    the int64 fields the server rewrites become JSON integers; any other int64 stays a string,
    as in the server.
    """
    json_format = _json_format()
    msg = _as_message(config)
    d: dict[str, Any] = json_format.MessageToDict(
        msg,
        preserving_proto_field_name=True,
        always_print_fields_with_no_presence=True,
    )
    for name in ("input", "output"):
        for io in d.get(name, []):
            _fix_int_array(io, "dims")
            if "reshape" in io:
                _fix_int_array(io["reshape"], "shape")
    vp = d.get("version_policy")
    if vp and "specific" in vp:
        _fix_int_array(vp["specific"], "versions")
    db = d.get("dynamic_batching")
    if db is not None:
        for key in ("max_queue_delay_microseconds", "priority_levels", "default_priority_level"):
            _fix_int(db, key)
        if "default_queue_policy" in db:
            _fix_int(db["default_queue_policy"], "default_timeout_microseconds")
        for pol in db.get("priority_queue_policy", {}).values():
            _fix_int(pol, "default_timeout_microseconds")
    sb = d.get("sequence_batching")
    if sb is not None:
        _fix_int(sb, "max_sequence_idle_microseconds")
        for key in ("oldest", "direct"):
            if key in sb:
                _fix_int(sb[key], "max_queue_delay_microseconds")
        for state in sb.get("state", []):
            _fix_int_array(state, "dims")
    ens = d.get("ensemble_scheduling")
    if ens is not None:
        for step in ens.get("step", []):
            _fix_int(step, "model_version")
    for warm in d.get("model_warmup", []):
        for inp in warm.get("inputs", {}).values():
            _fix_int_array(inp, "dims")
    return _in_declaration_order(d, msg.DESCRIPTOR)


def _in_declaration_order(d: dict[str, Any], descriptor: Any) -> dict[str, Any]:
    """Keys in the schema's declaration order, as the server's C++ JSON printer writes them.

    (Python's ``MessageToDict`` puts set fields first, in field-number order.) Map entries keep the
    config's order; the server prints a protobuf ``Map`` in its own hash order, which is not emulated.
    """
    out: dict[str, Any] = {}
    for fd in descriptor.fields:
        if fd.name not in d:
            continue
        value = d[fd.name]
        sub = fd.message_type
        if sub is not None:
            if sub.GetOptions().map_entry:
                vsub = sub.fields_by_name["value"].message_type
                if vsub is not None:
                    value = {k: _in_declaration_order(v, vsub) for k, v in value.items()}
            elif isinstance(value, list):
                value = [_in_declaration_order(v, sub) if isinstance(v, dict) else v for v in value]
            elif isinstance(value, dict):
                value = _in_declaration_order(value, sub)
        out[fd.name] = value
    for key, value in d.items():  # nothing else is expected; keep it rather than drop it
        out.setdefault(key, value)
    return out


def config_to_json(config: Any) -> str:
    """``config_to_json_dict`` serialized compactly, as the server hands it to the stub."""
    return json.dumps(config_to_json_dict(config), separators=(",", ":"))
