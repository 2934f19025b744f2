"""A faithful, GPU-aware mock of ``triton_python_backend_utils`` (Triton 2.51 / python_backend r24.10).

Inside Triton the module is two layers: a pure-Python file (dtype maps, BYTES (de)serializers,
``get_*_by_name``, ``ModelConfig``, flag constants) onto which the stub ``setattr``s pybind11 classes
(``Tensor``, ``InferenceRequest``, ``InferenceResponse``, ``TritonError``, ``TritonModelException``,
``Logger``, ``MetricFamily``, ``PreferredMemory``, ...). This module supplies both: the first is upstream's
r24.10 file itself, vendored verbatim (``triton_textops/testing/_vendor/``, see its PROVENANCE.md), the second
is implemented here with the real messages and the real traps, so that a ``model.py`` tested here behaves as it
will in the server:

* ``Tensor(name, ndarray)`` takes exactly two positional arguments and only a NumPy array; unsupported
  dtypes raise ``TritonModelException("NumPy dtype is not supported.")``; BYTES arrays are serialized
  at construction; received BYTES tensors are ``object`` arrays of ``bytes``.
* ``as_numpy()`` on a GPU tensor raises; ``to_dlpack()`` on BYTES raises; ``triton_dtype()`` raises
  ``TypeError``; ``from_dlpack`` checks capsule/``__dlpack__``, C-contiguity, device and dtype.
* ``Tensor.from_dlpack`` on NumPy data is broken in the real server (the consumed capsule is renamed
  ``"used_dlpack"``, which NumPy's capsule destructor rejects: log flood with numpy<2, silently wrong
  data with numpy 2). The mock raises ``TritonModelException`` instead of corrupting data
  (``configure(numpy_from_dlpack="warn")`` turns it into a warning).
* GPU tensors hold CuPy arrays when CuPy and a CUDA device exist (``is_cpu()`` False, ``__dlpack__``).
* Response senders may be used from any thread (the harness waits for the final flag); the BLS
  constructor takes ``bytes`` where the stub takes ``std::string``; missing attributes name the pybind
  type (``'c_python_backend_utils.Tensor' object has no attribute ...``).
* ``MetricFamily``/``Metric`` keep their values, fail with the server's texts, and render as the
  server's ``/metrics`` text (:func:`metrics_text`).

Use :func:`triton_textops.testing.install_pb_utils` to register it as ``triton_python_backend_utils``.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import enum
import json
import logging
import os
import struct  # noqa: F401 - dir() of the real module lists json, np and struct
import threading
import time
import traceback
import warnings
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from triton_textops.ops.core.xp import _cupy

# The pure-Python layer is upstream's own file (python_backend r24.10), as the server's stub imports it; this module
# implements what the stub implements in C++ and attaches to it (Tensor, requests, responses, senders, errors,
# logging, metrics, model control).
from triton_textops.testing._vendor.triton_python_backend_utils import (  # noqa: F401 - the module's own API
    TRITON_STRING_TO_NUMPY,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_END,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
    TRITONSERVER_REQUEST_RELEASE_ALL,
    TRITONSERVER_REQUEST_RELEASE_RESCHEDULE,
    TRITONSERVER_RESPONSE_COMPLETE_FINAL,
    ModelConfig,
    deserialize_bytes_tensor,
    get_input_config_by_name,
    get_input_tensor_by_name,
    get_output_config_by_name,
    get_output_tensor_by_name,
    numpy_to_triton_type,
    serialize_byte_tensor,
    triton_string_to_numpy,
    triton_to_numpy_type,
    using_decoupled_model_transaction_policy,
)

_log = logging.getLogger("triton_python_backend_utils")

# ============================================================================ mock runtime state


class _Runtime:
    """Process-wide state the stub would hold: active model, loaded models (for BLS), options."""

    def __init__(self) -> None:
        self.stack: list[Any] = []  # active harnesses (initialize/execute/finalize), innermost last
        self.models: dict[str, Any] = {}  # model name -> harness, for BLS
        self.numpy_from_dlpack = "error"
        self.version = (24, 10)
        self.log_records: list[tuple[str, str]] = []
        self.metric_families: list[weakref.ref[MetricFamily]] = []

    @property
    def current(self) -> Any:
        return self.stack[-1] if self.stack else None


_runtime = _Runtime()


def configure(*, numpy_from_dlpack: str | None = None, triton_version: str | None = None) -> None:
    """Mock options: ``numpy_from_dlpack`` = "error" | "warn"; ``triton_version`` = "YY.MM" container.

    ``triton_version`` switches version-dependent API (e.g. ``InferenceResponse(parameters=...)``
    exists only from 25.02). The default emulates 24.10 (Triton 2.51).
    """
    if numpy_from_dlpack is not None:
        if numpy_from_dlpack not in ("error", "warn"):
            raise ValueError("numpy_from_dlpack must be 'error' or 'warn'")
        _runtime.numpy_from_dlpack = numpy_from_dlpack
    if triton_version is not None:
        yy, mm = triton_version.split(".")
        _runtime.version = (int(yy), int(mm))


def _version_at_least(yy: int, mm: int) -> bool:
    return _runtime.version >= (yy, mm)


# ============================================================================ errors


class TritonModelException(Exception):  # noqa: N818 - the real name
    """``c_python_backend_utils.TritonModelException``: raised by every binding error."""


TritonModelException.__module__ = "c_python_backend_utils"


class _ErrorCode(enum.IntEnum):
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7


_ErrorCode.__name__ = "__ErrorCode"
_ErrorCode.__qualname__ = "TritonError.__ErrorCode"


def _incompatible(what: str, signatures: Sequence[str], args: tuple, kwargs: dict) -> TypeError:
    sigs = "\n".join(f"    {i}. {s}" for i, s in enumerate(signatures, 1))
    invoked = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    if kwargs and not args:
        invoked = "kwargs: " + invoked
    return TypeError(
        f"{what}: incompatible {'constructor ' if what == '__init__()' else 'function '}arguments. "
        f"The following argument types are supported:\n{sigs}\n\nInvoked with: {invoked}"
    )


class _Bound:
    """Base of the mock's pybind11 classes: a missing attribute is reported with the pybind11 type name.

    pybind11 registers ``c_python_backend_utils.X`` as the C type name, so the real error reads
    ``AttributeError: 'c_python_backend_utils.InferenceResponseSender' object has no attribute 'close'``
    ([E] tritonserver 2.51); a plain Python class would say ``'InferenceResponseSender' object ...``.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"'c_python_backend_utils.{type(self).__name__}' object has no attribute '{name}'")


