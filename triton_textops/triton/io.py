"""Tensor I/O between pb_utils and the ops, keeping data on the device.

- Inputs: CPU tensors via ``as_numpy()`` (uploaded once when the instance runs on the GPU); GPU tensors
  via DLPack with no copy (``cupy.from_dlpack(tensor)``).
- Outputs: NumPy arrays as ``pb_utils.Tensor(name, ndarray)``; CuPy arrays as
  ``pb_utils.Tensor.from_dlpack(name, array)`` — the array object, never a raw capsule (no stream sync
  in real Triton) and never NumPy data (real Triton corrupts it).
- Errors: :func:`error_response` maps our :class:`InputError` to ``TritonError(INVALID_ARG)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import numpy as np

from triton_textops.errors import ConfigError, InputError


def device_of(args: dict[str, str]) -> str:
    """``cuda:<id>`` for KIND_GPU instances, else ``cpu``."""
    if args.get("model_instance_kind") == "GPU":
        return f"cuda:{int(args.get('model_instance_device_id', '0'))}"
    return "cpu"


def input_tensors(request: Any) -> dict[str, Any]:
    """A request's input tensors by name, in one pass: ``pb_utils.get_input_tensor_by_name`` walks
    ``request.inputs()`` (a new list of tensor objects from the stub) on every call, so a model reading several
    inputs, most of them optional and absent (TensorRT-LLM's preprocessing: 9), reads them from this instead."""
    return {t.name(): t for t in request.inputs()}


def get_tensor(pb_utils: Any, request: Any, name: str, *, optional: bool = False) -> Any:
    """The input tensor ``name`` of a request, or of its :func:`input_tensors`; :class:`InputError` when a required
    one is missing."""
    t = request.get(name) if isinstance(request, dict) else pb_utils.get_input_tensor_by_name(request, name)
    if t is None and not optional:
        raise InputError(f"missing input '{name}'")
    return t


def to_array(tensor: Any, xp: ModuleType) -> Any:
    """A numeric input tensor as an array of ``xp``: zero-copy for GPU tensors on a GPU instance."""
    if tensor.is_cpu():
        arr = tensor.as_numpy()
        return arr if xp is np else xp.asarray(arr)
    import cupy  # a GPU tensor only reaches a process that has CuPy and a GPU

    arr = cupy.from_dlpack(tensor)
    return arr if xp is not np else cupy.asnumpy(arr)


def text_rows(tensor: Any, name: str) -> np.ndarray:
    """A BYTES input (always on the CPU, object array of bytes) as a 1-D object array of rows."""
    if tensor.is_cpu() is False:  # never happens in Triton: BYTES inputs are always CPU
        raise InputError(f"input '{name}' must be a TYPE_STRING (BYTES) tensor")
    arr = tensor.as_numpy()
    if arr.dtype != np.object_ and arr.dtype.kind != "S":
        raise InputError(f"input '{name}' must be TYPE_STRING (BYTES), got dtype {arr.dtype}")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    elif arr.ndim != 1:
        raise InputError(f"input '{name}' must have shape [batch] or [batch, 1], got {list(arr.shape)}")
    return arr


def numeric(arr: Any, name: str, kinds: str = "fiu") -> Any:
    """Check that an input array is numeric (dtype kind in ``kinds``)."""
    if arr.dtype.kind not in kinds:
        raise InputError(f"input '{name}' has dtype {arr.dtype}; expected a numeric tensor")
    return arr


def make_output(pb_utils: Any, name: str, arr: Any, dtype: Any) -> Any:
    """An output tensor of exactly ``dtype`` (the config's), on the array's own device."""
    if isinstance(arr, np.ndarray):
        return pb_utils.Tensor(name, np.ascontiguousarray(arr, dtype=dtype))
    import cupy

    return pb_utils.Tensor.from_dlpack(name, cupy.ascontiguousarray(arr, dtype=dtype))


def client_terms(cfg: dict[str, Any], client_names: Mapping[str, str]) -> dict[str, str]:
    """The ``client_names`` parameter checked against the config's inputs, as ``{tensor: what errors call it}``:
    ``'max_tokens' (REQUEST_OUTPUT_LEN in model 'preprocessing')``. In a real server an ensemble's step error is
    the model's text after ``in ensemble 'E', ``: the client reads the name it sent, the operator the model's."""
    model = cfg.get("name", "?")
    inputs = {t["name"] for t in cfg.get("input") or []}
    bad = sorted(set(client_names) - inputs)
    if bad:
        raise ConfigError(f"model '{model}': client_names: {', '.join(repr(b) for b in bad)} is not a config input "
                          f"(inputs: {', '.join(sorted(inputs)) or 'none'})")
    return {k: f"'{v}' ({k} in model '{model}')" for k, v in client_names.items()}


def error_response(pb_utils: Any, exc: BaseException, client_names: Mapping[str, str] | None = None) -> Any:
    """One request's error: INVALID_ARG for bad input (its quoted tensor names in the client's terms, see
    :func:`client_terms`), INTERNAL for anything else."""
    if isinstance(exc, InputError):
        msg = str(exc)
        if client_names:
            pattern = "'(" + "|".join(re.escape(k) for k in sorted(client_names, key=len, reverse=True)) + ")'"
            msg = re.sub(pattern, lambda m: client_names[m.group(1)], msg)
        return pb_utils.InferenceResponse(error=pb_utils.TritonError(msg, pb_utils.TritonError.INVALID_ARG))
    msg = f"{type(exc).__name__}: {exc}"
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(msg, pb_utils.TritonError.INTERNAL))
