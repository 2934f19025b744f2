"""The model harness on example model directories: args, validation, execute contract, BLS, isolation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from triton_textops.testing import InferError, ModelLoadError, load_model
from triton_textops.testing import pb_utils as pb

MODELS = Path(__file__).parent / "models"


def test_add_sub_written_like_triton_examples_runs_unchanged(triton_model):
    h = triton_model(MODELS / "add_sub")
    a = np.array([1, 2, 3, 4], np.float32)
    b = np.array([0.5, 0.5, 0.5, 0.5], np.float32)
    out = h.infer({"INPUT0": a, "INPUT1": b})
    np.testing.assert_array_equal(out["OUTPUT0"], a + b)
    np.testing.assert_array_equal(out["OUTPUT1"], a - b)
    assert out["OUTPUT0"].dtype == np.float32
    assert ("INFO", "add_sub initialized: add_sub_0_0") in pb._runtime.log_records


def test_args_are_the_seven_server_strings(triton_model):
    h = triton_model(MODELS / "add_sub")
    assert set(h.args) == {
        "model_config",
        "model_instance_kind",
        "model_instance_name",
        "model_instance_device_id",
        "model_repository",
        "model_version",
        "model_name",
    }
    assert all(isinstance(v, str) for v in h.args.values())
    assert h.args["model_repository"] == str((MODELS / "add_sub").resolve())
    assert h.args["model_instance_name"] == "add_sub_0_0"
    assert h.args["model_instance_kind"] == "CPU" and h.args["model_instance_device_id"] == "0"
    assert h.args["model_version"] == "1" and h.args["model_name"] == "add_sub"
    assert json.loads(h.args["model_config"])["input"][0]["dims"] == [4]
    assert h.module.__name__ == "1.model"


def test_requested_outputs_are_pruned_and_unknown_output_rejected(triton_model):
    h = triton_model(MODELS / "add_sub")
    x = np.ones(4, np.float32)
    assert set(h.infer({"INPUT0": x, "INPUT1": x}, requested_outputs=["OUTPUT1"])) == {"OUTPUT1"}
    with pytest.raises(InferError, match="^unexpected inference output 'NOPE' for model 'add_sub'$"):
        h.infer({"INPUT0": x, "INPUT1": x}, requested_outputs=["NOPE"])


def test_outputs_not_in_config_are_pruned(triton_model):
    h = triton_model(MODELS / "bad_returns")
    out = h.infer({"X": np.array([1], np.int32)}, parameters={"mode": "extra_output"})
    assert set(out) == {"Y"}


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            {"INPUT0": np.ones(4, np.float32)},
            "[request id: <id_unknown>] expected 2 inputs but got 1 inputs for model 'add_sub'. Got input(s) "
            "['INPUT0'], but missing required "
            "input(s) ['INPUT1']. Please provide all required input(s).",
        ),
        (
            {"INPUT0": np.ones(4, np.float64), "INPUT1": np.ones(4, np.float32)},
            "[request id: <id_unknown>] inference input 'INPUT0' data-type is 'FP64', but model 'add_sub' expects "
            "'FP32'",
        ),
        (
            {"INPUT0": np.ones(5, np.float32), "INPUT1": np.ones(4, np.float32)},
            "[request id: <id_unknown>] unexpected shape for input 'INPUT0' for model 'add_sub'. Expected [4], "
            "got [5]. ",
        ),
        (
            {"INPUT0": np.ones(4, np.float32), "OTHER": np.ones(4, np.float32)},
            "unexpected inference input 'OTHER' for model 'add_sub'",  # from the model lookup: no request id
        ),
    ],
)
def test_inputs_checked_against_config_with_server_messages(triton_model, inputs, message):
    h = triton_model(MODELS / "add_sub")
    with pytest.raises(InferError) as info:
        h.infer(inputs)
    assert str(info.value) == message
    assert info.value.code == pb.TritonError.INVALID_ARG


def test_batch_dimension_rules(triton_model):
    h = triton_model(MODELS / "bytes_echo")  # max_batch_size 8, dims [-1]
    with pytest.raises(InferError, match=r"Expected \[-1,-1\], got \[3\]\. NOTE: Setting a non-zero max_batch_size"):
        h.infer({"TEXT": np.array(["a", "b", "c"], dtype=object)})
    with pytest.raises(InferError, match=r"^\[request id: <id_unknown>\] inference request batch-size must be <= 8 for 'bytes_echo'$"):
        h.infer({"TEXT": np.array([["a"]] * 9, dtype=object)})
    with pytest.raises(InferError, match=r"^\[request id: r1\] inference input 'TEXT' data-type is 'INT32'"):
        h.infer({"TEXT": np.zeros((1, 2), np.int32)}, request_id="r1")


def test_bytes_model_receives_object_array_of_bytes_on_cpu(triton_model):
    h = triton_model(MODELS / "bytes_echo", placement="cpu")
    out = h.infer({"TEXT": [["hé", "ab"], ["x", ""]]})
    assert out["UPPER"].tolist() == [["HÉ".encode()[:1] + "é".encode(), b"AB"], [b"X", b""]]
    np.testing.assert_array_equal(out["NBYTES"], [[3, 2], [1, 0]])
    assert out["KINDS"].tolist() == [[b"bytes|True"], [b"bytes|True"]]


def test_auto_complete_config_fills_config_like_the_server(triton_model):
    h = triton_model(MODELS / "autocomplete")  # no config.pbtxt at all
    cfg = h.config
    assert cfg["max_batch_size"] == 4
    assert cfg["dynamic_batching"]["preferred_batch_size"] == [4]
    assert [i["name"] for i in cfg["input"]] == ["X"] and cfg["input"][0]["optional"] is False
    assert cfg["instance_group"][0]["name"] == "autocomplete"
    assert h.args["model_instance_name"] == "autocomplete_0"
    np.testing.assert_array_equal(h.infer({"X": [[1, 2, 3]]})["Y"], [[2, 4, 6]])


def test_auto_complete_must_return_model_config(tmp_path):
    mdir = tmp_path / "ac_bad"
    (mdir / "1").mkdir(parents=True)
    (mdir / "1" / "model.py").write_text(
        "class TritonPythonModel:\n"
        "    @staticmethod\n"
        "    def auto_complete_config(cfg):\n"
        "        return None\n"
        "    def execute(self, requests):\n"
        "        return []\n"
    )
    with pytest.raises(ModelLoadError, match="^auto_complete_config function in model 'ac_bad' must return a valid pb.ModelConfig object.$"):
        load_model(mdir)


@pytest.mark.parametrize("value", ["No", "false", ""])
def test_force_cpu_only_value_must_be_yes_or_no(tmp_path, value):
    mdir = tmp_path / "m"
    shutil.copytree(MODELS / "add_sub", mdir)
    text = (mdir / "config.pbtxt").read_text().replace('name: "add_sub"', 'name: "m"')
    text += f'parameters: {{ key: "FORCE_CPU_ONLY_INPUT_TENSORS" value: {{ string_value: "{value}" }} }}\n'
    (mdir / "config.pbtxt").write_text(text)
    with pytest.raises(ModelLoadError, match=f"^Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: {value}'$") as info:
        load_model(mdir)
    assert info.value.error.code() == pb.TritonError.UNSUPPORTED


def test_gpu_placement_without_gpu_is_refused():
    if pb._cupy() is not None:
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="needs CuPy and a CUDA device"):
        load_model(MODELS / "gpu_scale", placement="gpu")


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("tuple", "Expected a list in the execute return, found type '<class 'tuple'>'."),
        (
            "short",
            "Number of InferenceResponse objects do not match the number of InferenceRequest objects. "
            "InferenceRequest(s) size is:2, and InferenceResponse(s) size is:1\n",
        ),
        (
            "dict",
            "Expected an 'InferenceResponse' object in the execute function return list, found type "
            "'<class 'dict'>'.",
        ),
        ("sender_then_return", "Unable to send response. Non-decoupled model cannot send more than one response."),
    ],
)
def test_execute_return_contract(triton_model, mode, message):
    h = triton_model(MODELS / "bad_returns")
    reqs = [h.make_request({"X": np.array([1], np.int32)}, parameters={"mode": mode}) for _ in range(2)]
    responses = h.execute(reqs)
    assert len(responses) == 2
    for r in responses:
        assert r.has_error()
        assert r.error().message() == f"Failed to process the request(s) for model 'bad_returns_0', message: {message}"


def test_exception_in_execute_fails_the_batch_with_traceback(triton_model):
    h = triton_model(MODELS / "bad_returns")
    with pytest.raises(InferError) as info:
        h.infer({"X": np.array([1], np.int32)}, parameters={"mode": "raise"})
    msg = str(info.value)
    assert msg.startswith(
        "Failed to process the request(s) for model 'bad_returns_0', message: ValueError: boom from execute\n\nAt:\n"
    )
    assert "model.py(" in msg and "): execute" in msg
    with pytest.raises(InferError, match="TypeError: __init__\\(\\): incompatible constructor arguments") as info:
        h.infer({"X": np.array([1], np.int32)}, parameters={"mode": "tensor_list"})
    at = str(info.value).split("At:\n")[1]
    assert "pb_utils.py" not in at and at.count("\n") == 1  # only the model's frame, as pybind11 shows


def test_error_response_reaches_client(triton_model):
    h = triton_model(MODELS / "bad_returns")
    with pytest.raises(InferError, match="^bad X$") as info:
        h.infer({"X": np.array([1], np.int32)}, parameters={"mode": "error_response"})
    assert info.value.code == pb.TritonError.INVALID_ARG


def test_parameters_are_compact_json(triton_model):
    h = triton_model(MODELS / "bad_returns")
    req = h.make_request({"X": np.array([1], np.int32)}, parameters={"pk": "pv", "pi": 7, "pb": True})
    assert req.parameters() == '{"pk":"pv","pi":7,"pb":true}'
    assert req.requested_output_names() == {"Y"} and req.request_id() == ""


def test_decoupled_model(triton_model):
    h = triton_model(MODELS / "decoupled_repeat")
    outs = h.infer_stream({"N": np.array([3], np.int32)})
    assert [o["I"].tolist() for o in outs] == [[0], [1], [2]]
    with pytest.raises(InferError, match="use infer_stream"):
        h.infer({"N": np.array([1], np.int32)})
    with pytest.raises(InferError, match="Python model 'decoupled_repeat_0' is using the decoupled mode and the execute function must return None."):
        h.infer_stream({"N": np.array([-1], np.int32)})
    with pytest.raises(InferError, match="Unable to send response. Response sender has been closed."):
        h.infer_stream({"N": np.array([0], np.int32)})


def test_bls_between_loaded_models(triton_model):
    triton_model(MODELS / "add_sub")
    caller = triton_model(MODELS / "bls_caller")
    assert caller.instance.init_error == "BLS is only supported during the 'execute' function."
    a = np.arange(4, dtype=np.float32)
    out = caller.infer({"A": a, "TARGET": ["add_sub"]})
    np.testing.assert_array_equal(out["SUM"], 2 * a)
    assert out["ERR"].tolist() == [b"OUTPUT0"]  # the callee's unrequested OUTPUT1 is pruned
    out = caller.infer({"A": a, "TARGET": ["nope"]})
    assert out["ERR"][0].decode() == (
        "Model nope - Error when running inference: Failed for execute the inference request. Model 'nope' is not ready."
    )


def test_bls_input_errors_come_back_as_error_responses(triton_model):
    triton_model(MODELS / "bytes_echo")
    caller = triton_model(MODELS / "bls_caller")
    out = caller.infer({"A": np.arange(4, dtype=np.float32), "TARGET": ["bytes_echo"]})
    # The server checks requested outputs before inputs.
    assert out["ERR"][0].decode() == (
        "Model bytes_echo - Error when running inference: unexpected inference output 'OUTPUT0' for model 'bytes_echo'"
    )


def test_two_models_with_same_sibling_module_do_not_clash(triton_model):
    a = triton_model(MODELS / "clash_a")
    b = triton_model(MODELS / "clash_b")
    x = {"X": np.array([1], np.int32)}
    assert a.infer(x)["WHO"].tolist() == [b"clash_a/clash_a/1.model"]
    assert b.infer(x)["WHO"].tolist() == [b"clash_b/clash_b/1.model"]
    assert a.infer(x)["WHO"].tolist() == [b"clash_a/clash_a/1.model"]
    import sys  # noqa: PLC0415

    assert "helpers" not in sys.modules and "1.model" not in sys.modules


def test_get_model_dir_and_finalize(tmp_path):
    mdir = tmp_path / "probe"
    (mdir / "1").mkdir(parents=True)
    (mdir / "config.pbtxt").write_text(
        'backend: "python"\ninput [{ name: "X" data_type: TYPE_INT32 dims: [1] }]\n'
        'output [{ name: "D" data_type: TYPE_STRING dims: [1] }]\n'
    )
    (mdir / "1" / "model.py").write_text(
        "import numpy as np\n"
        "import triton_python_backend_utils as pb_utils\n"
        "FINALIZED = []\n"
        "class TritonPythonModel:\n"
        "    def execute(self, requests):\n"
        "        d = pb_utils.get_model_dir()\n"
        "        return [pb_utils.InferenceResponse([pb_utils.Tensor('D', np.array([d], dtype=object))]) for r in requests]\n"
        "    def finalize(self):\n"
        "        FINALIZED.append(True)\n"
    )
    h = load_model(mdir)
    assert h.infer({"X": [1]})["D"][0].decode() == str(mdir.resolve() / "1")
    h.finalize()
    h.finalize()
    assert h.module.FINALIZED == [True]
    assert not pb.is_model_ready("probe")


def test_unicode_numpy_arrays_are_refused_like_tritonclient(triton_model):
    h = triton_model(MODELS / "bytes_echo")
    with pytest.raises(InferError, match=r"^input 'TEXT': a NumPy unicode array \(dtype <U2\) cannot be sent") as info:
        h.infer({"TEXT": np.array([["ab"]])})
    assert "send bytes or an object array" in str(info.value) and info.value.code == pb.TritonError.INVALID_ARG
    out = h.infer({"TEXT": np.array([["ab"]], dtype=object)})  # object arrays (str or bytes) and lists are fine
    assert out["UPPER"].tolist() == [[b"AB"]]


def test_model_config_json_keys_follow_the_schema_declaration_order(triton_model):
    h = triton_model(MODELS / "add_sub")
    cfg = json.loads(h.args["model_config"])
    assert list(cfg)[:8] == ["name", "platform", "backend", "runtime", "version_policy", "max_batch_size", "input",
                             "output"]
    assert list(cfg["input"][0])[:4] == ["name", "data_type", "format", "dims"]
    assert list(cfg["instance_group"][0])[:3] == ["name", "kind", "count"]