class TritonError(_Bound):
    """``pb_utils.TritonError(message, code=TritonError.INTERNAL)``."""

    UNKNOWN = _ErrorCode.UNKNOWN
    INTERNAL = _ErrorCode.INTERNAL
    NOT_FOUND = _ErrorCode.NOT_FOUND
    INVALID_ARG = _ErrorCode.INVALID_ARG
    UNAVAILABLE = _ErrorCode.UNAVAILABLE
    UNSUPPORTED = _ErrorCode.UNSUPPORTED
    ALREADY_EXISTS = _ErrorCode.ALREADY_EXISTS
    CANCELLED = _ErrorCode.CANCELLED

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = ("message", "code")
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in values:
                raise _incompatible("__init__()", [_TRITON_ERROR_SIG], args, kwargs)
            values[k] = v
        message = values.get("message")
        code = values.get("code", _ErrorCode.INTERNAL)
        if len(args) > 2 or not isinstance(message, str):
            raise _incompatible("__init__()", [_TRITON_ERROR_SIG], args, kwargs)
        if not isinstance(code, _ErrorCode):
            raise _incompatible("__init__()", [_TRITON_ERROR_SIG], args, kwargs)
        self._message = message
        self._code = code

    def message(self) -> str:
        """The error text."""
        return self._message

    def code(self) -> _ErrorCode:
        """The error code (``TritonError.INTERNAL`` unless given)."""
        return self._code


_TRITON_ERROR_SIG = (
    "c_python_backend_utils.TritonError(message: str, code: c_python_backend_utils.TritonError.__ErrorCode "
    "= <__ErrorCode.INTERNAL: 1>)"
)
TritonError.__module__ = "c_python_backend_utils"


# ============================================================================ Tensor

_TYPE_BYTES = 13
_TYPE_BF16 = 14
_PROTOCOL_NAMES = {
    1: "BOOL",
    2: "UINT8",
    3: "UINT16",
    4: "UINT32",
    5: "UINT64",
    6: "INT8",
    7: "INT16",
    8: "INT32",
    9: "INT64",
    10: "FP16",
    11: "FP32",
    12: "FP64",
    13: "BYTES",
    14: "BF16",
}

# DLPack device and dtype codes
_kDLCPU, _kDLCUDA, _kDLCUDAHost = 1, 2, 3
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_BOOL = 0, 1, 2, 4, 6


def _tensor_dtype_code(dtype: np.dtype) -> int:
    """The stub's numpy->Triton mapping used by ``Tensor(name, ndarray)`` (raises when unsupported)."""
    code = numpy_to_triton_type(dtype)  # the .py layer's table: bool, u/int 8-64, fp 16-64, object and bytes_
    if code is None and dtype.type == np.bytes_:  # 'S<n>' arrays (np.dtype('S5') != np.bytes_)
        code = _TYPE_BYTES
    if code is None:
        raise TritonModelException("NumPy dtype is not supported.")
    return code


def _is_c_contiguous(shape: Sequence[int], strides_elems: Sequence[int] | None) -> bool:
    """python_backend's C-order test: size-1 dims are exempt; NULL strides mean contiguous."""
    if strides_elems is None:
        return True
    expected = 1
    ndim = len(shape)
    for i in range(1, ndim):
        if shape[ndim - i] != 1:
            if strides_elems[ndim - i] != expected:
                return False
            expected *= shape[ndim - i]
    return True


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


def _capsule_tensor(capsule: Any) -> _DLManagedTensor:
    get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
    get_ptr.restype = ctypes.c_void_p
    get_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]
    is_valid = ctypes.pythonapi.PyCapsule_IsValid
    is_valid.restype = ctypes.c_int
    is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
    if not is_valid(capsule, b"dltensor"):
        raise TritonModelException(
            "[pb_utils mock] DLPack capsule is not a valid unused 'dltensor' capsule (already consumed, "
            "or a versioned capsule, which python_backend r24.10 does not read)."
        )
    return _DLManagedTensor.from_address(get_ptr(capsule, b"dltensor"))


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def _capsule_from_numpy(managed: _DLManagedTensor) -> bool:
    """True when the capsule's deleter lives in NumPy's extension module (Linux/macOS dladdr)."""
    if not managed.deleter:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        dladdr = libc.dladdr
    except (OSError, AttributeError):
        return False
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    dladdr.restype = ctypes.c_int
    info = _DlInfo()
    if not dladdr(ctypes.c_void_p(managed.deleter), ctypes.byref(info)) or not info.dli_fname:
        return False
    return b"numpy" in info.dli_fname


_CAPSULE_MARK = ctypes.c_char(b"T")  # its address marks capsules exported by Tensor.to_dlpack()


def _mark_capsule(capsule: Any) -> Any:
    set_context = ctypes.pythonapi.PyCapsule_SetContext
    set_context.restype = ctypes.c_int
    set_context.argtypes = [ctypes.py_object, ctypes.c_void_p]
    set_context(capsule, ctypes.addressof(_CAPSULE_MARK))
    return capsule


def _is_marked(capsule: Any) -> bool:
    get_context = ctypes.pythonapi.PyCapsule_GetContext
    get_context.restype = ctypes.c_void_p
    get_context.argtypes = [ctypes.py_object]
    return get_context(capsule) == ctypes.addressof(_CAPSULE_MARK)


class _CapsuleShim:
    """Lets ``np.from_dlpack`` read a raw CPU capsule (it only accepts objects with ``__dlpack__``)."""

    def __init__(self, capsule: Any, device: tuple[int, int]) -> None:
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, stream: Any = None) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device


def _numpy_trap() -> None:
    msg = (
        "[pb_utils mock] Tensor.from_dlpack() was given NumPy data. In the real python_backend this is "
        "broken: the consumed capsule is renamed 'used_dlpack', which NumPy's capsule destructor rejects "
        "(numpy<2: endless 'Exception ignored' log flood; numpy 2: silently wrong data). "
        "Use pb_utils.Tensor(name, ndarray) for CPU data."
    )
    if _runtime.numpy_from_dlpack == "warn":
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
        return
    raise TritonModelException(msg)


