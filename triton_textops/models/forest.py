"""Triton model ``cuml`` on the Python backend: a Treelite forest checkpoint (features → score) via GTIL.

model.py: ``from triton_textops.models.forest import TritonPythonModel``. It runs the same
``checkpoint.tl`` the FIL backend would (``model_type: treelite_checkpoint``), for servers without FIL;
predictions come from ``treelite.gtil.predict`` on the host (also on KIND_GPU instances: GTIL is CPU-only).
Parameters: ``checkpoint`` (path, default ``checkpoint.tl``), ``threads`` (GTIL threads, 0 = all cores).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_textops.errors import ConfigError, InputError
from triton_textops.triton import io
from triton_textops.triton.base import TensorSpec, TextOpsModel
from triton_textops.triton.params import Param


def load_forest(path: str) -> Any:
    """A Treelite model from a checkpoint file (``Model.serialize`` output)."""
    import treelite

    return treelite.Model.deserialize(path)


def predict(forest: Any, x: np.ndarray, threads: int = 0) -> np.ndarray:
    """Regression scores ``[rows, 1]`` float32 of a single-target forest."""
    import treelite

    out = treelite.gtil.predict(forest, np.ascontiguousarray(x, dtype=np.float32), nthread=threads or -1)
    return np.asarray(out, dtype=np.float32).reshape(x.shape[0], 1)


class TritonPythonModel(TextOpsModel):
    PARAMS = [Param("checkpoint", "path", default="checkpoint.tl", help="Treelite checkpoint of the forest"),
              Param("threads", "int", default=0, minimum=0, help="Treelite's threads (0: all cores)")]
    INPUTS = {"features": TensorSpec("input__0", "TYPE_FP32", (-1,))}
    OUTPUTS = {"score": TensorSpec("output__0", "TYPE_FP32")}

    def setup(self) -> None:
        self.forest = load_forest(self.params["checkpoint"])
        self.n_features = int(self.forest.num_feature)
        header = self.forest.get_header_accessor()
        if int(header.get_field("num_target")[0]) != 1 or int(np.prod(header.get_field("num_class"))) != 1:
            raise ConfigError(f"{self.params['checkpoint']}: expected a single-target regression forest")
        width = next(t for t in self.model_config["input"] if t["name"] == self.names["features"])["dims"][-1]
        if width not in (-1, self.n_features):
            raise ConfigError(f"input has {width} features but the forest takes {self.n_features}")

    def read(self, request: Any) -> Any:
        name = self.names["features"]
        x = io.numeric(io.to_array(io.get_tensor(self.pb, request, name), np), name, "f")
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise InputError(f"input '{name}' must be [batch, {self.n_features}], got {list(x.shape)}")
        return x

    def compute(self, items: list[Any]) -> list[dict[str, Any]]:
        scores = predict(self.forest, np.concatenate(items), self.params["threads"])
        return self.split_rows({"score": scores}, np.array([x.shape[0] for x in items]))
