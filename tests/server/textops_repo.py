"""Helpers of the real-server tests of OUR models (the model directories themselves: ``tests/model_dirs.py``,
shared with the in-process tests): the features artifact, request helpers, and a comparison of outputs that
demands exact equality and equal dtypes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

# ---------------------------------------------------------------------------------------------- requests


def text_tensor(texts: Sequence[str | bytes]) -> np.ndarray:
    """``[n, 1]`` BYTES tensor as a client sends it."""
    rows = [t.encode() if isinstance(t, str) else t for t in texts]
    return np.array(rows, dtype=np.object_).reshape(-1, 1)


def harness_infer(model: Any, inputs: Mapping[str, np.ndarray], outputs: Sequence[str] | None = None,
                  request_id: str = "") -> tuple[dict[str, np.ndarray], str | None]:
    """Same contract as ``triton_helpers.server_infer``, in-process: ``(outputs, None)`` or ``({}, message)``."""
    from triton_textops.testing.harness import InferError

    kw = {"request_id": request_id} if request_id else {}
    try:
        return model.infer(dict(inputs), list(outputs) if outputs is not None else None, **kw), None
    except InferError as err:
        return {}, str(err)


def assert_same_outputs(real: Mapping[str, np.ndarray], mock: Mapping[str, np.ndarray],
                        config_dtypes: Mapping[str, np.dtype]) -> None:
    """Same output names, shapes, dtypes (= the config's) and values, exactly (bytes compared as bytes)."""
    assert set(real) == set(mock), (sorted(real), sorted(mock))
    for name in real:
        r, m = real[name], mock[name]
        assert r.dtype == m.dtype == config_dtypes[name], (name, r.dtype, m.dtype, config_dtypes[name])
        assert r.shape == m.shape, (name, r.shape, m.shape)
        np.testing.assert_array_equal(r, m, err_msg=name)


def config_dtypes(config: Mapping[str, Any]) -> dict[str, np.dtype]:
    """Output name -> NumPy dtype from a model config dict (harness ``model.config``)."""
    from tritonclient.utils import triton_to_np_dtype

    return {o["name"]: np.dtype(triton_to_np_dtype(o["data_type"].replace("TYPE_", "").replace("STRING", "BYTES")))
            for o in config["output"]}