class Tensor(_Bound):
    """``pb_utils.Tensor``: construct with ``Tensor(name, ndarray)`` or ``Tensor.from_dlpack(name, obj)``."""

    __slots__ = ("_name", "_dtype", "_shape", "_np", "_dev", "_memory", "_device_id", "_serialized", "_keep")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs or len(args) != 2 or not isinstance(args[0], str) or not isinstance(args[1], np.ndarray):
            raise _incompatible(
                "__init__()",
                ["c_python_backend_utils.Tensor(arg0: str, arg1: numpy.ndarray)"],
                args,
                kwargs,
            )
        name, array = args
        if name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        dtype = _tensor_dtype_code(array.dtype)
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        self._init(name, dtype, list(array.shape), "CPU", 0)
        self._np = array
        if dtype == _TYPE_BYTES:
            self._serialized = serialize_byte_tensor(array)

    # -- internal constructors -------------------------------------------------------------
    def _init(self, name: str, dtype: int, shape: list[int], memory: str, device_id: int) -> None:
        self._name = name
        self._dtype = dtype
        self._shape = [int(s) for s in shape]
        self._np: np.ndarray | None = None
        self._dev: Any = None
        self._memory = memory
        self._device_id = device_id
        self._serialized: Any = None
        self._keep: Any = None

    @classmethod
    def _received_cpu(cls, name: str, array: np.ndarray, dtype: int) -> Tensor:
        """A tensor as the stub hands it to ``execute``: a fresh writeable buffer; BYTES deserialized."""
        t = cls.__new__(cls)
        t._init(name, dtype, list(array.shape), "CPU", 0)
        if dtype == _TYPE_BYTES:
            raw = serialize_byte_tensor(array)
            flat = deserialize_bytes_tensor(raw if raw != () else b"")
            t._np = flat.reshape(array.shape)
            t._serialized = raw
        else:
            t._np = np.array(array, dtype=triton_to_numpy_type(dtype), order="C", copy=True)
        return t

    @classmethod
    def _received_gpu(cls, name: str, array: Any, dtype: int, device_id: int = 0) -> Tensor:
        """A GPU tensor (CuPy array copied on ``device_id``), as inputs placed on the GPU arrive."""
        cp = _cupy()
        if cp is None:
            raise RuntimeError("GPU placement needs CuPy and a CUDA device")
        t = cls.__new__(cls)
        t._init(name, dtype, list(array.shape), "GPU", device_id)
        with cp.cuda.Device(device_id):
            t._dev = cp.array(array, dtype=triton_to_numpy_type(dtype), order="C", copy=True)
            cp.cuda.get_current_stream().synchronize()
        return t

    def _received_copy(self, gpu: bool | None = None, device_id: int = 0) -> Tensor:
        """Copy of this tensor as another model receives it (``gpu=None``: keep the placement)."""
        if self._dtype == _TYPE_BF16:
            raise TritonModelException("[pb_utils mock] BF16 tensors cannot be passed between models here")
        on_gpu = (not self.is_cpu()) if gpu is None else gpu
        if self._dtype == _TYPE_BYTES:
            on_gpu = False
        if on_gpu:
            data = self._dev if self._dev is not None else self._np
            return Tensor._received_gpu(self._name, data, self._dtype, device_id)
        host = self._np if self._np is not None else _to_host(self._dev)
        return Tensor._received_cpu(self._name, host, self._dtype)

    # -- public API ------------------------------------------------------------------------
    def name(self) -> str:
        """The tensor name."""
        return self._name

    def shape(self) -> list[int]:
        """The shape as a list of ints (batch dimension included for batched models)."""
        return list(self._shape)

    def is_cpu(self) -> bool:
        """True for CPU and pinned CPU memory."""
        return self._memory in ("CPU", "CPU_PINNED")

    def as_numpy(self) -> np.ndarray:
        """The NumPy array (CPU tensors only)."""
        if not self.is_cpu():
            raise TritonModelException("Tensor is stored in GPU and cannot be converted to NumPy.")
        if self._dtype == _TYPE_BF16:
            raise TritonModelException(
                "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and from_dlpack() instead."
            )
        return self._np  # type: ignore[return-value]

    def triton_dtype(self) -> Any:
        """Raises like the real binding (the C enum is not registered with pybind11)."""
        raise TypeError(
            "Unable to convert function return value to a Python type! The signature was\n\t(self) -> TRITONSERVER_datatype_enum"
        )

    def to_dlpack(self) -> Any:
        """A ``"dltensor"`` capsule sharing this tensor's memory (not for BYTES)."""
        if self._dtype == _TYPE_BYTES:
            raise TritonModelException("DLPack does not have support for string tensors.")
        if self._dev is not None:
            return self._dev.__dlpack__()
        arr = self._np
        if arr is None:
            raise TritonModelException("[pb_utils mock] this tensor has no exportable buffer")
        if not arr.flags.writeable:  # NumPy refuses to export read-only arrays; Triton exports anyway
            arr = arr.copy()
        return _mark_capsule(arr.__dlpack__())

    def __dlpack__(self, stream: Any = None) -> Any:
        """DLPack protocol (the stream is ignored: inputs are already synchronized)."""
        return self.to_dlpack()

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(device_type, device_id)``: (1, 0) CPU, (2, n) CUDA, (3, 0) pinned host."""
        if self._memory == "GPU":
            return (_kDLCUDA, self._device_id)
        if self._memory == "CPU_PINNED":
            return (_kDLCUDAHost, 0)
        return (_kDLCPU, 0)

    @staticmethod
    def from_dlpack(*args: Any, **kwargs: Any) -> Tensor:
        """``Tensor.from_dlpack(name, capsule_or_object)``: wrap DLPack data without a copy."""
        if kwargs or len(args) != 2 or not isinstance(args[0], str):
            raise _incompatible(
                "from_dlpack()", ["(arg0: str, arg1: object) -> c_python_backend_utils.Tensor"], args, kwargs
            )
        name, obj = args
        if name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        if _is_capsule(obj):
            managed = _capsule_tensor(obj)
            dev = (int(managed.dl_tensor.device.device_type), int(managed.dl_tensor.device.device_id))
            _check_dl_dtype(
                managed.dl_tensor.dtype.code, managed.dl_tensor.dtype.bits, managed.dl_tensor.dtype.lanes
            )
            # A capsule from pb_utils.Tensor.to_dlpack() carries the stub's own deleter in the real server
            # (identity round trip works there); the mock exports through NumPy, so it is marked as the stub's.
            from_numpy = dev[0] != _kDLCUDA and not _is_marked(obj) and _capsule_from_numpy(managed)
            return _tensor_from_dl(name, obj, dev, capsule=True, from_numpy=from_numpy)
        if not hasattr(obj, "__dlpack__") or not hasattr(obj, "__dlpack_device__"):
            raise TritonModelException(
                "Provided tensor is not supported. Tensor must be a DLPack capsule or have `__dlpack__` "
                "and `__dlpack_device__` attributes"
            )
        dev_t, dev_id = obj.__dlpack_device__()
        dev = (int(dev_t), int(dev_id))
        from_numpy = isinstance(obj, (np.ndarray, np.generic))
        return _tensor_from_dl(name, obj, dev, capsule=False, from_numpy=from_numpy)

    def __repr__(self) -> str:
        return f"<c_python_backend_utils.Tensor name={self._name!r} dtype={_PROTOCOL_NAMES.get(self._dtype)} shape={self._shape} {'CPU' if self.is_cpu() else 'GPU'}>"


Tensor.__module__ = "c_python_backend_utils"


def _check_dl_dtype(code: int, bits: int, lanes: int) -> None:
    ok = lanes == 1 and (
        (code in (_DL_INT, _DL_UINT) and bits in (8, 16, 32, 64))
        or (code == _DL_FLOAT and bits in (16, 32, 64))
        or (code == _DL_BOOL and bits == 8)
        or (code == _DL_BFLOAT and bits == 16)
    )
    if not ok:
        # The real stub maps these to TRITONSERVER_TYPE_INVALID and fails later; fail early and clearly.
        raise TritonModelException(
            f"[pb_utils mock] DLPack dtype (code={code}, bits={bits}, lanes={lanes}) is not supported by "
            "Python backend: use int/uint 8-64, float16/32/64, bool or bfloat16 with lanes=1."
        )


def _array_dtype_check(dtype: np.dtype) -> int:
    try:
        code = _tensor_dtype_code(dtype)
    except TritonModelException:
        code = 0
    if code in (0, _TYPE_BYTES):
        raise TritonModelException(
            f"[pb_utils mock] DLPack dtype {dtype} is not supported by Python backend: use int/uint 8-64, "
            "float16/32/64, bool or bfloat16."
        )
    return code


def _tensor_from_dl(name: str, obj: Any, dev: tuple[int, int], *, capsule: bool, from_numpy: bool) -> Tensor:
    device_type, device_id = dev
    if device_type == _kDLCUDA:
        cp = _cupy()
        if cp is None:
            raise TritonModelException(
                "DLPack capsule passed pointer to memory allocated on GPU device, when GPU is not available"
            )
        with cp.cuda.Device(device_id):
            try:
                arr = cp.from_dlpack(obj)
            except TypeError:
                arr = cp.fromDlpack(obj)  # legacy capsule path of older CuPy
            cp.cuda.get_current_stream().synchronize()
        itemsize = arr.dtype.itemsize
        strides = [s // itemsize for s in arr.strides]
        if not _is_c_contiguous(arr.shape, strides):
            raise TritonModelException(
                "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in C-Order are supported."
            )
        code = _array_dtype_check(np.dtype(arr.dtype))
        t = Tensor.__new__(Tensor)
        t._init(name, code, list(arr.shape), "GPU", device_id)
        t._dev = arr
        return t
    if device_type not in (_kDLCPU, _kDLCUDAHost):
        raise TritonModelException(f"DLDevice type {device_type} is not support by Python backend.")
    source = _CapsuleShim(obj, (_kDLCPU, 0)) if capsule else obj
    try:
        arr = np.from_dlpack(source)
    except (TypeError, BufferError, RuntimeError, ValueError) as exc:
        raise TritonModelException(
            f"[pb_utils mock] cannot read this CPU DLPack tensor ({exc}); BF16 on CPU is not emulated"
        ) from None
    itemsize = arr.dtype.itemsize
    strides = [s // itemsize for s in arr.strides] if arr.size else None
    if not _is_c_contiguous(arr.shape, strides):
        raise TritonModelException(
            "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in C-Order are supported."
        )
    code = _array_dtype_check(arr.dtype)
    if from_numpy:
        _numpy_trap()
    t = Tensor.__new__(Tensor)
    t._init(name, code, list(arr.shape), "CPU", 0)
    t._np = arr
    t._keep = obj
    return t


def _to_host(arr: Any) -> np.ndarray:
    if isinstance(arr, np.ndarray):
        return arr
    return arr.get()


def _is_cupy_array(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "cupy"


# ============================================================================ requests / responses


class PreferredMemory(_Bound):
    """``PreferredMemory(preferred_memory_type, preferred_device_id=0)`` for BLS outputs."""

    def __init__(self, preferred_memory_type: int, preferred_device_id: int = 0) -> None:
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


PreferredMemory.__module__ = "c_python_backend_utils"
TRITONSERVER_MEMORY_GPU = 0
TRITONSERVER_MEMORY_CPU = 1


class InferenceTrace(_Bound):
    """Placeholder trace object (``request.trace()``); ``get_context()`` returns None without tracing."""

    def get_context(self, mode: str = "") -> str | None:
        return None


class InferenceResponse(_Bound):
    """``InferenceResponse(output_tensors=[], error=None)`` (``parameters=`` from 25.02)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names = ["output_tensors", "error"]
        sig = "c_python_backend_utils.InferenceResponse(output_tensors: List[c_python_backend_utils.Tensor] = [], error: c_python_backend_utils.TritonError = None"
        if _version_at_least(25, 2):
            names.append("parameters")
            sig += ", parameters: object = None"
        sig += ")"
        values = dict(zip(names, args))
        bad = len(args) > len(names)
        for k, v in kwargs.items():
            if k not in names or k in values:
                bad = True
            values[k] = v
        tensors = values.get("output_tensors", [])
        error = values.get("error")
        params = values.get("parameters")
        if (
            bad
            or isinstance(tensors, (str, bytes))
            or not isinstance(tensors, Sequence)
            or any(not isinstance(t, Tensor) for t in tensors)
            or (error is not None and not isinstance(error, TritonError))
            or (params is not None and not isinstance(params, dict))
        ):
            raise _incompatible("__init__()", [sig], args, kwargs)
        self._tensors = list(tensors)
        self._error = error
        self._parameters = json.dumps(params if params is not None else {})
        if params:
            _check_parameters(params)

    def output_tensors(self) -> list[Tensor]:
        """The output tensors (the server ignores them when the response carries an error)."""
        return list(self._tensors)

    def has_error(self) -> bool:
        """True if an error was set."""
        return self._error is not None

    def error(self) -> TritonError | None:
        """The TritonError, or None."""
        return self._error

    def parameters(self) -> str:
        """Response parameters as JSON text."""
        return self._parameters

    def _pruned(self, requested: set[str]) -> InferenceResponse:
        out = InferenceResponse.__new__(InferenceResponse)
        out._tensors = [t for t in self._tensors if t.name() in requested]
        out._error = self._error
        out._parameters = self._parameters
        return out


