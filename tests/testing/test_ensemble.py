"""The in-process ensemble runner on a three-step ensemble (python -> onnx stand-in -> python)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from triton_textops.testing import run_ensemble
from triton_textops.testing.ensemble import EnsembleError

REPO = Path(__file__).parent / "ensemble_repo"


def _mid(inputs):
    return {"SCORE": (inputs["LENS_IN"] > 5).astype(np.float32)}


def test_three_steps_run_in_dependency_order():
    # Steps are listed post, mid, pre in the config: the runner must order them by data flow.
    out = run_ensemble(REPO, "ens", {"TEXT": ["hello world", "hi", "héllo!"]}, models={"mid": _mid})
    assert set(out) == {"LABEL", "LENGTHS"}
    assert out["LABEL"].tolist() == [b"HELLO WORLD:long", b"HI:short", "HÉLLO!:long".encode()]
    np.testing.assert_array_equal(out["LENGTHS"], [11, 2, 6])


def test_non_python_member_without_callable_is_named():
    with pytest.raises(EnsembleError, match=r"step 1 \(model 'mid'\): 'mid' is not a Python-backend model") as info:
        run_ensemble(REPO, "ens", {"TEXT": ["a"]})
    assert info.value.step == 1 and info.value.model == "mid"


def test_member_input_error_names_step_and_tensor():
    def wrong_dtype(inputs):
        return {"SCORE": (inputs["LENS_IN"] > 5).astype(np.float64)}

    with pytest.raises(EnsembleError) as info:
        run_ensemble(REPO, "ens", {"TEXT": ["a"]}, models={"mid": wrong_dtype}, request_id="r-9")
    err = info.value
    assert err.step == 0 and err.model == "post" and err.tensor == "scores"
    # the step request carries the ensemble request's id, as in the server's ensemble scheduler
    assert str(err) == (
        "in ensemble 'ens', step 0 (model 'post'): [request id: r-9] inference input 'SCORE' data-type is 'FP64', "
        "but model 'post' expects 'FP32' (ensemble tensor 'scores')"
    )


def test_missing_member_output_is_named():
    with pytest.raises(EnsembleError, match="output 'SCORE' \\(ensemble tensor 'scores'\\) was not returned") as info:
        run_ensemble(REPO, "ens", {"TEXT": ["a"]}, models={"mid": lambda d: {}})
    assert info.value.tensor == "scores"


def test_member_callable_returning_an_array_is_a_clear_error():
    """Issue 26: returning the array itself used to fail in dict() ("dictionary update sequence element #0...")."""
    with pytest.raises(EnsembleError) as info:
        run_ensemble(REPO, "ens", {"TEXT": ["a"]}, models={"mid": lambda d: _mid(d)["SCORE"]})
    assert str(info.value) == ("in ensemble 'ens', step 1 (model 'mid'): the models= callable must return a dict of "
                               "the model's output names to arrays ({'SCORE': array}), not ndarray")
    assert info.value.model == "mid" and info.value.step == 1


def test_ensemble_inputs_are_validated():
    with pytest.raises(
        EnsembleError,
        match=r"^\[request id: <id_unknown>\] inference input 'TEXT' data-type is 'INT64', but model 'ens' expects",
    ):
        run_ensemble(REPO, "ens", {"TEXT": np.array([1, 2])}, models={"mid": _mid})
    with pytest.raises(EnsembleError, match="input 'TEXT': a NumPy unicode array .* send bytes or an object array"):
        run_ensemble(REPO, "ens", {"TEXT": np.array(["a"])}, models={"mid": _mid})


def test_unconnected_tensor_is_reported(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)
    cfg = repo / "ens" / "config.pbtxt"
    cfg.write_text(cfg.read_text().replace('value: "upper" }\n      output_map', 'value: "uppr" }\n      output_map'))
    with pytest.raises(EnsembleError, match="ensemble tensor 'uppr' is never produced") as info:
        run_ensemble(repo, "ens", {"TEXT": ["a"]}, models={"mid": _mid})
    assert info.value.model == "post" and info.value.tensor == "uppr"
