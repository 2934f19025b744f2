"""Run a Triton Python-backend model directory in-process, the way the server would.

``load_model(model_dir)`` parses ``config.pbtxt`` with Triton's schema, runs ``auto_complete_config``,
normalizes the config like the server, builds the 7 ``args`` keys, imports ``<version>/model.py`` as
module ``<version>.model`` with the model and version directories on ``sys.path`` (isolated per model,
so two models that both ship ``model.py``/``helpers.py`` do not clash), then checks every request
against the config with the server's error messages before calling ``execute``.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import random
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from triton_textops.ops.core.xp import _cupy
from triton_textops.testing import pb_utils as pb
from triton_textops.triton import config as cfgmod

__all__ = [
    "load_model",
    "ModelHarness",
    "ModelLoadError",
    "InferError",
    "PLACEMENTS",
    "validate_request",
    "server_input_order",
]

PLACEMENTS = ("cpu", "gpu", "mixed")

_TYPE_STRING = 13
# bytes per element of each Triton DataType code (BF16 = 14)
_ITEM_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 2, 8: 4, 9: 8, 10: 2, 11: 4, 12: 8, 14: 2}
_RESCHEDULE_REFUSED = (
    "Failed to release request: Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model "
    "is not configured to handle such a flag."
)
_KIND_NAMES = {"KIND_CPU": "CPU", "KIND_GPU": "GPU", "KIND_MODEL": "MODEL", "KIND_AUTO": "AUTO"}


class ModelLoadError(RuntimeError):
    """The model failed to load (the server would mark it UNAVAILABLE); ``.error`` is a TritonError."""

    def __init__(self, message: str, code: Any = pb.TritonError.INTERNAL) -> None:
        super().__init__(message)
        self.error = pb.TritonError(message, code)


class InferError(RuntimeError):
    """A request failed; ``.error`` is the TritonError the client would see (``.code``, message)."""

    def __init__(self, error: pb.TritonError) -> None:
        super().__init__(error.message())
        self.error = error
        self.code = error.code()


def _dims_str(dims: Sequence[int]) -> str:
    return "[" + ",".join(str(int(d)) for d in dims) + "]"


def _protocol_of_array(arr: Any) -> int:
    """Triton DataType code a client would send for ``arr`` (``S``/object -> BYTES)."""
    dt = np.dtype(arr.dtype)
    if dt.kind in ("S", "O"):
        return _TYPE_STRING
    code = pb.numpy_to_triton_type(dt)
    if code is None:
        raise TypeError(f"unsupported input dtype {dt} (a client cannot send it)")
    return code


def reject_unicode_array(name: str, arr: Any) -> None:
    """A NumPy ``<U`` array cannot be sent by tritonclient (``np_to_triton_dtype`` has no type for it)."""
    if isinstance(arr, np.ndarray) and arr.dtype.kind == "U":
        raise InferError(
            pb.TritonError(
                f"input '{name}': a NumPy unicode array (dtype {arr.dtype.str}) cannot be sent to Triton "
                "(tritonclient rejects it); send bytes or an object array, e.g. "
                "np.array([s.encode() for s in texts], dtype=object)",
                pb.TritonError.INVALID_ARG,
            )
        )


def _gpu_device_count() -> int:
    cp = _cupy()
    return 0 if cp is None else int(cp.cuda.runtime.getDeviceCount())


# --------------------------------------------------------------------------- server input order
#
# CORE keeps a request's inputs in ``std::unordered_map<std::string, Input> original_inputs_`` and walks
# that map for the "Got input(s) [...]" list, the batch-size check and the per-input dtype/shape checks,
# so which input an error names follows libstdc++'s hash-table iteration order, not the client's order.
# ``server_input_order`` reproduces it: std::hash<std::string> (``_Hash_bytes``, 64-bit Murmur2 variant,
# seed 0xc70f6907), prime bucket counts of ``_Prime_rehash_policy`` (max load factor 1), a new node goes
# to the front of its bucket or, in an empty bucket, to the front of the list, and a rehash re-inserts
# the nodes in list order by the same rule. Checked against g++ 12 and against tritonserver 2.51.

_M64 = (1 << 64) - 1
_HASH_MUL = (0xC6A4A793 << 32) + 0x5BD1E995
_HASH_SEED = 0xC70F6907
# bucket counts an unordered_map grows through when filled one element at a time (libstdc++)
_BUCKET_COUNTS = (13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043, 85229, 172933, 351061)


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def cxx_string_hash(data: bytes) -> int:
    """libstdc++ ``std::hash<std::string>`` on 64-bit Linux (``std::_Hash_bytes``)."""
    n = len(data)
    aligned = n & ~7
    h = _HASH_SEED ^ ((n * _HASH_MUL) & _M64)
    for i in range(0, aligned, 8):
        d = (_shift_mix((int.from_bytes(data[i : i + 8], "little") * _HASH_MUL) & _M64) * _HASH_MUL) & _M64
        h = ((h ^ d) * _HASH_MUL) & _M64
    if n & 7:
        h = ((h ^ int.from_bytes(data[aligned:], "little")) * _HASH_MUL) & _M64
    h = (_shift_mix(h) * _HASH_MUL) & _M64
    return _shift_mix(h)


def server_input_order(names: Sequence[str]) -> list[str]:
    """Iteration order of a ``std::unordered_map<std::string, ...>`` filled with ``names`` in order."""
    order: list[str] = []
    codes: dict[str, int] = {}
    buckets = 0
    for name in names:
        if name in codes:
            continue
        if len(order) + 1 > buckets:
            fits = [b for b in _BUCKET_COUNTS if b >= len(order) + 1]
            if not fits:  # beyond any real request; keep the client's order
                return list(dict.fromkeys(names))
            buckets = fits[0]
            rehashed: list[str] = []
            head: dict[int, str] = {}
            for node in order:
                b = codes[node] % buckets
                rehashed.insert(rehashed.index(head[b]) if b in head else 0, node)
                head[b] = node
            order = rehashed
        code = codes[name] = cxx_string_hash(name.encode("utf-8", "surrogatepass"))
        b = code % buckets
        first = next((x for x in order if codes[x] % buckets == b), None)
        order.insert(order.index(first) if first is not None else 0, name)
    return order


def validate_request(
    config: Mapping[str, Any],
    shapes: Mapping[str, tuple[int, list[int]]],
    requested: Sequence[str] | None,
    request_id: str = "",
) -> None:
    """CORE ``InferenceRequest::Normalize`` checks, in the same order and wording (2.51).

    ``shapes`` maps input name -> (Triton DataType code, full shape), in the order the client added
    them. Raises :class:`InferError`. Like the server: request checks carry ``[request id: <id>] ``
    (``<id_unknown>`` without an id); the unknown-output and unknown-input errors come from the model
    lookup and carry none; inputs are visited in :func:`server_input_order`; requested outputs are a
    ``std::set`` (sorted).
    """
    model = config["name"]
    inputs_cfg = {io["name"]: io for io in config.get("input", [])}
    outputs_cfg = {io["name"] for io in config.get("output", [])}
    prefix = f"[request id: {request_id or '<id_unknown>'}] "
    inv = pb.TritonError.INVALID_ARG

    def fail(msg: str, with_prefix: bool = True) -> None:
        raise InferError(pb.TritonError((prefix if with_prefix else "") + msg, inv))

    def lookup(name: str) -> Mapping[str, Any]:
        if name not in inputs_cfg:
            fail(f"unexpected inference input '{name}' for model '{model}'", with_prefix=False)
        return inputs_cfg[name]

    for out in sorted(set(requested or []), key=lambda n: n.encode()):
        if out not in outputs_cfg:
            fail(f"unexpected inference output '{out}' for model '{model}'", with_prefix=False)
    order = server_input_order(list(shapes))
    cfg_inputs = config.get("input", [])
    required = [io["name"] for io in cfg_inputs if not io.get("optional", False)]
    if len(shapes) > len(cfg_inputs) or len(shapes) < len(required):
        missing = [n for n in required if n not in shapes]
        got = "[" + ",".join(f"'{n}'" for n in order) + "]"
        miss = "[" + ",".join(f"'{n}'" for n in missing) + "]"
        if missing == []:
            miss = "]"  # the server pops the "[" when nothing is missing
        if len(cfg_inputs) == len(required):
            fail(
                f"expected {len(cfg_inputs)} inputs but got {len(shapes)} inputs for model '{model}'. "
                f"Got input(s) {got}, but missing required input(s) {miss}. Please provide all required input(s)."
            )
        fail(
            f"expected number of inputs between {len(required)} and {len(cfg_inputs)} but got {len(shapes)} "
            f"inputs for model '{model}'. Got input(s) {got}, but missing required input(s) {miss}. "
            "Please provide all required input(s)."
        )
    mbs = int(config.get("max_batch_size", 0))
    batch = 0
    if mbs > 0:
        for name in order:
            shape = shapes[name][1]
            if lookup(name).get("is_shape_tensor"):
                continue
            if len(shape) == 0:
                fail(f"input '{name}' has no shape but model requires batch dimension for '{model}'")
            if batch == 0:
                batch = shape[0]
            elif shape[0] != batch:
                fail(f"input '{name}' batch size does not match other inputs for '{model}'")
    if batch > mbs:
        fail(f"inference request batch-size must be <= {mbs} for '{model}'")
    for name in order:
        code, shape = shapes[name]
        io = lookup(name)
        want = io["data_type"].replace("TYPE_", "")
        want = "BYTES" if want == "STRING" else want
        if pb.protocol_dtype_name(code) != want:
            fail(
                f"inference input '{name}' data-type is '{pb.protocol_dtype_name(code)}', but model '{model}' "
                f"expects '{want}'"
            )
        dims = list(shape[1:]) if (mbs > 0 and not io.get("is_shape_tensor")) else list(shape)
        cdims = [int(d) for d in io["dims"]]
        ok = len(cdims) == len(dims) and all(c == -1 or c == d for c, d in zip(cdims, dims))
        if not ok:
            full = ([-1] if mbs > 0 else []) + cdims
            note = (
                "NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be "
                "prepended to each input shape. If you want to specify the full shape including the batch dim "
                "in your input dims config, try setting max_batch_size to zero. See the model configuration "
                "docs for more info on max_batch_size."
                if mbs > 0
                else ""
            )
            fail(
                f"unexpected shape for input '{name}' for model '{model}'. Expected {_dims_str(full)}, got "
                f"{_dims_str(shape)}. {note}"
            )
        # CORE checks each input's data against its shape "with batch dim": the request batch size (0 when
        # the first batched input seen had zero rows, then no batch dim at all) and the dims. [E] 2.51: a
        # zero-row [0, 3] FP32 input -> "Expected 12, got 0"; a zero-row BYTES input -> "expected 1 string
        # elements ... got 0".
        if mbs > 0 and not io.get("is_shape_tensor"):
            with_batch = ([batch] if batch else []) + [int(d) for d in shape[1:]]
        else:
            with_batch = [int(d) for d in shape]
        expected, got = int(np.prod(with_batch, dtype=np.int64)), int(np.prod(shape, dtype=np.int64))
        if want == "BYTES":
            if got > expected:
                fail(
                    f"unexpected number of string elements {expected + 1} for inference input '{name}' for model "
                    f"'{model}', expecting {expected}"
                )
            if got < expected:
                fail(f"expected {expected} string elements for inference input '{name}' for model '{model}', got {got}")
        elif got != expected:
            size = _ITEM_SIZES[code]
            fail(
                f"input byte size mismatch for input '{name}' for model '{model}'. Expected {expected * size}, "
                f"got {got * size}"
            )


@contextmanager
def _active(harness: ModelHarness, in_execute: bool) -> Iterator[None]:
    prev_exec = harness._in_execute
    harness._in_execute = in_execute
    pb._runtime.stack.append(harness)
    try:
        with harness._modules():
            yield
    finally:
        pb._runtime.stack.pop()
        harness._in_execute = prev_exec


class ModelHarness:
    """One loaded model instance. Create with :func:`load_model`.

    ``response_timeout`` (s) bounds the wait for the final flag of responses sent after ``execute``
    returned; ``max_reschedules`` bounds how often one request may be rescheduled; ``log`` collects the
    server log lines the harness emulates; ``metrics()``/``metrics_text()`` read the model's custom metrics.
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str],
        *,
        version: int = 1,
        placement: str = "cpu",
        instance_kind: str | None = None,
        device_id: int = 0,
        seed: int = 0,
        supported_gpus: Sequence[int] | None = None,
        response_timeout: float = 30.0,
    ) -> None:
        if placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
        self.model_dir = Path(model_dir).resolve()
        self.model_name = self.model_dir.name
        self.version = int(version)
        self.version_dir = str(self.model_dir / str(self.version))
        self.placement = placement
        self.seed = seed
        self._in_execute = False
        self._owned: dict[str, Any] = {}
        self._finalized = False
        self._counter = 0
        self._lock = threading.RLock()
        self.log: list[str] = []
        self.response_timeout = float(response_timeout)
        self.max_reschedules = 10000
        self._model_threads: list[threading.Thread] = []
        self._next_sequence_id = 1
        if placement != "cpu" and _cupy() is None:
            raise ValueError(f"placement={placement!r} needs CuPy and a CUDA device; use placement='cpu'")
        gpus = list(range(_gpu_device_count())) if supported_gpus is None else list(supported_gpus)

        pb_mod = _install()
        self._load_config_and_module(gpus, pb_mod)
        self._make_args(instance_kind, device_id)
        self._initialize()

    # ------------------------------------------------------------------ loading
    def _load_config_and_module(self, gpus: list[int], pb_mod: Any) -> None:
        cfg_path = self.model_dir / "config.pbtxt"
        if not self.model_dir.is_dir():
            raise ModelLoadError(f"model directory {self.model_dir} does not exist", pb.TritonError.NOT_FOUND)
        try:
            raw = (
                cfgmod.load_config(cfg_path) if cfg_path.exists() else cfgmod.model_config_pb2().ModelConfig()
            )
        except cfgmod.ConfigError as exc:
            raise ModelLoadError(str(exc), pb.TritonError.INVALID_ARG) from None
        if raw.name and raw.name != self.model_name:
            raise ModelLoadError(
                f"unexpected directory name '{self.model_name}' for model '{raw.name}', directory name must "
                "equal model name",
                pb.TritonError.INVALID_ARG,
            )
        config = cfgmod.autocomplete_backend_fields(raw, self.model_name, self.model_dir)
        if config.backend != "python":
            raise ModelLoadError(
                f"model '{self.model_name}' uses backend '{config.backend or config.platform}'; the harness runs "
                "Python-backend models only",
                pb.TritonError.INVALID_ARG,
            )
        config = cfgmod.normalize_config(config)
        # CORE ValidateInstanceGroup (2.51), run before the backend's auto-complete: a KIND_GPU group
        # on a machine without GPUs fails the load instead of starting a "GPU" instance.
        for group in cfgmod.normalize_instance_groups(config, supported_gpus=gpus).instance_group:
            kind = cfgmod.model_config_pb2().ModelInstanceGroup.Kind.Name(group.kind)
            if kind == "KIND_GPU" and not gpus:
                raise ModelLoadError(
                    f"instance group {group.name} of model {config.name} has kind KIND_GPU but no GPUs are available",
                    pb.TritonError.INVALID_ARG,
                )
        model_py = Path(self.version_dir) / (config.default_model_filename or "model.py")
        if not model_py.is_file():
            raise ModelLoadError(f"{model_py} does not exist", pb.TritonError.NOT_FOUND)
        self._import_module(model_py)

        # auto_complete_config runs like the server's separate short-lived stub process.
        cls = self.module.TritonPythonModel
        json_in = cfgmod.config_to_json(config)
        model_config: Any = pb_mod.ModelConfig(json_in)
        if hasattr(cls, "auto_complete_config"):
            try:
                with _active(self, in_execute=False):
                    model_config = cls.auto_complete_config(model_config)
            except Exception as exc:  # noqa: BLE001 - reported like the stub does
                raise ModelLoadError(
                    "Failed to initialize Python stub for auto-complete: " + pb.format_exception(exc)
                ) from exc
        if not isinstance(model_config, pb_mod.ModelConfig):
            raise ModelLoadError(
                f"auto_complete_config function in model '{self.model_name}' must return a valid pb.ModelConfig object."
            )
        try:
            completed = cfgmod.config_from_dict(model_config._model_config)
        except cfgmod.ConfigError as exc:
            raise ModelLoadError(str(exc), pb.TritonError.INVALID_ARG) from None
        completed = cfgmod.normalize_config(completed)
        completed = cfgmod.normalize_instance_groups(completed, supported_gpus=gpus)
        try:
            cfgmod.validate_io_config(completed)
        except cfgmod.ConfigError as exc:
            raise ModelLoadError(str(exc), pb.TritonError.INVALID_ARG) from None
        self.config_proto = completed
        self.config: dict[str, Any] = cfgmod.config_to_json_dict(completed)
        self.decoupled = bool(self.config.get("model_transaction_policy", {}).get("decoupled", False))
        self.iterative = bool(self.config.get("sequence_batching", {}).get("iterative_sequence", False))
        self.force_cpu_only = True
        param = self.config.get("parameters", {}).get("FORCE_CPU_ONLY_INPUT_TENSORS")
        if param is not None:
            value = param.get("string_value", "")
            if value == "yes":
                self.force_cpu_only = True
            elif value == "no":
                self.force_cpu_only = False
                self.log.append(
                    "Input tensors can be both in CPU and GPU. FORCE_CPU_ONLY_INPUT_TENSORS is off."
                )
            else:
                raise ModelLoadError(
                    f"Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: {value}'", pb.TritonError.UNSUPPORTED
                )
        self._inputs_cfg = {io["name"]: io for io in self.config.get("input", [])}
        self._outputs_cfg = {io["name"]: io for io in self.config.get("output", [])}

    def _import_module(self, model_py: Path) -> None:
        """Import ``<version>/model.py`` as ``<version>.model`` with the server's sys.path additions."""
        mod_name = f"{self.version}.{model_py.stem}"
        self._paths = [self.version_dir, str(self.model_dir)]
        before = set(sys.modules)
        with self._modules():
            try:
                self.module = importlib.import_module(mod_name)
            except Exception as exc:  # noqa: BLE001
                raise ModelLoadError(
                    f"Failed to initialize Python stub: {pb.format_exception(exc, skip_frames=0)}"
                ) from exc
            self._adopt_new_modules(before)
        if not hasattr(self.module, "TritonPythonModel"):
            raise ModelLoadError(
                f"Failed to initialize Python stub: AttributeError: module '{mod_name}' has no attribute "
                "'TritonPythonModel'"
            )

    def _adopt_new_modules(self, before: set[str]) -> None:
        root = str(self.model_dir)
        for name in set(sys.modules) - before:
            # (read from the module's __dict__: a lazy module's __getattr__, as transformers' is, would import
            # its submodules, and fail where their optional dependencies are missing)
            mod = sys.modules.get(name)
            attrs = getattr(mod, "__dict__", {})
            file = attrs.get("__file__") or ""
            paths = [str(p) for p in attrs.get("__path__") or []]
            if file.startswith(root) or any(p.startswith(root) for p in paths) or name == str(self.version):
                self._owned[name] = mod

    @contextmanager
    def _modules(self) -> Iterator[None]:
        """Install this model's modules and sys.path entries for the duration of a call."""
        displaced = {n: sys.modules[n] for n in self._owned if n in sys.modules}
        # A namespace package "<version>" from another model must not shadow ours.
        version_pkg = str(self.version)
        if version_pkg not in self._owned and version_pkg in sys.modules:
            displaced[version_pkg] = sys.modules.pop(version_pkg)
        for n, m in self._owned.items():
            sys.modules[n] = m
        added = [p for p in self._paths if p not in sys.path]
        sys.path.extend(added)
        before = set(sys.modules)
        try:
            yield
        finally:
            self._adopt_new_modules(before)
            for n in self._owned:
                sys.modules.pop(n, None)
            sys.modules.update(displaced)
            for p in added:
                try:
                    sys.path.remove(p)
                except ValueError:
                    pass

    def _make_args(self, instance_kind: str | None, device_id: int) -> None:
        group = (self.config.get("instance_group") or [{}])[0]
        kind = _KIND_NAMES.get(group.get("kind", "KIND_CPU"), "CPU")
        dev = int(group["gpus"][0]) if kind == "GPU" and group.get("gpus") else 0
        if instance_kind is not None:
            if instance_kind not in ("CPU", "GPU", "MODEL"):
                raise ValueError("instance_kind must be 'CPU', 'GPU' or 'MODEL'")
            kind, dev = instance_kind, device_id
        self.instance_name = f"{group.get('name', self.model_name)}_0"
        self.instance_kind = kind
        self.device_id = dev
        self.args: dict[str, str] = {
            "model_config": cfgmod.config_to_json(self.config_proto),
            "model_instance_kind": kind,
            "model_instance_name": self.instance_name,
            "model_instance_device_id": str(dev),
            "model_repository": str(self.model_dir),
            "model_version": str(self.version),
            "model_name": self.model_name,
        }

    def _track_threads(self, before: set[int | None]) -> None:
        """Remember the threads the model started (they may still send responses after ``execute``)."""
        self._model_threads = [t for t in self._model_threads if t.is_alive()]
        self._model_threads += [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]

    def _model_thread_alive(self) -> bool:
        me = threading.current_thread()
        return any(t.is_alive() and t is not me for t in self._model_threads)

    def _initialize(self) -> None:
        before = {t.ident for t in threading.enumerate()}
        try:
            with _active(self, in_execute=False):
                self.instance = self.module.TritonPythonModel()
                if hasattr(self.instance, "initialize"):
                    self.instance.initialize(dict(self.args))
            self._track_threads(before)
        except Exception as exc:  # noqa: BLE001
            raise ModelLoadError("Failed to initialize Python stub: " + pb.format_exception(exc)) from exc
        pb._runtime.models[self.model_name] = self

    # ------------------------------------------------------------------ requests
    def _convert_input(self, name: str, value: Any) -> Any:
        """Turn a user value (str list, NumPy, CuPy, nested list) into the array a client would send."""
        io = self._inputs_cfg.get(name)
        if _is_cupy(value):
            return value
        if isinstance(value, np.ndarray):
            reject_unicode_array(name, value)
            return value
        if isinstance(value, (str, bytes)):
            return np.array([value], dtype=np.object_)
        if io is not None and io["data_type"] == "TYPE_STRING":
            return np.array(value, dtype=np.object_)
        if io is not None and io["data_type"] != "TYPE_BF16":
            return np.asarray(value, dtype=pb.triton_string_to_numpy(io["data_type"]))
        arr = np.asarray(value)
        return arr.astype(np.object_) if arr.dtype.kind == "U" else arr  # a list of str: sent as BYTES

    def _placement_gpu(self, name: str, dtype_code: int, source_on_gpu: bool) -> bool:
        if dtype_code == _TYPE_STRING or self.force_cpu_only:
            return False
        if self.placement == "cpu":
            return False
        if self.placement == "gpu":
            return True
        rnd = random.Random(f"{self.seed}:{self._counter}:{name}")
        return rnd.random() < 0.5

    def _validate(
        self, shapes: Mapping[str, tuple[int, list[int]]], requested: Sequence[str] | None, request_id: str
    ) -> None:
        validate_request(self.config, shapes, requested, request_id)

    def make_request(
        self,
        inputs: Mapping[str, Any],
        requested_outputs: Sequence[str] | None = None,
        parameters: Mapping[str, Any] | None = None,
        *,
        request_id: str = "",
        correlation_id: int | str = 0,
        flags: int = 0,
    ) -> pb.InferenceRequest:
        """Build a server-given request (validated against the config, inputs placed per policy)."""
        arrays = {name: self._convert_input(name, value) for name, value in inputs.items()}
        shapes = {name: (_protocol_of_array(a), [int(s) for s in a.shape]) for name, a in arrays.items()}
        self._validate(shapes, requested_outputs, request_id)
        if parameters:
            for k, v in parameters.items():
                if not isinstance(v, (bool, int, str)):
                    raise InferError(
                        pb.TritonError(
                            f"parameter '{k}' has invalid type {type(v).__name__} (bool, int or str expected)",
                            pb.TritonError.INVALID_ARG,
                        )
                    )
        with self._lock:
            self._counter += 1
        tensors = []
        for name, arr in arrays.items():
            code = shapes[name][0]
            gpu = self._placement_gpu(name, code, _is_cupy(arr))
            tensors.append(pb.make_input_tensor(name, arr, code, gpu=gpu, device_id=self.device_id))
        return self._server_request(tensors, requested_outputs, parameters, request_id, correlation_id, flags)

    def _server_request(
        self,
        tensors: list[pb.Tensor],
        requested_outputs: Sequence[str] | None,
        parameters: Mapping[str, Any] | None,
        request_id: str,
        correlation_id: int | str,
        flags: int,
    ) -> pb.InferenceRequest:
        requested = set(requested_outputs) if requested_outputs else set(self._outputs_cfg)
        sink = pb.ResponseSink()
        sender = pb.InferenceResponseSender(self.decoupled, requested, sink)
        params = json.dumps(dict(parameters or {}), separators=(",", ":"))
        if self.iterative and correlation_id in (0, ""):
            # CORE IterativeSequencer: a request without a correlation id starts a sequence of its own
            with self._lock:
                correlation_id, self._next_sequence_id = self._next_sequence_id, self._next_sequence_id + 1
            flags = pb.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
        req = pb.InferenceRequest._server_request(
            inputs=tensors,
            requested=requested,
            sender=sender,
            request_id=request_id,
            correlation_id=correlation_id,
            parameters=params,
            flags=flags,
        )
        req._sink = sink  # type: ignore[attr-defined]
        if self.iterative:  # a rescheduled request reads its inputs again, as the client sent them
            req._pristine = [t._received_copy() for t in tensors]  # type: ignore[attr-defined]
        return req

    def _rescheduled(self, req: pb.InferenceRequest) -> pb.InferenceRequest:
        """The request as the sequence batcher hands it back: same inputs and responses, flags 0."""
        new = pb.InferenceRequest._server_request(
            inputs=[t._received_copy() for t in req._pristine],  # type: ignore[attr-defined]
            requested=set(req._requested),
            sender=pb.InferenceResponseSender(self.decoupled, set(req._requested), req._sink),  # type: ignore[attr-defined]
            request_id=req.request_id(),
            correlation_id=req.correlation_id(),
            parameters=req.parameters(),
            flags=0,
            timeout=req.timeout(),
        )
        new._sink = req._sink  # type: ignore[attr-defined]
        new._pristine = req._pristine  # type: ignore[attr-defined]
        return new

    def _from_bls(self, request: pb.InferenceRequest, error_prefix: str = "") -> pb.InferenceRequest:
        shapes = {t.name(): (pb.dtype_code_of(t), t.shape()) for t in request.inputs()}
        try:
            self._validate(shapes, sorted(request._requested) or None, request.request_id())
        except InferError as exc:
            raise InferError(pb.TritonError(error_prefix + exc.error.message(), exc.code)) from None
        with self._lock:
            self._counter += 1
        tensors = []
        for t in request.inputs():
            gpu = self._placement_gpu(t.name(), pb.dtype_code_of(t), not t.is_cpu())
            tensors.append(t._received_copy(gpu=gpu, device_id=self.device_id))
        params = request.parameters()
        return self._server_request(
            tensors,
            sorted(request._requested) or None,
            json.loads(params) if params else None,
            request.request_id(),
            request.correlation_id(),
            request.flags(),
        )

    # ------------------------------------------------------------------ execution
    def _run_execute(self, requests: list[pb.InferenceRequest]) -> list[list[pb.InferenceResponse] | None]:
        """Call ``execute`` once and apply the stub's return contract.

        Per request: every response it got (waiting for the final flag of responses sent after ``execute``
        returned), or None when the model rescheduled it.
        """
        if self._finalized:
            raise RuntimeError(f"model '{self.model_name}' has been finalized")
        error: str | None = None
        before = {t.ident for t in threading.enumerate()}
        with _active(self, in_execute=True):
            try:
                ret = self.instance.execute(requests)
                if inspect.iscoroutine(ret):
                    ret = _run_coroutine(ret)
            except Exception as exc:  # noqa: BLE001 - the whole batch fails, like the stub
                error = pb.format_exception(exc)
                ret = None
            if error is None:
                try:
                    self._check_return(requests, ret)
                except pb.TritonModelException as exc:
                    error = str(exc)
        self._track_threads(before)
        if error is not None:
            msg = f"Failed to process the request(s) for model '{self.instance_name}', message: {error}"
            if ret is not None:  # the return contract was broken: the error only (as checked before #19)
                return [[_error_response(msg)] for _ in requests]
            return [self._failed(req, msg) for req in requests]
        results: list[list[pb.InferenceResponse] | None] = []
        for req in requests:
            if req._release_flags == pb.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
                results.append(None)
            else:
                results.append(self._await_final(req))
        return results

    def _failed(self, req: pb.InferenceRequest, msg: str) -> list[pb.InferenceResponse]:
        """``execute`` raised: what the request already got through its sender, then the error.

        [E] 2.51, default mode: a response sent without flags, then the error (HTTP and gRPC clients:
        "expected a single response, got 2"); a response sent with the final flag crashes the server.
        """
        sink = req._sink  # type: ignore[attr-defined]
        sent = [r for r, _flags in list(sink) if r is not None]
        if sink.final and not self.decoupled:
            return [
                _error_response(
                    f"[pb_utils mock] model '{self.model_name}' failed after its response sender had sent the final "
                    "response (TRITONSERVER_RESPONSE_COMPLETE_FINAL): tritonserver 2.51 crashes here (the response "
                    "factory is deleted twice: SIGSEGV in TRITONBACKEND_ResponseFactoryDelete, or a heap corruption "
                    "that aborts in malloc a few requests later). Model error: "
                    + msg
                )
            ]
        return [*sent, pb.InferenceResponse(error=pb.TritonError(msg, pb.TritonError.INTERNAL))]

    def _await_final(self, req: pb.InferenceRequest) -> list[pb.InferenceResponse]:
        """Wait, like the frontend, until the request's final flag arrives (from any thread of the model)."""
        sink = req._sink  # type: ignore[attr-defined]
        done = sink.wait_final(self.response_timeout, self._model_thread_alive)
        got = [r for r, _flags in list(sink) if r is not None]
        if done:
            return got
        if not got and not self.decoupled:
            why = "the model returned None for this request and sent no response"
        else:
            why = (
                f"model '{self.model_name}' sent {len(got)} response(s) but not the final flag "
                "(TRITONSERVER_RESPONSE_COMPLETE_FINAL)"
            )
        if self._model_thread_alive():
            when = f"within response_timeout={self.response_timeout:g} s after execute returned"
        else:
            when = "and no thread the model started is still running"
        return [*got, _error_response(f"[pb_utils mock] {why} {when}: the server would never complete this request")]

    def _check_return(self, requests: list[pb.InferenceRequest], ret: Any) -> None:
        if ret is None:
            return
        if self.decoupled:
            raise pb.TritonModelException(
                f"Python model '{self.instance_name}' is using the decoupled mode and the execute function must "
                "return None."
            )
        if not isinstance(ret, list):
            raise pb.TritonModelException(f"Expected a list in the execute return, found type '{type(ret)}'.")
        if len(ret) != len(requests):
            raise pb.TritonModelException(
                "Number of InferenceResponse objects do not match the number of InferenceRequest objects. "
                f"InferenceRequest(s) size is:{len(requests)}, and InferenceResponse(s) size is:{len(ret)}\n"
            )
        for req, resp in zip(requests, ret):
            if resp is None:
                continue
            if req._release_flags == pb.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
                raise pb.TritonModelException(
                    "Expected a None object in the execute function return list for reschduled request, "
                    f"found type '{type(resp)}'."
                )
            if not isinstance(resp, pb.InferenceResponse):
                raise pb.TritonModelException(
                    "Expected an 'InferenceResponse' object in the execute function return list, found type "
                    f"'{type(resp)}'."
                )
            req.get_response_sender()._update_state(resp, pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        for req, resp in zip(requests, ret):
            if resp is not None:
                req._sink.put(resp._pruned(req._requested), pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)  # type: ignore[attr-defined]

    def _execute_lists(self, requests: list[pb.InferenceRequest]) -> list[list[pb.InferenceResponse]]:
        """Run a batch until every request is released: rescheduled requests are executed again."""
        mbs = int(self.config.get("max_batch_size", 0))
        if mbs > 0 and requests and sum(_batch_of(r) for r in requests) == 0:
            # python_backend: "no valid payloads" -> execute is not called and nothing is ever sent
            msg = (
                f"[pb_utils mock] the batch size of this execute call is 0 (every request has zero rows): "
                f"python_backend skips execute for model '{self.model_name}' and the server never answers"
            )
            return [[_error_response(msg)] for _ in requests]
        out: list[list[pb.InferenceResponse]] = [[] for _ in requests]
        pending = list(enumerate(requests))
        rounds = 0
        while pending:
            results = self._run_execute([r for _, r in pending])
            again: list[tuple[int, pb.InferenceRequest]] = []
            for (i, req), got in zip(pending, results):
                if got is not None:
                    out[i] = got
                    continue
                sent = [r for r, _flags in list(req._sink) if r is not None]  # type: ignore[attr-defined]
                if not self.iterative:
                    self.log.append(_RESCHEDULE_REFUSED)
                    out[i] = [
                        *sent,
                        _error_response(
                            f"[pb_utils mock] model '{self.model_name}' released the request with "
                            "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE but has no 'sequence_batching { "
                            f"iterative_sequence: true }}': the server logs \"{_RESCHEDULE_REFUSED}\" and never "
                            "answers the request"
                        ),
                    ]
                elif rounds >= self.max_reschedules:
                    out[i] = [
                        *sent,
                        _error_response(
                            f"[pb_utils mock] model '{self.model_name}' rescheduled the request more than "
                            f"max_reschedules={self.max_reschedules} times"
                        ),
                    ]
                else:
                    again.append((i, self._rescheduled(req)))
            pending = again
            rounds += 1
        return out

    def execute_all(self, requests: Sequence[pb.InferenceRequest]) -> list[list[pb.InferenceResponse]]:
        """Run ``execute`` on a batch; per request, every response it got, in order.

        Like the server: responses sent from the model's threads after ``execute`` returned are waited for
        (until the final flag, at most ``response_timeout`` s); a request rescheduled with
        ``TRITONSERVER_REQUEST_RELEASE_RESCHEDULE`` is executed again (iterative sequence batching); a
        model that answered through its sender and then raised gets its response and the error.
        """
        reqs = [r if not r._bls else self._from_bls(r) for r in requests]
        return self._execute_lists(reqs)

    def execute(self, requests: Sequence[pb.InferenceRequest]) -> list[Any]:
        """Run ``execute`` on a batch of requests.

        Requests from :meth:`make_request` are used as is; requests built with the BLS constructor
        ``pb_utils.InferenceRequest(...)`` are validated and converted first. Returns one
        ``InferenceResponse`` per request (default mode) or one list of responses per request
        (decoupled mode). A failing batch gives every request the same error response. In default mode
        a request that got more than one response gets the error HTTP and gRPC clients see
        ("expected a single response, got 2"); :meth:`execute_all` returns them all.
        """
        results = self.execute_all(requests)
        if self.decoupled:
            return results
        out = []
        for got in results:
            if len(got) > 1:
                out.append(_error_response(f"expected a single response, got {len(got)}"))
            else:
                out.append(got[0])
        return out

    def _bls_execute(self, request: pb.InferenceRequest) -> list[pb.InferenceResponse]:
        """Serve a BLS request from another model: validated, executed, outputs placed as preferred."""
        prefix = f"Model {self.model_name} - Error when running inference: "
        try:
            server_req = self._from_bls(request, prefix)
        except InferError as exc:
            return [pb.InferenceResponse(error=exc.error)]
        got = self._execute_lists([server_req])[0]
        pref = request._preferred_memory.preferred_memory_type
        out = []
        for resp in got:
            if resp.has_error():
                out.append(pb.InferenceResponse(error=resp.error()))
                continue
            gpu = (
                None
                if pref not in (pb.TRITONSERVER_MEMORY_GPU, pb.TRITONSERVER_MEMORY_CPU)
                else (pref == pb.TRITONSERVER_MEMORY_GPU and _cupy() is not None)
            )
            tensors = [
                t._received_copy(gpu=gpu, device_id=request._preferred_memory.preferred_device_id)
                for t in resp.output_tensors()
            ]
            out.append(pb.InferenceResponse(output_tensors=tensors))
        return out

    # ------------------------------------------------------------------ metrics
    def metric_families(self) -> list[pb.MetricFamily]:
        """The ``pb_utils.MetricFamily`` objects this model created that are still alive."""
        fams = [f for f in (r() for r in pb._runtime.metric_families) if f is not None]
        return [f for f in fams if f._owner is self]

    def metrics(self) -> dict[str, list[dict[str, Any]]]:
        """Family name -> its metrics: ``{"labels", "value"}``, histograms ``{"labels", "count", "sum", "buckets"}``.

        ``buckets`` maps each upper bound (``"+Inf"`` last) to its cumulative count, as Prometheus shows it.
        """
        out: dict[str, list[dict[str, Any]]] = {}
        for fam in self.metric_families():
            rows = out.setdefault(fam._name, [])
            for m in fam._live_metrics():
                samples = m._samples()
                if fam._kind != pb.MetricFamily.HISTOGRAM:
                    rows.append({"labels": dict(m._labels), "value": samples[0][2]})
                    continue
                rows.append(
                    {
                        "labels": dict(m._labels),
                        "count": samples[0][2],
                        "sum": samples[1][2],
                        "buckets": {lab["le"]: v for _, lab, v in samples[2:]},
                    }
                )
        return out

    def metrics_text(self) -> str:
        """This model's custom metrics as Prometheus text, the way tritonserver's ``/metrics`` shows them."""
        return pb.metrics_text(self.metric_families())

    def _outputs(self, response: pb.InferenceResponse) -> dict[str, Any]:
        if response.has_error():
            raise InferError(response.error())
        return {t.name(): _client_array(t) for t in response.output_tensors()}

    def infer(
        self,
        inputs: Mapping[str, Any],
        requested_outputs: Sequence[str] | None = None,
        parameters: Mapping[str, Any] | None = None,
        **request_kw: Any,
    ) -> dict[str, Any]:
        """One request as a client would send it; returns ``{output name: NumPy array}``.

        Raises :class:`InferError` (carrying the TritonError) when the response has an error.
        """
        if self.decoupled:
            raise InferError(
                pb.TritonError(
                    f"[pb_utils mock] model '{self.model_name}' is decoupled: use infer_stream()",
                    pb.TritonError.UNSUPPORTED,
                )
            )
        req = self.make_request(inputs, requested_outputs, parameters, **request_kw)
        return self._outputs(self.execute([req])[0])

    def infer_stream(
        self,
        inputs: Mapping[str, Any],
        requested_outputs: Sequence[str] | None = None,
        parameters: Mapping[str, Any] | None = None,
        **request_kw: Any,
    ) -> list[dict[str, Any]]:
        """One request to a decoupled model; returns the outputs of every response sent."""
        req = self.make_request(inputs, requested_outputs, parameters, **request_kw)
        return [self._outputs(r) for r in self.execute_all([req])[0]]

    def infer_batch(
        self, batch: Sequence[Mapping[str, Any]], requested_outputs: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """Several requests in one ``execute`` call (what dynamic batching hands the model)."""
        reqs = [self.make_request(inputs, requested_outputs) for inputs in batch]
        return [self._outputs(r) for r in self.execute(reqs)]

    def finalize(self) -> None:
        """Call the model's ``finalize`` (once) and unregister it."""
        if self._finalized:
            return
        self._finalized = True
        try:
            if hasattr(self.instance, "finalize"):
                with _active(self, in_execute=False):
                    self.instance.finalize()
        finally:
            if pb._runtime.models.get(self.model_name) is self:
                del pb._runtime.models[self.model_name]

    def __enter__(self) -> ModelHarness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finalize()


def _error_response(message: str) -> pb.InferenceResponse:
    return pb.InferenceResponse(error=pb.TritonError(message, pb.TritonError.INTERNAL))


def _batch_of(request: pb.InferenceRequest) -> int:
    """python_backend's batch size of a request: the first dimension of its first input."""
    inputs = request.inputs()
    if not inputs or not inputs[0].shape():
        return 1
    return int(inputs[0].shape()[0])


def _is_cupy(value: Any) -> bool:
    return type(value).__module__.split(".")[0] == "cupy"


def _client_array(tensor: pb.Tensor) -> Any:
    arr = pb.tensor_to_array(tensor)
    if _is_cupy(arr):
        return arr.get()
    return arr


def _run_coroutine(coro: Any) -> Any:
    """Run an ``async def execute`` coroutine to completion (own loop, or a thread if one is running)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    result: dict[str, Any] = {}
    stack = list(pb._runtime.stack)

    def worker() -> None:
        pb._runtime.stack[:] = stack
        try:
            result["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001
            result["error"] = exc

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


def _install() -> Any:
    from triton_textops.testing import install_pb_utils  # noqa: PLC0415

    return install_pb_utils()


def load_model(
    model_dir: str | os.PathLike[str],
    *,
    version: int = 1,
    placement: str = "cpu",
    instance_kind: str | None = None,
    device_id: int = 0,
    seed: int = 0,
    supported_gpus: Sequence[int] | None = None,
    response_timeout: float = 30.0,
) -> ModelHarness:
    """Load a Python-backend model directory like the server and return its harness.

    ``placement``: "cpu" (inputs always on CPU), "gpu" (numeric inputs on the GPU when the config sets
    ``FORCE_CPU_ONLY_INPUT_TENSORS: "no"``), "mixed" (random per tensor, seeded by ``seed``); BYTES
    inputs are always on CPU. ``supported_gpus`` overrides the GPUs the server would see (default: the
    CuPy devices), which decides ``KIND_AUTO``/default instance groups and ``args``.
    ``response_timeout``: how long to wait for the final flag of responses that the model's threads
    send after ``execute`` returned (the server waits forever; the harness then reports an error).
    """
    return ModelHarness(
        model_dir,
        version=version,
        placement=placement,
        instance_kind=instance_kind,
        device_id=device_id,
        seed=seed,
        supported_gpus=supported_gpus,
        response_timeout=response_timeout,
    )