InferenceResponse.__module__ = "c_python_backend_utils"


def _check_parameters(params: dict) -> None:
    for key, value in params.items():
        if not isinstance(key, str):
            raise TritonModelException(f"Expect parameters keys to have type str, found type {type(key)}")
        if not isinstance(value, (bool, int, str)):
            raise TritonModelException(
                f"Expect parameters values to have type bool/int/str, found type {type(value)}"
            )


class ResponseSink(list):
    """Where a request's responses arrive, as ``(response or None, flags)``; senders on any thread may add.

    ``wait_final`` lets the harness wait, like the server's frontend, until the final flag has come.
    """

    def __init__(self) -> None:
        super().__init__()
        self.cond = threading.Condition()
        self._final = False

    def put(self, response: InferenceResponse | None, flags: int) -> None:
        """Add one response and wake whoever waits for the final flag."""
        with self.cond:
            self.append((response, flags))
            if flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL:
                self._final = True
                self.cond.notify_all()

    @property
    def final(self) -> bool:
        """True once a response (or an empty send) carried TRITONSERVER_RESPONSE_COMPLETE_FINAL."""
        return self._final

    def wait_final(self, timeout: float, keep_waiting: Any = None, poll: float = 0.05) -> bool:
        """Wait up to ``timeout`` s for the final flag; stop early once ``keep_waiting()`` is False."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not self.final:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if keep_waiting is not None and not keep_waiting():
                    # one last look: a thread may have sent FINAL just before it ended
                    self.cond.wait(min(poll, left))
                    return self.final
                self.cond.wait(min(poll, left))
        return True


class InferenceResponseSender(_Bound):
    """``request.get_response_sender()``: ``send(response=None, flags=0)``, ``is_cancelled()``."""

    def __init__(
        self, decoupled: bool, requested: set[str], sink: list[tuple[InferenceResponse | None, int]]
    ) -> None:
        self._decoupled = decoupled
        self._requested = requested
        self._sink = sink
        self._closed = False
        self._sent = 0

    def _update_state(self, response: InferenceResponse | None, flags: int) -> None:
        if not self._decoupled:
            if response is not None and self._sent > 0:
                raise TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send more than one response."
                )
            if response is None and flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL and self._sent == 0:
                raise TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send complete final before sending a response."
                )
        if self._closed:
            raise TritonModelException("Unable to send response. Response sender has been closed.")
        if flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL:
            self._closed = True
        self._sent += 1

    def send(self, response: InferenceResponse | None = None, flags: int = 0) -> None:
        """Send one response; ``flags=TRITONSERVER_RESPONSE_COMPLETE_FINAL`` closes the sender."""
        if response is not None and not isinstance(response, InferenceResponse):
            raise _incompatible(
                "send()",
                ["(self, response: c_python_backend_utils.InferenceResponse = None, flags: int = 0) -> None"],
                (response, flags),
                {},
            )
        if flags != TRITONSERVER_RESPONSE_COMPLETE_FINAL and flags != 0:
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if flags == 0 and response is None:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero."
            )
        item = response._pruned(self._requested) if response is not None else None
        lock = self._sink.cond if isinstance(self._sink, ResponseSink) else threading.Lock()
        with lock:
            self._update_state(response, flags)
            if isinstance(self._sink, ResponseSink):
                self._sink.put(item, flags)
            else:
                self._sink.append((item, flags))

    def is_cancelled(self) -> bool:
        """Always False in the mock (no client cancellation)."""
        return False


InferenceResponseSender.__module__ = "c_python_backend_utils"

_MISSING: Any = object()


def _std_string(value: str | bytes) -> str:
    """What a pybind11 ``std::string`` argument holds, read back as ``str``: bytes are taken as UTF-8."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


