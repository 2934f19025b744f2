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
from triton_textops.ops.text import TextBatch, invalid_utf8_rows, pack_host
from triton_textops.ops.xp import get_xp, to_numpy, tune_host_allocator
from triton_textops.triton import io
from triton_textops.triton.params import Param, parse_parameters


@dataclass(frozen=True)
class TensorSpec:
    """A model tensor: default name, Triton data type, dims per row (``"L"``: the max_length param)."""

    name: str
    data_type: str
    dims: tuple[Any, ...] = (1,)
    optional: bool = False  # an input a request may omit / an output the config may leave out


COMMON_PARAMS = [
    Param("tensor_names", "names", default={}, help="rename tensors: role=NAME,role=NAME"),
    Param("max_text_bytes", "int", default=1 << 20, minimum=1, help="reject longer texts (bytes)"),
    Param("default_max_batch_size", "int", default=64, minimum=0, help="max_batch_size set by auto-complete"),
]


class TextOpsModel:
    """Shared ``initialize`` / ``execute`` / ``auto_complete_config`` for the triton-textops models."""

    PARAMS: list[Param] = []
    INPUTS: dict[str, TensorSpec] = {}
    OUTPUTS: dict[str, TensorSpec] = {}

    # ------------------------------------------------------------------------- configuration

    @classmethod
    def _params(cls, cfg: dict, model_dir: str = "", check_paths: bool = False) -> dict[str, Any]:
        return parse_parameters(cfg, COMMON_PARAMS + cls.PARAMS, model_dir, check_paths=check_paths)

    @classmethod
    def _names(cls, cfg: dict, params: dict[str, Any]) -> dict[str, str]:
        renames = params["tensor_names"]
        roles = {**cls.INPUTS, **cls.OUTPUTS}
        bad = sorted(set(renames) - set(roles))
        if bad:
            raise ConfigError(f"tensor_names: unknown role(s) {', '.join(bad)} (roles: {', '.join(roles)})")
        return {role: renames.get(role, spec_.name) for role, spec_ in roles.items()}

    @classmethod
    def _dims(cls, spec: TensorSpec, cfg: dict, params: dict[str, Any]) -> list[int]:
        dims = [int(params.get("max_length", 128)) if d == "L" else int(d) for d in spec.dims]
        return dims if cfg.get("max_batch_size", 0) > 0 else [-1, *dims]

    @classmethod
    def auto_complete_config(cls, auto_complete_model_config: Any) -> Any:
        """Fill omitted inputs, outputs, max_batch_size and dynamic batching (as the server would ask)."""
        cfg = auto_complete_model_config.as_dict()
        params = cls._params(cfg)
        mbs = params["default_max_batch_size"]
        if cfg.get("max_batch_size", 0) == 0 and mbs > 0 and cls.batchable(params):
            auto_complete_model_config.set_max_batch_size(mbs)
            cfg = auto_complete_model_config.as_dict()
            if not cfg.get("sequence_batching") and not cfg.get("dynamic_batching"):
                auto_complete_model_config.set_dynamic_batching()
        names = cls._names(cfg, params)
        have_in = {t["name"] for t in cfg.get("input", [])}
        have_out = {t["name"] for t in cfg.get("output", [])}
        for role, spec in cls.INPUTS.items():
            # optional inputs (window mappings) only make sense without a batch dimension
            if names[role] not in have_in and (not spec.optional or cfg.get("max_batch_size", 0) == 0):
                entry = {"name": names[role], "data_type": spec.data_type, "dims": cls._dims(spec, cfg, params)}
                if spec.optional:
                    entry["optional"] = True
                auto_complete_model_config.add_input(entry)
        for role, spec in cls.OUTPUTS.items():
            if names[role] not in have_out and (not spec.optional or cls.wants_output(role, params)):
                auto_complete_model_config.add_output(
                    {"name": names[role], "data_type": spec.data_type, "dims": cls._dims(spec, cfg, params)}
                )
        return auto_complete_model_config

    @classmethod
    def batchable(cls, params: dict[str, Any]) -> bool:
        """Whether the model can use a batch dimension with these parameters."""
        return True

    @classmethod
    def wants_output(cls, role: str, params: dict[str, Any]) -> bool:
        """Whether auto-complete should add the optional output ``role``."""
        return False

    def initialize(self, args: dict[str, str]) -> None:
        import triton_python_backend_utils as pb_utils

        self.pb = pb_utils
        self.model_config = cfg = json.loads(args["model_config"])
        self.params = self._params(cfg, args["model_repository"], check_paths=True)
        self.names = self._names(cfg, self.params)
        inputs = {t["name"]: t for t in cfg.get("input", [])}
        outputs = {t["name"]: t for t in cfg.get("output", [])}
        for role, spec in self.INPUTS.items():
            if self.names[role] not in inputs and not spec.optional:
                raise ConfigError(f"model '{cfg.get('name')}': config has no input '{self.names[role]}' ({role})")
        missing = [self.names[r] for r, s in self.OUTPUTS.items() if not s.optional and self.names[r] not in outputs]
        if missing:
            raise ConfigError(f"model '{cfg.get('name')}': config has no output {', '.join(missing)}")
        self.outputs = {r: self.names[r] for r in self.OUTPUTS if self.names[r] in outputs}
        self.out_dtypes = {n: pb_utils.triton_string_to_numpy(outputs[n]["data_type"]) for n in self.outputs.values()}
        self.batched = cfg.get("max_batch_size", 0) > 0
        self.device = io.device_of(args)
        self.xp = get_xp(self.device)
        tune_host_allocator()  # this stub process serves this instance: keep batch temporaries on the heap
        with self._on_device():
            self.setup()

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
                    responses[i] = io.error_response(pb, e)
            if items:
                try:
                    outs = self.compute([item for _, item in items])
                    for (i, _), out in zip(items, outs):
                        responses[i] = self._respond(requests[i], out)
                except Exception as e:
                    for i, _ in items:
                        responses[i] = io.error_response(pb, e)
        return responses

    def _respond(self, request: Any, out: dict[str, Any]) -> Any:
        wanted = request.requested_output_names() or set(self.outputs.values())
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
        """A request's texts as a host (uint8 buffer, offsets) pair, checked: UTF-8, size limit."""
        name = self.names[role]
        rows = io.text_rows(io.get_tensor(self.pb, request, name), name)
        if rows.shape[0] == 0:
            raise InputError(f"input '{name}' is empty: a request needs at least one text")
        data, offsets = pack_host(rows)
        limit = self.params["max_text_bytes"]
        sizes = np.diff(offsets)
        if (sizes > limit).any():
            r = int(np.argmax(sizes > limit))
            raise InputError(f"input '{name}' row {r}: text of {int(sizes[r])} bytes exceeds max_text_bytes={limit}")
        bad = invalid_utf8_rows(TextBatch(data, offsets, np))
        if bad.size:
            raise InputError(f"input '{name}' row {int(bad[0])}: text is not valid UTF-8")
        return data, offsets

    def text_batch(self, items: list[tuple[np.ndarray, np.ndarray]]) -> tuple[TextBatch, np.ndarray]:
        """All requests' texts as one device batch (one upload) and the text count of each request."""
        counts = np.array([off.shape[0] - 1 for _, off in items], dtype=np.int64)
        data = np.concatenate([d for d, _ in items])
        shift = np.cumsum([0] + [d.shape[0] for d, _ in items[:-1]])
        offsets = np.concatenate([[0]] + [off[1:] + s for (_, off), s in zip(items, shift)]).astype(np.int64)
        xp = self.xp
        return TextBatch(xp.asarray(data), xp.asarray(offsets), xp), counts

    def split_rows(self, arrays: dict[str, Any], counts: np.ndarray, mapping: Any = None) -> list[dict[str, Any]]:
        """Split batch outputs back per request: by text counts, or by a row→text ``mapping``."""
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
