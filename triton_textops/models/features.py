"""Triton model ``features``: text → readability features (float32, 7 + 2N per text).

model.py: ``from triton_textops.models.features import TritonPythonModel``. Parameters: ``features``
(artifact path, default ``features.json``), ``normalize`` (true), ``tensor_names``, ``max_text_bytes``.
"""

from __future__ import annotations

from typing import Any

from triton_textops.errors import ConfigError
from triton_textops.ops.features import ReadabilityFeatures
from triton_textops.triton.base import TensorSpec, TextOpsModel
from triton_textops.triton.params import Param

FEATURE_PARAMS = [
    Param("features", "path", default="features.json", help="artifact from `triton-textops fit-features`"),
    Param("normalize", "bool", default=True, help="standardize with the artifact's mean and std"),
]


def load_features(model: TextOpsModel, role: str) -> ReadabilityFeatures:
    """The fitted features artifact, checked against the output width in the config."""
    try:
        feats = ReadabilityFeatures.load(model.params["features"])
    except ValueError as e:
        raise ConfigError(f"features artifact: {e}") from None
    out = next(t for t in model.model_config["output"] if t["name"] == model.names[role])
    width = out["dims"][-1]
    if width not in (-1, feats.n_features):
        raise ConfigError(f"output '{out['name']}' has {width} columns but the artifact gives {feats.n_features}")
    return feats


class TritonPythonModel(TextOpsModel):
    PARAMS = FEATURE_PARAMS
    INPUTS = {"text": TensorSpec("TEXT", "TYPE_STRING")}
    OUTPUTS = {"features": TensorSpec("FEATURES", "TYPE_FP32", (-1,))}

    def setup(self) -> None:
        self.features = load_features(self, "features")

    def read(self, request: Any) -> Any:
        return self.read_text(request)

    def compute(self, items: list[Any]) -> list[dict[str, Any]]:
        batch, counts = self.text_batch(items)
        x = self.features.transform(batch, normalize=self.params["normalize"], device=self.device,
                                    gpu_min_batch=self.params["gpu_min_batch"])
        return self.split_rows({"features": x}, counts)