class InferenceRequest(_Bound):
    """Server-given requests (items of ``execute(requests)``) and BLS requests built by a model."""

    _BLS_SIG = (
        "c_python_backend_utils.InferenceRequest(request_id: str = '', correlation_id: object = 0, "
        "inputs: List[c_python_backend_utils.Tensor], requested_output_names: List[str], model_name: str, "
        "model_version: int = -1, flags: int = 0, timeout: int = 0, preferred_memory: "
        "c_python_backend_utils.PreferredMemory = ..., trace: c_python_backend_utils.InferenceTrace = ..., "
        "parameters: object = None)"
    )

    def __init__(
        self,
        request_id: Any = "",
        correlation_id: Any = 0,
        inputs: Any = _MISSING,
        requested_output_names: Any = _MISSING,
        model_name: Any = _MISSING,
        model_version: Any = -1,
        flags: Any = 0,
        timeout: Any = 0,
        preferred_memory: Any = None,
        trace: Any = None,
        parameters: Any = None,
    ) -> None:
        given = {
            "request_id": request_id,
            "correlation_id": correlation_id,
            "inputs": inputs,
            "requested_output_names": requested_output_names,
            "model_name": model_name,
        }
        if (
            inputs is _MISSING
            or requested_output_names is _MISSING
            or model_name is _MISSING
            or not isinstance(request_id, (str, bytes))
            or correlation_id is None
            or not isinstance(model_name, (str, bytes))
            or isinstance(inputs, (str, bytes))
            or not isinstance(inputs, Sequence)
            or any(not isinstance(t, Tensor) for t in inputs)
            or isinstance(requested_output_names, (str, bytes))
            or not isinstance(requested_output_names, Sequence)
            or any(not isinstance(n, (str, bytes)) for n in requested_output_names)
            or not isinstance(model_version, int)
            or not isinstance(flags, int)
            or not isinstance(timeout, int)
            or (preferred_memory is not None and not isinstance(preferred_memory, PreferredMemory))
            or (parameters is not None and not isinstance(parameters, dict))
        ):
            shown = {k: v for k, v in given.items() if v is not _MISSING}
            raise _incompatible("__init__()", [self._BLS_SIG], (), shown)
        if parameters:
            _check_parameters(parameters)
        if not isinstance(correlation_id, (int, str)):
            raise TritonModelException("Correlation ID must be integer or string")
        self._init(
            inputs=list(inputs),
            request_id=_std_string(request_id),
            correlation_id=correlation_id,
            requested={_std_string(n) for n in requested_output_names},
            parameters=json.dumps(parameters if parameters is not None else {}),
            flags=flags,
            timeout=timeout,
            sender=None,
        )
        self._model_name = _std_string(model_name)
        self._model_version = model_version
        self._preferred_memory = preferred_memory or PreferredMemory(-1, 0)
        self._bls = True

    def _init(
        self,
        *,
        inputs: list[Tensor],
        request_id: str,
        correlation_id: int | str,
        requested: set[str],
        parameters: str,
        flags: int,
        timeout: int,
        sender: InferenceResponseSender | None,
    ) -> None:
        self._inputs = inputs
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._requested = requested
        self._parameters = parameters
        self._flags = flags
        self._timeout = timeout
        self._sender = sender
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        self._trace = InferenceTrace()
        self._bls = False

    @classmethod
    def _server_request(
        cls,
        *,
        inputs: list[Tensor],
        requested: set[str],
        sender: InferenceResponseSender,
        request_id: str = "",
        correlation_id: int | str = 0,
        parameters: str = "{}",
        flags: int = 0,
        timeout: int = 0,
    ) -> InferenceRequest:
        req = cls.__new__(cls)
        req._init(
            inputs=inputs,
            request_id=request_id,
            correlation_id=correlation_id,
            requested=requested,
            parameters=parameters,
            flags=flags,
            timeout=timeout,
            sender=sender,
        )
        return req

    def inputs(self) -> list[Tensor]:
        """Input tensors in request order."""
        return list(self._inputs)

    def request_id(self) -> str:
        """The request id ("" when the client sent none)."""
        return self._request_id

    def correlation_id(self) -> int | str:
        """Sequence correlation id (0 when unset)."""
        return self._correlation_id

    def requested_output_names(self) -> set[str]:
        """The requested outputs, as a set."""
        return set(self._requested)

    def parameters(self) -> str:
        """Request parameters as JSON text."""
        return self._parameters

    def flags(self) -> int:
        """Request flags."""
        return self._flags

    def set_flags(self, flags: int) -> None:
        """Set request flags (BLS)."""
        self._flags = flags

    def timeout(self) -> int:
        """Timeout in microseconds."""
        return self._timeout

    def is_cancelled(self) -> bool:
        """Always False in the mock."""
        return False

    def trace(self) -> InferenceTrace:
        """The request trace."""
        return self._trace

    def set_release_flags(self, flags: int) -> None:
        """Set release flags (RESCHEDULE needs iterative sequence batching)."""
        self._release_flags = flags

    def get_response_sender(self) -> InferenceResponseSender:
        """The response sender of a server-given request."""
        if self._sender is None:
            raise TritonModelException("[pb_utils mock] a BLS request has no response sender")
        return self._sender

    # -- BLS ----------------------------------------------------------------------------------
    def exec(self, decoupled: bool = False) -> Any:
        """Run this BLS request synchronously (errors come back in the response)."""
        if not self._bls:
            raise TritonModelException(
                "[pb_utils mock] exec() is for BLS requests built with InferenceRequest(...)"
            )
        if not _runtime.stack or not getattr(_runtime.current, "_in_execute", False):
            raise TritonModelException("BLS is only supported during the 'execute' function.")
        responses = _bls_infer(self, decoupled)
        if decoupled:
            return _ResponseIterator(responses)
        return responses[0]

    async def _async_exec(self, decoupled: bool) -> Any:
        loop = asyncio.get_running_loop()
        frame_stack = list(_runtime.stack)

        def run() -> Any:
            saved = _runtime.stack
            _runtime.stack = frame_stack
            try:
                return self.exec(decoupled)
            finally:
                _runtime.stack = saved

        return await loop.run_in_executor(None, run)

    def async_exec(self, decoupled: bool = False) -> Any:
        """Awaitable BLS execution (use from ``async def execute``)."""
        if not _runtime.stack or not getattr(_runtime.current, "_in_execute", False):
            raise TritonModelException("BLS is only supported during the 'execute' function.")
        return self._async_exec(decoupled)


