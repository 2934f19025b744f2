"""Triton model ``bert-large`` on the Python backend: an ONNX regressor (ids, mask → score) in onnxruntime.

model.py: ``from triton_textops.models.onnx_regressor import TritonPythonModel``. It runs the same
``model.onnx`` the onnxruntime backend would (graph inputs: ids, mask; one output ``[batch, 1]``), for
servers that only have the Python backend. Parameters: ``model`` (path, default ``model.onnx``),
``threads`` (onnxruntime intra-op threads, 0 = its default), ``ids_dtype`` (int64/int32: the type
auto-complete gives the id/mask inputs of a config without tensors; any integer input is accepted).
KIND_GPU instances use the CUDA execution provider when onnxruntime has it, else the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_textops.errors import ConfigError, InputError
from triton_textops.triton import io
from triton_textops.triton.base import IDS_DTYPE_PARAM, TensorSpec, TextOpsModel
from triton_textops.triton.params import Param


def make_session(path: str, device: str = "cpu", threads: int = 0) -> Any:
    """An onnxruntime session for ``path``: CUDA provider on ``cuda:<id>`` when available, else CPU."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    providers: list[Any] = ["CPUExecutionProvider"]
    if device.startswith("cuda") and "CUDAExecutionProvider" in ort.get_available_providers():
        providers.insert(0, ("CUDAExecutionProvider", {"device_id": int(device.split(":")[1])}))
    return ort.InferenceSession(path, opts, providers=providers)


class TritonPythonModel(TextOpsModel):
    PARAMS = [Param("model", "path", default="model.onnx", help="the ONNX model file"),
              Param("threads", "int", default=0, minimum=0, help="onnxruntime's intra-op threads (0: its default)"),
              IDS_DTYPE_PARAM]
    INPUTS = {
        "input_ids": TensorSpec("INPUT__0", "TYPE_INT64", (-1,), ids=True),
        "attention_mask": TensorSpec("INPUT__1", "TYPE_INT64", (-1,), ids=True),
    }
    OUTPUTS = {"score": TensorSpec("OUTPUT__0", "TYPE_FP32")}

    def setup(self) -> None:
        self.session = make_session(self.params["model"], self.device, self.params["threads"])
        self.feeds = [i.name for i in self.session.get_inputs()]
        if len(self.feeds) != 2 or len(self.session.get_outputs()) != 1:
            raise ConfigError(f"{self.params['model']}: expected 2 inputs (ids, mask) and 1 output, got "
                              f"{self.feeds} → {[o.name for o in self.session.get_outputs()]}")

    def read(self, request: Any) -> Any:
        ids, mask = (io.numeric(io.to_array(io.get_tensor(self.pb, request, self.names[r]), np), self.names[r], "iu")
                     for r in ("input_ids", "attention_mask"))
        if ids.ndim != 2 or ids.shape != mask.shape:
            raise InputError(f"ids {list(ids.shape)} and mask {list(mask.shape)} must be equal [batch, length]")
        return ids.astype(np.int64), mask.astype(np.int64)

    def compute(self, items: list[Any]) -> list[dict[str, Any]]:
        width = max(ids.shape[1] for ids, _ in items)  # requests of other lengths: pad (mask 0)
        ids, mask = (np.concatenate([np.pad(it[k], ((0, 0), (0, width - it[k].shape[1]))) for it in items])
                     for k in (0, 1))
        scores = self.session.run(None, dict(zip(self.feeds, (ids, mask))))[0]
        scores = np.asarray(scores, dtype=np.float32).reshape(ids.shape[0], -1)
        return self.split_rows({"score": scores}, np.array([it[0].shape[0] for it in items]))
