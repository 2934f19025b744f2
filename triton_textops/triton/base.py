"""Base class of our ``TritonPythonModel`` classes: config, device, batching and per-request errors.

A model declares its parameters (:class:`Param`), its tensors by role with default names (renamed by
the ``tensor_names`` parameter, e.g. ``text=INPUT0,input_ids=BERT_IDS``), and implements ``setup``
(load artifacts once), ``read`` (one request → validated arrays; raise :class:`InputError` to reject
just that request) and ``compute`` (all valid requests of one ``execute`` call, processed as one batch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from triton_textops.errors import ConfigError, InputError
from triton_textops.ops.core.batch import TextBatch, pack_host
from triton_textops.ops.core.kernels import GPU_MIN_BATCH, set_num_threads
from triton_textops.ops.core.utf8 import invalid_utf8_rows
from triton_textops.ops.core.xp import get_xp, to_numpy, tune_host_allocator
from triton_textops.triton import io
from triton_textops.triton.params import Param, parse_parameters

DEFAULT_MAX_LENGTH = 128  # tokens, when neither the max_length parameter nor the config's dims say
# one compute call (one launch) takes requests of at most this much text together (a larger request alone):
# the kernels' scratch is ~45 bytes of address space per input byte, so a launch asks for ~11 GB at most
# (tested with 700 requests of 1 MiB; a batch of 1024 x 1 MiB was not run here)
LAUNCH_BYTES = 1 << 28


@dataclass(frozen=True)
class TensorSpec:
    """A model tensor: default name, Triton data type, dims per row (``"L"``: the max_length param).

    ``ids``: an integer tensor of token ids or masks whose auto-completed type the ``ids_dtype``
    parameter chooses.
    """

    name: str
    data_type: str
    dims: tuple[Any, ...] = (1,)
    optional: bool = False  # an input a request may omit / an output the config may leave out
    ids: bool = False


# compiled for in initialize: ASCII, accents, punctuation, a raw special token, a long word
WARM_UP_TEXT = "Warm up, Mr. Darcy: caf\u00e9 \u201cna\u00efve\u201d [CLS] unbelievably... Yes! " + "x" * 120

COMMON_PARAMS = [
    Param("tensor_names", "names", default={}, help="rename tensors: role=NAME,role=NAME"),
    Param("client_names", "names", default={},
          help="TENSOR=NAME: the ensemble input a client sends for this model's input TENSOR (repo create writes "
               "it); errors name NAME"),
    Param("max_text_bytes", "int", default=1 << 20, minimum=1, help="reject longer texts (bytes)"),
    Param("num_threads", "int", default=0, minimum=0,
          help="threads of the CPU kernels (0: numba's default, the number of cores)"),
    Param("gpu_min_batch", "int", default=GPU_MIN_BATCH, minimum=0,
          help="on a KIND_GPU instance, batches of fewer texts run on the CPU kernels (0: always the GPU)"),
    Param("default_max_batch_size", "int", default=64, minimum=0,
          help="max_batch_size auto-complete sets for a config without inputs/outputs (0: no batching)"),
]
# for models with token id / mask tensors; only used where auto-complete writes those tensors
IDS_DTYPE_PARAM = Param("ids_dtype", "choice", default=None, choices=("int64", "int32"),
                        help="data type of the id/mask tensors auto-complete adds")

_INT_TYPES = frozenset(f"TYPE_{k}{b}" for k in ("INT", "UINT") for b in (8, 16, 32, 64))
_FLOAT_TYPES = frozenset({"TYPE_FP16", "TYPE_FP32", "TYPE_FP64"})


def _family(data_type: str) -> frozenset[str]:
    """The config data types that can carry a tensor declared as ``data_type``."""
    if data_type in _INT_TYPES:
        return _INT_TYPES
    if data_type in _FLOAT_TYPES:
        return _FLOAT_TYPES
    return frozenset({data_type})


def _family_text(data_type: str) -> str:
    if data_type in _INT_TYPES:
        return "an integer type (TYPE_INT64, TYPE_INT32, ...)"
    if data_type in _FLOAT_TYPES:
        return "a float type (TYPE_FP32, TYPE_FP16 or TYPE_FP64)"
    return data_type


def _shape(entry: dict[str, Any]) -> list[int]:
    """The shape the model sees for a config tensor: ``reshape`` when given, else ``dims``."""
    reshape = entry.get("reshape")
    dims = reshape.get("shape", []) if isinstance(reshape, dict) and reshape else entry.get("dims", [])
    return [int(d) for d in dims]


class TextOpsModel:
    """Shared ``initialize`` / ``execute`` / ``auto_complete_config`` for the triton-textops models."""

    PARAMS: list[Param] = []
    INPUTS: dict[str, TensorSpec] = {}
    OUTPUTS: dict[str, TensorSpec] = {}

    # ------------------------------------------------------------------------- configuration

    @classmethod
    def _params(cls, cfg: dict, model_dir: str = "", check_paths: bool = False, warn: Any = None) -> dict[str, Any]:
        return parse_parameters(cfg, COMMON_PARAMS + cls.PARAMS, model_dir, check_paths=check_paths, warn=warn)

    @classmethod
    def _names(cls, cfg: dict, params: dict[str, Any]) -> dict[str, str]:
        renames = params["tensor_names"]
        roles = {**cls.INPUTS, **cls.OUTPUTS}
        bad = sorted(set(renames) - set(roles))
        if bad:
            raise ConfigError(
                f"model '{cfg.get('name', '?')}': tensor_names: unknown role(s) {', '.join(bad)} "
                f"(roles: {', '.join(roles)})"
            )
        return {role: renames.get(role, spec_.name) for role, spec_ in roles.items()}

    @classmethod
    def _data_type(cls, spec: TensorSpec, params: dict[str, Any]) -> str:
        if spec.ids and params.get("ids_dtype"):
            return "TYPE_" + params["ids_dtype"].upper()
        return spec.data_type

    @classmethod
    def _dims(cls, spec: TensorSpec, cfg: dict, params: dict[str, Any]) -> list[int]:
        length = params.get("max_length") or DEFAULT_MAX_LENGTH
        dims = [int(length) if d == "L" else int(d) for d in spec.dims]
        return dims if cfg.get("max_batch_size", 0) > 0 else [-1, *dims]

    @classmethod
    def auto_complete_config(cls, auto_complete_model_config: Any) -> Any:
        """Fill what the config leaves out, never overriding what it declares.

        Inputs are added only to a config without inputs, outputs only to one without outputs. Batching
        (``default_max_batch_size`` and dynamic batching) is enabled only for a config that declares no
        tensors at all: declared dims were written for the config's own batching mode. What was filled in
        is logged with ``pb_utils.Logger``.
        """
        cfg = auto_complete_model_config.as_dict()
        params = cls._params(cfg)
        names = cls._names(cfg, params)
        has_in, has_out = bool(cfg.get("input")), bool(cfg.get("output"))
        filled: list[str] = []
        mbs = params["default_max_batch_size"]
        if not has_in and not has_out and cfg.get("max_batch_size", 0) == 0 and mbs > 0 and cls.batchable(params):
            auto_complete_model_config.set_max_batch_size(mbs)
            filled.append(f"max_batch_size: {mbs} (default_max_batch_size; set it to 0 for no batching)")
            cfg = auto_complete_model_config.as_dict()
            if not cfg.get("sequence_batching") and not cfg.get("dynamic_batching"):
                auto_complete_model_config.set_dynamic_batching()
                filled.append("dynamic_batching { }")
        cfg = auto_complete_model_config.as_dict()
        batched = cfg.get("max_batch_size", 0) > 0
        if not has_in:
            for role, spec in cls.INPUTS.items():
                if not spec.optional or cls.wants_input(role, params, batched):
                    entry = {"name": names[role], "data_type": cls._data_type(spec, params),
                             "dims": cls._dims(spec, cfg, params)}
                    if spec.optional:
                        entry["optional"] = True
                    auto_complete_model_config.add_input(entry)
                    filled.append(f"input {entry['name']} {entry['data_type']} {entry['dims']}")
        if not has_out:
            for role, spec in cls.OUTPUTS.items():
                if not spec.optional or cls.wants_output(role, params):
                    entry = {"name": names[role], "data_type": cls._data_type(spec, params),
                             "dims": cls._dims(spec, cfg, params)}
                    auto_complete_model_config.add_output(entry)
                    filled.append(f"output {entry['name']} {entry['data_type']} {entry['dims']}")
        if filled:
            import triton_python_backend_utils as pb_utils

            pb_utils.Logger.log_info(
                f"model '{cfg.get('name', '?')}': auto-complete filled in " + "; ".join(filled)
            )
        return auto_complete_model_config

    @classmethod
    def batchable(cls, params: dict[str, Any]) -> bool:
        """Whether the model can use a batch dimension with these parameters."""
        return True

    @classmethod
    def wants_input(cls, role: str, params: dict[str, Any], batched: bool) -> bool:
        """Whether auto-complete should add the optional input ``role`` (default: only without a batch
        dimension, where the optional inputs of our models, window mappings, make sense)."""
        return not batched

    @classmethod
    def wants_output(cls, role: str, params: dict[str, Any]) -> bool:
        """Whether auto-complete should add the optional output ``role``."""
        return False

    @classmethod
    def bind_config(cls, cfg: dict, params: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
        """Check the config's tensors against the model's roles; return the resolved parameters.

        Fails (:class:`ConfigError`) when a config input or output plays no role, a required role has no
        tensor, a tensor's data type cannot carry the role, an output's shape is not the model's, or the
        token dimension of the outputs disagrees with ``max_length`` (which, when not given, is taken
        from those dims). Messages name the config's tensors and the model's roles.
        """
        model = cfg.get("name", "?")
        batched = cfg.get("max_batch_size", 0) > 0
        declared = {
            "input": {t["name"]: t for t in cfg.get("input") or []},
            "output": {t["name"]: t for t in cfg.get("output") or []},
        }
        roles = {"input": cls.INPUTS, "output": cls.OUTPUTS}
        context = cls._describe(cfg, names)
        unmatched: dict[str, list[str]] = {}
        missing: dict[str, list[str]] = {}
        for kind in ("input", "output"):
            by_name = {names[r]: r for r in roles[kind]}
            unmatched[kind] = [n for n in declared[kind] if n not in by_name]
            missing[kind] = [r for r, s in roles[kind].items() if not s.optional and names[r] not in declared[kind]]
        if any(unmatched.values()) or any(missing.values()):
            # a tensor named after a role it cannot carry: its type is the cause, reported first (a tensor_names
            # suggestion or "remove it" would mislead); the hint is the mapping once its type is right
            clashes = []
            for kind in ("input", "output"):
                for role in missing[kind]:
                    spec = roles[kind][role]
                    for n in unmatched[kind]:
                        dtype = declared[kind][n]["data_type"]
                        if n.lower() in (role.lower(), spec.name.lower()) and dtype not in _family(spec.data_type):
                            clashes.append((kind, n, role, dtype, spec.data_type))
            if clashes:
                fixed = {k: dict(v) for k, v in declared.items()}
                for kind, n, _, _, want in clashes:
                    fixed[kind][n] = {**declared[kind][n], "data_type": want}
                hint = cls._suggest(fixed, names, params, unmatched, missing)
                first = "; ".join(f"{kind} '{n}' (role '{role}') is {dtype}, but the role needs {_family_text(want)}"
                                  for kind, n, role, dtype, want in clashes)
                raise ConfigError(f"model '{model}': {first}. {context}. Once its data_type is fixed: {hint}")
            parts = []
            for kind in ("input", "output"):
                if unmatched[kind]:
                    parts.append(f"config {kind}(s) {', '.join(repr(n) for n in unmatched[kind])} match no role")
                for r in missing[kind]:
                    parts.append(f"role '{r}' has no config {kind} (it looks for '{names[r]}')")
            hint = cls._suggest(declared, names, params, unmatched, missing)
            raise ConfigError(f"model '{model}': {'; '.join(parts)}. {context}. {hint}")
        resolved = dict(params)
        lengths: dict[str, int] = {}
        for kind in ("input", "output"):
            for role, spec in roles[kind].items():
                entry = declared[kind].get(names[role])
                if entry is None:
                    continue
                name, dtype = entry["name"], entry["data_type"]
                want = cls._data_type(spec, params)
                if dtype not in _family(spec.data_type):
                    raise ConfigError(
                        f"model '{model}': {kind} '{name}' (role '{role}') is {dtype}, but the role needs "
                        f"{_family_text(spec.data_type)}. {context}"
                    )
                if spec.ids and params.get("ids_dtype") and dtype != want:
                    raise ConfigError(
                        f"model '{model}': parameter ids_dtype={params['ids_dtype']} but {kind} '{name}' is {dtype}; "
                        "the config's data type is used: drop ids_dtype or change the config"
                    )
                shape = _shape(entry)
                full = ([-1] if batched else []) + shape
                if kind == "input":
                    if spec.data_type == "TYPE_STRING" and not (
                        len(full) == 1 or (len(full) == 2 and full[1] in (-1, 1))
                    ):
                        raise ConfigError(
                            f"model '{model}': input '{name}' (role '{role}') has dims {shape} with max_batch_size "
                            f"{cfg.get('max_batch_size', 0)}, i.e. tensors {full}; texts come as [n] or [n, 1]: "
                            f"write dims {[1] if batched else [-1]}"
                        )
                    continue
                expect = [-1, *spec.dims]
                if len(full) != len(expect):
                    row = ", ".join(str(d) for d in spec.dims)
                    write = row if batched else f"-1, {row}"
                    raise ConfigError(
                        f"model '{model}': output '{name}' (role '{role}') has dims {shape} with max_batch_size "
                        f"{cfg.get('max_batch_size', 0)}, i.e. {len(full)}-D tensors {full}; the model makes "
                        f"{len(expect)}-D tensors [rows, {row}]: write dims [{write}]"
                        + (" (L: the token dimension, max_length)" if "L" in spec.dims else "")
                    )
                for d, c in zip(expect[1:], full[1:]):
                    if d == "L":
                        if c != -1:
                            lengths[name] = c
                    elif d != -1 and c not in (-1, d):
                        raise ConfigError(
                            f"model '{model}': output '{name}' (role '{role}') has dims {shape}; the model gives "
                            f"{d} value(s) per row there"
                        )
        if lengths:
            values = sorted(set(lengths.values()))
            given = params.get("max_length")
            listing = ", ".join(f"'{n}' {v}" for n, v in lengths.items())
            if len(values) > 1:
                raise ConfigError(f"model '{model}': the outputs' token dims disagree ({listing}); make them equal")
            if given is not None and given != values[0]:
                raise ConfigError(
                    f"model '{model}': parameter max_length={given} but the config's output dims give {values[0]} "
                    f"tokens ({listing}); make them equal, or drop max_length to take it from the dims"
                )
            if values[0] < 3:
                raise ConfigError(f"model '{model}': token dims of {values[0]} ({listing}): max_length must be >= 3")
            if "max_length" in resolved:
                resolved["max_length"] = values[0]
        if "max_length" in resolved and resolved["max_length"] is None:
            resolved["max_length"] = DEFAULT_MAX_LENGTH
        return resolved

    @classmethod
    def _describe(cls, cfg: dict, names: dict[str, str]) -> str:
        """The config's tensors and the model's roles, for load errors."""

        def tensors(kind: str) -> str:
            return ", ".join(f"{t['name']} {t['data_type']} {t.get('dims', [])}" for t in cfg.get(kind) or []) or "none"

        def role_list(specs: dict[str, TensorSpec]) -> str:
            return ", ".join(f"{r}={names[r]}{' (optional)' if s.optional else ''}" for r, s in specs.items())

        return (
            f"Config inputs: {tensors('input')}; outputs: {tensors('output')}. Model roles (role=tensor name): "
            f"inputs {role_list(cls.INPUTS)}; outputs {role_list(cls.OUTPUTS)}"
        )

    @classmethod
    def _suggest(
        cls,
        declared: dict[str, dict[str, Any]],
        names: dict[str, str],
        params: dict[str, Any],
        unmatched: dict[str, list[str]],
        missing: dict[str, list[str]],
    ) -> str:
        """A ``tensor_names`` entry that maps the roles to the config's tensors where that is clear."""
        mapping = dict(params["tensor_names"])
        roles = {"input": cls.INPUTS, "output": cls.OUTPUTS}
        for kind in ("input", "output"):
            free = list(unmatched[kind])
            for role in missing[kind]:
                spec = roles[kind][role]
                fits = [n for n in free if declared[kind][n]["data_type"] in _family(spec.data_type)]
                same = [n for n in fits if n.lower() in (role.lower(), spec.name.lower())]
                pick = same[0] if same else (fits[0] if len(fits) == 1 and len(missing[kind]) == 1 else None)
                if pick is not None:
                    mapping[role] = pick
                    free.remove(pick)
        if mapping == params["tensor_names"]:
            entry = ""
        else:
            text = ",".join(f"{r}={n}" for r, n in mapping.items())
            entry = f'Map them with: parameters {{ key: "tensor_names" value: {{ string_value: "{text}" }} }}'
        left = [n for kind in ("input", "output") for n in unmatched[kind] if n not in mapping.values()]
        if left:
            remove = f"Remove {', '.join(repr(n) for n in left)} from the config: this model does not produce or read it"
            entry = f"{entry}. {remove}" if entry else remove
        return (entry or "Name the config's tensors after the roles, or map them with the tensor_names parameter") + "."

    def initialize(self, args: dict[str, str]) -> None:
        import triton_python_backend_utils as pb_utils

        self.pb = pb_utils
        self.model_config = cfg = json.loads(args["model_config"])
        # (auto-complete parsed them too, silently: the unset ones are logged once, here)
        params = self._params(cfg, args["model_repository"], check_paths=True, warn=pb_utils.Logger.log_warn)
        self.names = self._names(cfg, params)
        self.params = self.bind_config(cfg, params, self.names)
        self.client_names = io.client_terms(cfg, params["client_names"])
        outputs = {t["name"]: t for t in cfg.get("output", [])}
        self.outputs = {r: self.names[r] for r in self.OUTPUTS if self.names[r] in outputs}
        self.out_dtypes = {n: pb_utils.triton_string_to_numpy(outputs[n]["data_type"]) for n in self.outputs.values()}
        self.out_names = frozenset(self.outputs.values())  # what a request that names no outputs gets
        self.batched = cfg.get("max_batch_size", 0) > 0
        self.device = io.device_of(args)
        self.xp = get_xp(self.device)
        tune_host_allocator()  # this stub process serves this instance: keep batch temporaries on the heap
        with self._on_device():
            set_num_threads(self.params["num_threads"] or None)  # this process serves this one instance
            self.setup()
            if "text" in self.INPUTS:  # compile (or load from numba's cache) every kernel now, not on a request
                self.compute([pack_host([WARM_UP_TEXT])])
                if self.device != "cpu" and self.params["gpu_min_batch"] > 1:  # the GPU kernels too
                    self.compute([pack_host([WARM_UP_TEXT] * self.params["gpu_min_batch"])])

    def _on_device(self) -> Any:
        if self.xp is np:
            import contextlib

            return contextlib.nullcontext()
        return self.xp.cuda.Device(int(self.device.split(":")[1]))

    # ----------------------------------------------------------------------------- serving

    def setup(self) -> None:
        """Load artifacts once (subclasses)."""

    def read(self, request: Any) -> Any:
        """One request's validated inputs (subclasses); raise InputError to reject only this request."""
        raise NotImplementedError

    def compute(self, items: list[Any]) -> list[dict[str, Any]]:
        """Outputs (role → array) of every item, computed as one batch (subclasses)."""
        raise NotImplementedError

    def execute(self, requests: list[Any]) -> list[Any]:
        pb = self.pb
        responses: list[Any] = [None] * len(requests)
        items: list[tuple[int, Any]] = []
        with self._on_device():
            for i, request in enumerate(requests):
                try:
                    items.append((i, self.read(request)))
                except Exception as e:  # a bad request never fails the others
                    responses[i] = io.error_response(pb, e, self.client_names)
            for group in self._launch_groups(items):
                try:
                    outs = self.compute([item for _, item in group])
                    for (i, _), out in zip(group, outs):  # an exception in place of outputs: that request's error
                        responses[i] = io.error_response(pb, out, self.client_names) if isinstance(out, Exception) \
                            else self._respond(requests[i], out)
                except Exception as e:
                    for i, _ in group:
                        responses[i] = io.error_response(pb, e, self.client_names)
        return responses

    def _launch_groups(self, items: list[tuple[int, Any]]) -> list[list[tuple[int, Any]]]:
        """The valid requests in groups of at most LAUNCH_BYTES of text (one group for models without text,
        and in the usual case)."""
        if "text" not in self.INPUTS:
            return [items] if items else []
        groups: list[list[tuple[int, Any]]] = []
        size = 0
        for entry in items:
            nbytes = int(entry[1][0].shape[0])
            if not groups or size + nbytes > LAUNCH_BYTES:
                groups.append([])
                size = 0
            groups[-1].append(entry)
            size += nbytes
        return groups

    def _respond(self, request: Any, out: dict[str, Any]) -> Any:
        wanted = request.requested_output_names() or self.out_names
        tensors = [
            io.make_output(self.pb, name, out[role], self.out_dtypes[name])
            for role, name in self.outputs.items()
            if name in wanted and role in out
        ]
        return self.pb.InferenceResponse(output_tensors=tensors)

    def finalize(self) -> None:
        self.__dict__.pop("pb", None)

    # ------------------------------------------------------------------------ text helpers

    def read_text(self, request: Any, role: str = "text") -> tuple[np.ndarray, np.ndarray]:
        """A request's texts as a host (uint8 buffer, offsets) pair, checked: UTF-8, size limit (``request``: a
        request or its :func:`~triton_textops.triton.io.input_tensors`)."""
        name = self.names[role]
        rows = io.text_rows(io.get_tensor(self.pb, request, name), name)
        if rows.shape[0] == 0:
            raise InputError(f"input '{name}' is empty: a request needs at least one text")
        return self._checked_texts(rows, name)

    def read_text_table(self, request: Any, role: str) -> tuple[np.ndarray, np.ndarray, int, int] | None:
        """An optional ``[rows, n]`` BYTES input (e.g. word lists) as (uint8 buffer, offsets of the rows x n texts
        row-major, rows, n), checked like :meth:`read_text`; None when the request does not send it."""
        name = self.names[role]
        t = io.get_tensor(self.pb, request, name, optional=True)
        if t is None:
            return None
        arr = t.as_numpy()
        if arr.dtype != np.object_ and arr.dtype.kind != "S":
            raise InputError(f"input '{name}' must be TYPE_STRING (BYTES), got dtype {arr.dtype}")
        if arr.ndim != 2:
            raise InputError(f"input '{name}' must have shape [batch, n], got {list(arr.shape)}")
        return (*self._checked_texts(arr.reshape(-1), name), int(arr.shape[0]), int(arr.shape[1]))

    def _checked_texts(self, rows: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
        limit = self.params["max_text_bytes"]
        one = rows[0] if rows.shape[0] == 1 else None
        if type(one) is bytes and len(one) <= limit:  # one text (a request's prompt): Python's strict UTF-8 check
            if not one.isascii():  # (the kernel's rules: RFC 3629, no surrogates, no overlong forms)
                try:
                    one.decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(f"input '{name}' row 0: text is not valid UTF-8") from None
            return np.frombuffer(one, dtype=np.uint8), np.array([0, len(one)], dtype=np.int64)
        data, offsets = pack_host(rows)
        if int(offsets[-1]) > limit:  # only then can a row be too long
            sizes = np.diff(offsets)
            if (sizes > limit).any():
                r = int(np.argmax(sizes > limit))
                raise InputError(f"input '{name}' row {r}: text of {int(sizes[r])} bytes exceeds max_text_bytes={limit}")
        bad = invalid_utf8_rows(data, offsets)
        if bad.size:
            raise InputError(f"input '{name}' row {int(bad[0])}: text is not valid UTF-8")
        return data, offsets

    def ids_dtype(self) -> str:
        """"int32" when the config's ids output is INT32 (the kernels then write it directly), else "int64"."""
        name = self.outputs.get("input_ids")
        return "int32" if name and np.dtype(self.out_dtypes[name]) == np.int32 else "int64"

    def text_batch(self, items: list[tuple[np.ndarray, np.ndarray]]) -> tuple[TextBatch, np.ndarray]:
        """All requests' texts as one host batch and the text count of each request: the ops upload it as
        one copy where it runs on a GPU (a small batch on a GPU instance runs on the CPU kernels)."""
        counts = np.array([off.shape[0] - 1 for _, off in items], dtype=np.int64)
        if len(items) == 1:  # one request: its buffer as it is
            return TextBatch.upload(items[0][0], items[0][1], np), counts
        data = np.concatenate([d for d, _ in items])
        shift = np.cumsum([0] + [d.shape[0] for d, _ in items[:-1]])
        offsets = np.concatenate([[0]] + [off[1:] + s for (_, off), s in zip(items, shift)]).astype(np.int64)
        return TextBatch.upload(data, offsets, np), counts

    def split_rows(self, arrays: dict[str, Any], counts: np.ndarray, mapping: Any = None) -> list[dict[str, Any]]:
        """Split batch outputs back per request: by text counts, or by a row→text ``mapping``."""
        if counts.shape[0] == 1:  # one request owns every row (its mapping already starts at text 0)
            return [dict(arrays)]
        text_ends = np.cumsum(counts)
        if mapping is None:
            row_ends = text_ends
        else:
            m = to_numpy(mapping)
            row_ends = np.searchsorted(m, text_ends, side="left")
        starts = np.concatenate([[0], row_ends[:-1]])
        text_starts = np.concatenate([[0], text_ends[:-1]])
        out = []
        for s, e, t0 in zip(starts, row_ends, text_starts):
            part = {role: a[s:e] for role, a in arrays.items()}
            if mapping is not None and "overflow_to_sample_mapping" in part:
                part["overflow_to_sample_mapping"] = part["overflow_to_sample_mapping"] - t0
            out.append(part)
        return out