InferenceRequest.__module__ = "c_python_backend_utils"


class _ResponseIterator:
    """What ``exec(decoupled=True)`` returns: the callee's responses then one final empty response."""

    def __init__(self, responses: list[InferenceResponse]) -> None:
        self._items = list(responses)

    def __iter__(self) -> Iterator[InferenceResponse]:
        while self._items:
            yield self._items.pop(0)

    def __next__(self) -> InferenceResponse:
        if not self._items:
            raise StopIteration
        return self._items.pop(0)

    def cancel(self) -> None:
        """Drop remaining responses."""
        self._items.clear()


def _bls_infer(request: InferenceRequest, decoupled: bool) -> list[InferenceResponse]:
    name = request._model_name
    target = _runtime.models.get(name)
    if target is None:
        msg = f"Model {name} - Error when running inference: Failed for execute the inference request. Model '{name}' is not ready."
        err = InferenceResponse(error=TritonError(msg))
        return [err, InferenceResponse()] if decoupled else [err]
    if target.decoupled and not decoupled:
        msg = (
            f"Model {name} - Error when running inference: Model {name} is using the decoupled. The current BLS "
            "request call doesn't support models using the decoupled transaction policy. Please use "
            "'decoupled=True' argument to the 'exec' or 'async_exec' calls for decoupled models.'"
        )
        return [InferenceResponse(error=TritonError(msg))]
    responses = target._bls_execute(request)
    if decoupled:
        responses = [*responses, InferenceResponse()]
    return responses


