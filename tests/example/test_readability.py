"""The trained example: target, artifacts, the onnx/forest python models, the ensemble in-process."""

from __future__ import annotations

import numpy as np
import pytest

from triton_textops.testing import load_model, run_ensemble
from triton_textops.tools.example.readability import count_syllables, flesch_kincaid_grade


def test_syllables_and_flesch_kincaid() -> None:
    assert [count_syllables(w) for w in ("the", "make", "table", "beautiful", "readability", "I'm")] == [
        1, 1, 2, 3, 5, 1]
    # 6 words, 1 sentence, 6 syllables: 0.39 * 6 + 11.8 * 1 - 15.59
    assert flesch_kincaid_grade("The cat sat on the mat.") == pytest.approx(0.39 * 6 + 11.8 - 15.59)
    # "Mr." does not end a sentence: 2 sentences, 5 words, 6 syllables
    assert flesch_kincaid_grade("Mr. Darcy came. He left!") == pytest.approx(0.39 * 2.5 + 11.8 * 6 / 5 - 15.59)


def test_artifacts_and_repository(example) -> None:
    import onnx
    import treelite

    rep = example.report
    assert rep["texts"] == {"total": 160, "train": 120, "test": 40, "encoder_train": 120}
    assert set(rep["r2_test"]) == {"bert", "forest", "blend_w0.5"}
    assert rep["r2_test"]["forest"] > 0.5  # FK grade is mostly words/sentence, one of the 207 features
    forest = treelite.Model.deserialize(str(example.repo / "cuml" / "checkpoint.tl"))
    assert (forest.num_tree, forest.num_feature, rep["n_features"]) == (100, 207, 207)
    assert max(forest.get_tree_depth()) <= 16
    g = onnx.load(str(example.repo / "bert-large" / "model.onnx")).graph
    assert [i.name for i in g.input] == ["INPUT__0", "INPUT__1"] and [o.name for o in g.output] == ["OUTPUT__0"]
    for m in ("preprocess", "bert-large", "cuml", "postprocess", "ensemble_all"):
        assert (example.repo / m / "config.pbtxt").is_file()


def _preprocess(example, texts: list[str]) -> dict[str, np.ndarray]:
    with load_model(example.repo / "preprocess") as pre:
        return pre.infer({"INPUT0": np.array([[t.encode()] for t in texts], dtype=np.object_)})


def test_onnx_regressor_equals_onnxruntime(example, excerpts) -> None:
    import onnxruntime as ort

    pre = _preprocess(example, excerpts)
    ids, mask = pre["BERT_IDS"], pre["BERT_AM"]
    sess = ort.InferenceSession(str(example.repo / "bert-large" / "model.onnx"), providers=["CPUExecutionProvider"])
    direct = sess.run(None, {"INPUT__0": ids, "INPUT__1": mask})[0]
    with load_model(example.repo / "bert-large") as bert:
        one = bert.infer({"INPUT__0": ids, "INPUT__1": mask})["OUTPUT__0"]
        # three requests in one execute: one batch, split back per request
        parts = bert.infer_batch([{"INPUT__0": ids[s], "INPUT__1": mask[s]} for s in (slice(0, 3), slice(3, 4),
                                                                                        slice(4, None))])
    assert one.dtype == np.float32 and one.shape == (len(excerpts), 1)
    np.testing.assert_allclose(one, direct, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.concatenate([p["OUTPUT__0"] for p in parts]), direct, rtol=1e-5, atol=1e-5)


def test_forest_equals_treelite(example, excerpts) -> None:
    import treelite

    feats = _preprocess(example, excerpts)["TREE_FEATS"]
    forest = treelite.Model.deserialize(str(example.repo / "cuml" / "checkpoint.tl"))
    direct = treelite.gtil.predict(forest, feats).reshape(-1, 1).astype(np.float32)
    with load_model(example.repo / "cuml") as cuml:
        out = cuml.infer({"input__0": feats})["output__0"]
        parts = cuml.infer_batch([{"input__0": feats[:2]}, {"input__0": feats[2:]}])
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, direct)
    np.testing.assert_array_equal(np.concatenate([p["output__0"] for p in parts]), direct)


def test_ensemble_in_process_is_the_blend_of_the_models(example, excerpts) -> None:
    from triton_textops.tools.example.demo import ensemble_inputs

    pre = _preprocess(example, excerpts)
    with load_model(example.repo / "bert-large") as bert, load_model(example.repo / "cuml") as cuml:
        b = bert.infer({"INPUT__0": pre["BERT_IDS"], "INPUT__1": pre["BERT_AM"]})["OUTPUT__0"]
        t = cuml.infer({"input__0": pre["TREE_FEATS"]})["output__0"]
    inputs = ensemble_inputs(excerpts, 0.25)
    score = run_ensemble(example.repo, "ensemble_all", inputs)["SCORE"]
    np.testing.assert_allclose(score, np.float32(0.25) * b + np.float32(0.75) * t, rtol=1e-6, atol=1e-5)


def test_steps_report_progress_off_a_terminal() -> None:
    """Issue 47: the encoder's 2-minute step printed nothing when stderr is a log or a pipe; now a line every
    ``every_s`` seconds (every call here)."""
    import io

    from triton_textops.tools.example.readability import Steps

    out = io.StringIO()
    steps = Steps(out, every_s=0.0)
    assert steps.run("encode", lambda progress: [progress(f"embedded {k}/2 texts") for k in (1, 2)] and 7) == 7
    lines = out.getvalue().splitlines()
    assert lines[0] == "  encode ..." and lines[1].startswith("    embedded 1/2 texts (")
    assert lines[2].startswith("    embedded 2/2 texts (") and lines[3].startswith("    done in ")
    assert "\r" not in out.getvalue() and "encode" in steps.timings
