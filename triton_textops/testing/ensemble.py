"""Run a Triton ensemble in-process: its ``ensemble_scheduling`` steps in dependency order.

Python-backend members are loaded from the repository through the harness (each checks its inputs
against its own config, as the server does between ensemble steps); any other member (pytorch,
onnxruntime, fil, ...) is taken from ``models={"name": callable}``, a function from a dict of input
arrays to a dict of output arrays. Tensors keep their device between steps (CuPy stays on the GPU).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from triton_textops.testing import pb_utils as pb
from triton_textops.testing.harness import (
    InferError,
    ModelHarness,
    _client_array,
    _protocol_of_array,
    load_model,
    reject_unicode_array,
    validate_request,
)
from triton_textops.triton import config as cfgmod

__all__ = ["run_ensemble", "EnsembleError"]

MemberFn = Callable[[dict[str, Any]], Mapping[str, Any]]


class EnsembleError(RuntimeError):
    """A step failed; ``.step`` (index), ``.model`` and ``.tensor`` say where, ``.error`` is the TritonError."""

    def __init__(
        self,
        message: str,
        *,
        step: int | None = None,
        model: str | None = None,
        tensor: str | None = None,
        error: pb.TritonError | None = None,
    ) -> None:
        super().__init__(message)
        self.step = step
        self.model = model
        self.tensor = tensor
        self.error = error or pb.TritonError(message, pb.TritonError.INVALID_ARG)


def _array_to_tensor(name: str, value: Any, client: bool = False) -> pb.Tensor:
    """``value`` as a tensor; ``client``: an ensemble input, checked like a client's (no ``<U`` arrays)."""
    if type(value).__module__.split(".")[0] == "cupy":
        code = _protocol_of_array(value)
        return pb.make_input_tensor(name, value, code, gpu=True, device_id=int(value.device.id))
    import numpy as np  # noqa: PLC0415

    if client:
        reject_unicode_array(name, value)
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    if arr.dtype.kind == "U":  # a list of str, or a member callable's output: BYTES
        arr = arr.astype(np.object_)
    return pb.make_input_tensor(name, arr, _protocol_of_array(arr), gpu=False)


def _member_is_python(model_dir: Path) -> bool:
    try:
        cfg = cfgmod.load_config(model_dir) if (model_dir / "config.pbtxt").exists() else None
    except cfgmod.ConfigError:
        return False
    if cfg is None:
        cfg = cfgmod.model_config_pb2().ModelConfig()
    cfg = cfgmod.autocomplete_backend_fields(cfg, model_dir.name, model_dir)
    return cfg.backend == "python"


def run_ensemble(
    repository: str | os.PathLike[str],
    ensemble_name: str,
    inputs: Mapping[str, Any],
    *,
    placement: str = "cpu",
    models: Mapping[str, MemberFn] | None = None,
    requested_outputs: list[str] | None = None,
    request_id: str = "",
) -> dict[str, Any]:
    """Execute ensemble ``ensemble_name`` of ``repository`` on ``inputs``; return its outputs (NumPy).

    ``models`` stands in for the members that are not Python-backend models (onnxruntime, pytorch, fil, ...):
    ``models={"bert-large": fn}`` where ``fn(inputs) -> outputs`` takes a dict of the member's input names (its
    config's, e.g. ``INPUT__0``) to arrays and returns a dict of its output names (``OUTPUT__0``) to arrays of
    the config's shape with the batch dimension first. Returning anything else is an :class:`EnsembleError`.

    Raises :class:`EnsembleError` naming the step, the model and the tensor when something fails.
    ``request_id`` is the client's id; like the server, every step request carries it.
    """
    repo = Path(repository)
    ens_dir = repo / ensemble_name
    try:
        ens_cfg_proto = cfgmod.normalize_config(
            cfgmod.autocomplete_backend_fields(cfgmod.load_config(ens_dir), ensemble_name, ens_dir)
        )
    except cfgmod.ConfigError as exc:
        raise EnsembleError(str(exc)) from None
    if ens_cfg_proto.platform != "ensemble" or not ens_cfg_proto.HasField("ensemble_scheduling"):
        raise EnsembleError(
            f"model '{ensemble_name}' is not an ensemble (platform: \"ensemble\" + ensemble_scheduling)"
        )
    ens_cfg = cfgmod.config_to_json_dict(ens_cfg_proto)
    members = dict(models or {})

    # Client-side request to the ensemble, validated like any request.
    try:
        tensors = {name: _array_to_tensor(name, value, client=True) for name, value in inputs.items()}
        shapes = {n: (pb.dtype_code_of(t), t.shape()) for n, t in tensors.items()}
        validate_request(ens_cfg, shapes, requested_outputs, request_id)
    except InferError as exc:
        raise EnsembleError(exc.error.message(), error=exc.error) from None

    steps = list(enumerate(ens_cfg["ensemble_scheduling"]["step"]))
    harnesses: dict[str, ModelHarness] = {}
    try:
        while steps:
            ready = [
                (i, s) for i, s in steps if all(src in tensors for src in s.get("input_map", {}).values())
            ]
            if not ready:
                i, s = steps[0]
                missing = next(src for src in s.get("input_map", {}).values() if src not in tensors)
                raise EnsembleError(
                    f"in ensemble '{ensemble_name}', step {i} (model '{s['model_name']}'): ensemble tensor "
                    f"'{missing}' is never produced (no earlier step writes it and it is not an ensemble input)",
                    step=i,
                    model=s["model_name"],
                    tensor=missing,
                )
            i, step = ready[0]
            steps.remove((i, step))
            produced = _run_step(repo, ensemble_name, i, step, tensors, members, harnesses, placement, request_id)
            tensors.update(produced)
    finally:
        for h in harnesses.values():
            h.finalize()

    wanted = requested_outputs or [o["name"] for o in ens_cfg.get("output", [])]
    result: dict[str, Any] = {}
    for name in wanted:
        if name not in tensors:
            raise EnsembleError(
                f"in ensemble '{ensemble_name}': output '{name}' was not produced by any step", tensor=name
            )
        result[name] = _client_array(tensors[name])
    return result