# ============================================================================ logging, metrics, misc


class Logger(_Bound):
    """``pb_utils.Logger``: messages go to the Python logger ``triton_python_backend_utils``."""

    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3
    _LEVELS = {0: logging.INFO, 1: logging.WARNING, 2: logging.ERROR, 3: logging.DEBUG}
    _NAMES = {0: "INFO", 1: "WARNING", 2: "ERROR", 3: "VERBOSE"}

    @staticmethod
    def log(message: str, level: int = 0) -> None:
        """Log ``message`` at ``level`` (``Logger.INFO`` by default)."""
        if not isinstance(message, str):
            raise _incompatible("log()", ["(message: str, level: int = Logger.INFO) -> None"], (message,), {})
        frame = traceback.extract_stack(limit=3)[0]
        where = f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}"
        _runtime.log_records.append((Logger._NAMES.get(level, str(level)), message))
        _log.log(Logger._LEVELS.get(level, logging.INFO), "%s] %s", where, message)

    @staticmethod
    def log_info(message: str) -> None:
        """Log at INFO."""
        Logger.log(message, Logger.INFO)

    @staticmethod
    def log_warn(message: str) -> None:
        """Log at WARNING."""
        Logger.log(message, Logger.WARNING)

    @staticmethod
    def log_error(message: str) -> None:
        """Log at ERROR."""
        Logger.log(message, Logger.ERROR)

    @staticmethod
    def log_verbose(message: str) -> None:
        """Log at VERBOSE."""
        Logger.log(message, Logger.VERBOSE)


Logger.__module__ = "c_python_backend_utils"


class Metric(_Bound):
    """One labelled metric of a :class:`MetricFamily` (``family.Metric(labels=..., buckets=...)``).

    [E] 2.51: an unsupported operation raises ``Failed to <op> metric value: Failed to process the request
    for model '<instance>', message: <core message>`` - or crashes the server (boost::interprocess::
    lock_exception, signal 6; seen for every kind of unsupported call, at random): the mock raises the text
    and warns. Once the family object is deleted every operation fails (the metric leaves ``/metrics``).
    """

    def __init__(self, family: MetricFamily, labels: dict[str, str], buckets: list[float] | None) -> None:
        self._family_ref = weakref.ref(family)
        self._kind = family._kind
        self._labels = labels
        self._value = 0.0
        self._buckets = buckets
        self._observations: list[float] = []

    def _check(self, op: str) -> None:
        if self._family_ref() is None:
            raise TritonModelException(
                f"Failed to {op} metric value: Invalid metric operation as the corresponding 'MetricFamily' has been "
                "deleted. The 'MetricFamily' object should be deleted AFTER its corresponding 'Metric' objects have "
                "been deleted."
            )

    def _fail(self, op: str, what: str) -> TritonModelException:
        cur = _runtime.current
        instance = cur.instance_name if cur is not None else ""
        warnings.warn(
            "[pb_utils mock] an unsupported metric operation: tritonserver 2.51 answers it with an error or, at "
            "random, crashes (boost::interprocess::lock_exception)",
            RuntimeWarning,
            stacklevel=3,
        )
        return TritonModelException(
            f"Failed to {op} metric value: Failed to process the request for model '{instance}', message: "
            f"TRITONSERVER_METRIC_KIND_{_KIND_NAMES[self._kind]} {what}"
        )

    def increment(self, value: float) -> None:
        """Add ``value`` (counters: non-negative only; not for histograms)."""
        self._check("increment")
        if self._kind == MetricFamily.HISTOGRAM:
            raise self._fail("increment", "does not support Increment")
        if self._kind == MetricFamily.COUNTER and value < 0:
            raise self._fail("increment", "can only be incremented monotonically by non-negative values.")
        self._value += float(value)

    def set(self, value: float) -> None:
        """Set a gauge."""
        self._check("set")
        if self._kind != MetricFamily.GAUGE:
            raise self._fail("set", "does not support Set")
        self._value = float(value)

    def observe(self, value: float) -> None:
        """Record one observation in a histogram."""
        self._check("observe")
        if self._kind != MetricFamily.HISTOGRAM:
            raise self._fail("observe", "does not support Observe")
        self._observations.append(float(value))
        self._value += float(value)

    def value(self) -> float:
        """The current value (counters and gauges)."""
        self._check("get")
        if self._kind == MetricFamily.HISTOGRAM:
            raise self._fail("get", "does not support Value")
        return self._value

    def _samples(self) -> list[tuple[str, dict[str, str], float | int]]:
        """(name suffix, labels, value) as Prometheus exposes this metric."""
        labels = dict(sorted(self._labels.items()))
        if self._kind != MetricFamily.HISTOGRAM:
            return [("", labels, self._value)]
        obs = self._observations
        out: list[tuple[str, dict[str, str], float | int]] = [
            ("_count", labels, len(obs)),
            ("_sum", labels, float(sum(obs))),
        ]
        for bound in self._buckets or []:
            out.append(("_bucket", {**labels, "le": _prom_number(bound)}, sum(1 for v in obs if v <= bound)))
        out.append(("_bucket", {**labels, "le": "+Inf"}, len(obs)))
        return out


Metric.__module__ = "c_python_backend_utils"
_KIND_NAMES = {0: "COUNTER", 1: "GAUGE", 2: "HISTOGRAM"}
_PROM_TYPES = {0: "counter", 1: "gauge", 2: "histogram"}


class MetricFamily(_Bound):
    """``MetricFamily(name, description, kind)`` with ``COUNTER``/``GAUGE``/``HISTOGRAM`` kinds.

    The harness of the model that creates a family can read it back (``ModelHarness.metrics()``) and
    render it like tritonserver's ``/metrics`` endpoint (``ModelHarness.metrics_text()``).
    """

    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2

    def __init__(self, name: str, description: str, kind: int) -> None:
        if kind not in (0, 1, 2):
            raise TritonModelException("Unknown metric family kind")
        self._name = name
        self._description = description
        self._kind = kind
        self._metrics: list[weakref.ref[Metric]] = []
        self._owner = _runtime.current
        _runtime.metric_families = [r for r in _runtime.metric_families if r() is not None]
        _runtime.metric_families.append(weakref.ref(self))

    def Metric(self, labels: dict[str, str] | None = None, buckets: list[float] | None = None) -> Metric:  # noqa: N802
        """Create a metric of this family (histograms need ``buckets``, the others must not have them)."""
        if labels is not None and not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if buckets is not None and not isinstance(buckets, list):
            raise TritonModelException("Failed to create metric. Buckets must be a list.")
        if self._kind == MetricFamily.HISTOGRAM and buckets is None:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        if self._kind != MetricFamily.HISTOGRAM and buckets is not None:
            raise TritonModelException("Failed to create metric. Unexpected buckets found.")
        m = Metric(self, {str(k): str(v) for k, v in (labels or {}).items()}, None if buckets is None else [float(b) for b in buckets])
        self._metrics.append(weakref.ref(m))
        return m

    def _live_metrics(self) -> list[Metric]:
        return [m for m in (r() for r in self._metrics) if m is not None]


MetricFamily.__module__ = "c_python_backend_utils"


def _prom_number(value: float | int) -> str:
    """A sample value as prometheus-cpp writes it (15 significant digits, ``+Inf``/``-Inf``/``Nan``)."""
    if isinstance(value, int):
        return str(value)
    if value != value:
        return "Nan"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return format(value, ".15g")


def _prom_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def metrics_text(families: Sequence[MetricFamily]) -> str:
    """The families in Prometheus text format, as tritonserver's ``/metrics`` endpoint shows custom metrics.

    ``# HELP`` (the description as is) / ``# TYPE`` per family that has metrics, then one line per sample:
    labels sorted by name, values escaped (``\\``, ``\"``, ``\\n``), numbers with 15 significant digits;
    histograms as ``_count``, ``_sum``, then ``_bucket`` lines with ``le`` last, ending with ``le="+Inf"``.
    The server lists the metrics of one family in hash-map order; here they come in creation order.
    """
    lines: list[str] = []
    for fam in families:
        metrics = fam._live_metrics()
        if not metrics:  # [E] a family without metrics is not shown
            continue
        lines.append(f"# HELP {fam._name} {fam._description}")  # [E] written as is (label values are escaped)
        lines.append(f"# TYPE {fam._name} {_PROM_TYPES[fam._kind]}")
        for metric in metrics:
            for suffix, labels, value in metric._samples():
                body = ",".join(f'{k}="{_prom_escape(v)}"' for k, v in labels.items())
                lines.append(f"{fam._name}{suffix}{'{' + body + '}' if body else ''} {_prom_number(value)}")
    return "".join(line + "\n" for line in lines)


def get_model_dir() -> str:
    """The version directory of the running model (``<repo>/<model>/<version>``)."""
    cur = _runtime.current
    if cur is None:
        raise TritonModelException("[pb_utils mock] get_model_dir() is only available inside a loaded model")
    return cur.version_dir


def load_model(model_name: str, config: str = "", files: dict | None = None) -> None:
    """Model control from a model is only available in explicit mode; not emulated."""
    raise TritonModelException("[pb_utils mock] load_model() (explicit model control) is not emulated")


def unload_model(model_name: str, unload_dependents: bool = False) -> None:
    """Not emulated (explicit model control)."""
    raise TritonModelException("[pb_utils mock] unload_model() (explicit model control) is not emulated")


def is_model_ready(model_name: str, model_version: str = "") -> bool:
    """True when a model of that name is loaded in this process through the harness."""
    return model_name in _runtime.models


# ============================================================================ helpers for the harness


def format_exception(exc: BaseException, skip_frames: int = 1) -> str:
    """``<Type>: <msg>\\n\\nAt:\\n  file(line): func`` as pybind11 renders a Python error (innermost first)."""
    if isinstance(exc, TritonModelException) and not exc.__traceback__:
        return str(exc)
    frames = traceback.extract_tb(exc.__traceback__)[skip_frames:]
    # Frames inside this mock stand for C++ code in the real stub: pybind11 shows none of them.
    mock_dir = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in frames if os.path.dirname(os.path.abspath(f.filename)) != mock_dir]
    lines = "".join(f"  {f.filename}({f.lineno}): {f.name}\n" for f in reversed(frames))
    return f"{type(exc).__name__}: {exc}\n\nAt:\n{lines}"


def make_input_tensor(name: str, value: Any, dtype_code: int, *, gpu: bool, device_id: int = 0) -> Tensor:
    """An input tensor as ``execute`` receives it; ``gpu`` requests GPU placement (never for BYTES)."""
    if dtype_code == _TYPE_BYTES or not gpu:
        host = _to_host(value) if _is_cupy_array(value) else value
        return Tensor._received_cpu(name, host, dtype_code)
    return Tensor._received_gpu(name, value, dtype_code, device_id)


def tensor_to_array(tensor: Tensor) -> Any:
    """What a client receives for an output tensor: NumPy for CPU, the CuPy array for GPU."""
    if tensor._dtype == _TYPE_BYTES:
        if tensor._serialized is not None and tensor._serialized != ():
            return deserialize_bytes_tensor(tensor._serialized).reshape(tensor._shape)
        return np.empty(tensor._shape, dtype=np.object_)
    if tensor._dev is not None:
        return tensor._dev
    return tensor._np


def protocol_dtype_name(code: int) -> str:
    """Triton protocol datatype name ("FP32", "BYTES", ...)."""
    return _PROTOCOL_NAMES.get(code, "INVALID")


def dtype_code_of(tensor: Tensor) -> int:
    """The Triton DataType code of a tensor (what ``triton_dtype()`` would return if it worked)."""
    return tensor._dtype