def _run_step(
    repo: Path,
    ensemble_name: str,
    index: int,
    step: Mapping[str, Any],
    tensors: dict[str, pb.Tensor],
    members: dict[str, MemberFn],
    harnesses: dict[str, ModelHarness],
    placement: str,
    request_id: str = "",
) -> dict[str, pb.Tensor]:
    model = step["model_name"]
    input_map: dict[str, str] = dict(step.get("input_map", {}))
    output_map: dict[str, str] = dict(step.get("output_map", {}))
    where = f"in ensemble '{ensemble_name}', step {index} (model '{model}')"

    if model in members:
        args = {m_in: _client_array(tensors[src]) for m_in, src in input_map.items()}
        try:
            out = members[model](args)
        except Exception as exc:
            raise EnsembleError(f"{where}: {type(exc).__name__}: {exc}", step=index, model=model) from exc
        if not isinstance(out, Mapping):
            names = ", ".join(f"'{m}': array" for m in output_map) or "output name: array"
            raise EnsembleError(
                f"{where}: the models= callable must return a dict of the model's output names to arrays "
                f"({{{names}}}), not {type(out).__name__}",
                step=index,
                model=model,
            )
        produced = {}
        for m_out, dst in output_map.items():
            if m_out not in out:
                raise EnsembleError(
                    f"{where}: output '{m_out}' (ensemble tensor '{dst}') was not returned by the callable",
                    step=index,
                    model=model,
                    tensor=dst,
                )
            produced[dst] = _array_to_tensor(dst, out[m_out])
        return produced

    model_dir = repo / model
    if not model_dir.is_dir():
        raise EnsembleError(f"{where}: model directory {model_dir} does not exist", step=index, model=model)
    if not _member_is_python(model_dir):
        raise EnsembleError(
            f"{where}: '{model}' is not a Python-backend model; pass models={{'{model}': callable}}",
            step=index,
            model=model,
        )
    h = harnesses.get(model)
    if h is None:
        version = int(step.get("model_version", -1))
        h = load_model(
            model_dir, version=version if version > 0 else _latest_version(model_dir), placement=placement
        )
        harnesses[model] = h

    req = pb.InferenceRequest(
        inputs=[_renamed(tensors[src], m_in) for m_in, src in input_map.items()],
        requested_output_names=list(output_map),
        model_name=model,
        request_id=request_id,
    )
    try:
        responses = h.execute([req])
    except InferError as exc:
        tensor = _tensor_in_message(exc.error.message(), input_map)
        about = f" (ensemble tensor '{tensor}')" if tensor else ""
        raise EnsembleError(
            f"{where}: {exc.error.message()}{about}", step=index, model=model, tensor=tensor, error=exc.error
        ) from None
    resp = responses[0][-1] if h.decoupled else responses[0]
    if resp is None or resp.has_error():
        err = resp.error() if resp is not None else pb.TritonError("no response")
        raise EnsembleError(f"{where}: {err.message()}", step=index, model=model, error=err)
    got = {t.name(): t for t in resp.output_tensors()}
    produced = {}
    for m_out, dst in output_map.items():
        if m_out not in got:
            raise EnsembleError(
                f"{where}: output '{m_out}' (ensemble tensor '{dst}') is missing from the response",
                step=index,
                model=model,
                tensor=dst,
            )
        produced[dst] = _renamed(got[m_out], dst)
    return produced


def _renamed(tensor: pb.Tensor, name: str) -> pb.Tensor:
    t = pb.Tensor.__new__(pb.Tensor)
    t._init(name, tensor._dtype, tensor.shape(), tensor._memory, tensor._device_id)
    t._np, t._dev, t._serialized, t._keep = tensor._np, tensor._dev, tensor._serialized, tensor._keep
    return t


def _tensor_in_message(message: str, input_map: Mapping[str, str]) -> str | None:
    for m_in, src in input_map.items():
        if f"'{m_in}'" in message:
            return src
    return None


def _latest_version(model_dir: Path) -> int:
    versions = [int(p.name) for p in model_dir.iterdir() if p.is_dir() and p.name.isdigit()]
    if not versions:
        raise EnsembleError(f"model directory {model_dir} has no version directory")
    return max(versions)
