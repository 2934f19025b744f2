"""Each trap of the real triton_python_backend_utils (2.51) reproduced by the mock."""

from __future__ import annotations

import json
import struct
import sys

import numpy as np
import pytest

from triton_textops.testing import install_pb_utils
from triton_textops.testing import pb_utils as pb


def test_install_registers_module_idempotently():
    mod = install_pb_utils()
    assert sys.modules["triton_python_backend_utils"] is mod
    assert install_pb_utils() is mod
    import triton_python_backend_utils as imported  # noqa: PLC0415

    assert imported is mod


def test_public_names_of_both_layers_exist(pb_utils):
    for name in (
        "InferenceRequest InferenceResponse Logger MetricFamily ModelConfig PreferredMemory TRITONSERVER_MEMORY_CPU "
        "TRITONSERVER_MEMORY_GPU TRITONSERVER_REQUEST_FLAG_SEQUENCE_END TRITONSERVER_REQUEST_FLAG_SEQUENCE_START "
        "TRITONSERVER_REQUEST_RELEASE_ALL TRITONSERVER_REQUEST_RELEASE_RESCHEDULE TRITONSERVER_RESPONSE_COMPLETE_FINAL "
        "TRITON_STRING_TO_NUMPY Tensor TritonError TritonModelException deserialize_bytes_tensor "
        "get_input_config_by_name get_input_tensor_by_name get_model_dir get_output_config_by_name "
        "get_output_tensor_by_name is_model_ready load_model numpy_to_triton_type serialize_byte_tensor "
        "triton_string_to_numpy triton_to_numpy_type unload_model using_decoupled_model_transaction_policy "
        "json np struct"
    ).split():
        assert hasattr(pb_utils, name), name
    assert pb_utils.TRITONSERVER_MEMORY_GPU == 0 and pb_utils.TRITONSERVER_MEMORY_CPU == 1


# ----------------------------------------------------------------------------- Tensor construction


def test_tensor_positional_only_and_ndarray_only():
    with pytest.raises(TypeError, match=r"__init__\(\): incompatible constructor arguments"):
        pb.Tensor("X", [1, 2, 3])
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb.Tensor(name="X", array=np.zeros(2))
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb.Tensor("X", np.float32(1.0))  # a NumPy scalar is not an ndarray
    t = pb.Tensor("X", np.zeros((2, 3), np.float32))
    assert t.name() == "X" and t.shape() == [2, 3] and t.is_cpu()


def test_tensor_empty_name():
    with pytest.raises(pb.TritonModelException, match="^Tensor name cannot be an empty string.$"):
        pb.Tensor("", np.zeros(1))


@pytest.mark.parametrize("dtype", ["U5", "complex64", "datetime64[s]"])
def test_tensor_unsupported_dtypes(dtype):
    with pytest.raises(pb.TritonModelException, match=r"^NumPy dtype is not supported\.$"):
        pb.Tensor("X", np.zeros(2, dtype=dtype))


def test_tensor_model_exception_is_exception_subclass_without_message_method():
    assert issubclass(pb.TritonModelException, Exception)
    assert not hasattr(pb.TritonModelException("x"), "message")


def test_tensor_non_contiguous_is_copied():
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = pb.Tensor("X", base.T)
    assert t.as_numpy().flags.c_contiguous
    np.testing.assert_array_equal(t.as_numpy(), base.T)


def test_local_bytes_tensor_keeps_stored_array_and_serializes_on_construction():
    arr = np.array([b"ab", "c"], dtype=object)
    t = pb.Tensor("S", arr)
    assert t.as_numpy() is arr  # a locally built tensor returns what it stores, mixed str/bytes unchanged
    assert t._serialized == b"\x02\x00\x00\x00ab\x01\x00\x00\x00c"
    s2 = pb.Tensor("S", np.array([b"xy"], dtype="S2"))
    assert s2.as_numpy().dtype == np.dtype("S2")


def test_received_bytes_are_object_arrays_of_bytes_reshaped():
    t = pb.make_input_tensor("TEXT", np.array([["hello", "héllo"]], dtype=object), 13, gpu=True)
    arr = t.as_numpy()
    assert arr.dtype == object and arr.shape == (1, 2)
    assert arr.tolist() == [[b"hello", "héllo".encode()]]
    assert t.is_cpu()  # BYTES are always on CPU, even when GPU placement is asked for


def test_received_numeric_inputs_are_writeable_copies():
    src = np.arange(4, dtype=np.float32)
    t = pb.make_input_tensor("X", src, 11, gpu=False)
    arr = t.as_numpy()
    assert arr.flags.writeable
    arr[0] = 99
    assert src[0] == 0


def test_triton_dtype_raises_type_error():
    with pytest.raises(TypeError, match="Unable to convert function return value to a Python type"):
        pb.Tensor("X", np.zeros(1)).triton_dtype()


# ----------------------------------------------------------------------------- DLPack


def test_to_dlpack_bytes_raises():
    with pytest.raises(pb.TritonModelException, match="^DLPack does not have support for string tensors.$"):
        pb.Tensor("S", np.array([b"a"], dtype=object)).to_dlpack()


def test_cpu_tensor_dlpack_protocol_roundtrip():
    t = pb.Tensor("X", np.arange(6, dtype=np.int64).reshape(2, 3))
    assert t.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(t), np.arange(6).reshape(2, 3))
    assert type(t.to_dlpack()).__name__ == "PyCapsule"


def test_from_dlpack_rejects_objects_without_protocol():
    with pytest.raises(pb.TritonModelException, match=r"^Provided tensor is not supported\. Tensor must be a DLPack"):
        pb.Tensor.from_dlpack("X", [1, 2, 3])


def test_from_dlpack_empty_name():
    with pytest.raises(pb.TritonModelException, match="Tensor name cannot be an empty string."):
        pb.Tensor.from_dlpack("", pb.Tensor("X", np.zeros(2)))


def test_from_dlpack_numpy_array_is_the_real_trap():
    with pytest.raises(pb.TritonModelException, match="used_dlpack"):
        pb.Tensor.from_dlpack("X", np.arange(4, dtype=np.float32))


def test_from_dlpack_numpy_capsule_is_detected_too():
    with pytest.raises(pb.TritonModelException, match=r"Use pb_utils\.Tensor\(name, ndarray\)"):
        pb.Tensor.from_dlpack("X", np.arange(4, dtype=np.float32).__dlpack__())


def test_from_dlpack_numpy_trap_can_be_downgraded_to_warning():
    pb.configure(numpy_from_dlpack="warn")
    with pytest.warns(RuntimeWarning, match="used_dlpack"):
        t = pb.Tensor.from_dlpack("X", np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(t.as_numpy(), np.arange(4, dtype=np.float32))


def test_from_dlpack_non_contiguous_rejected():
    pb.configure(numpy_from_dlpack="warn")
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    with pytest.raises(pb.TritonModelException, match="^DLPack tensor is not contiguous. Only contiguous"):
        pb.Tensor.from_dlpack("X", arr)


def test_from_dlpack_size_one_dims_exempt_from_stride_check():
    pb.configure(numpy_from_dlpack="warn")
    arr = np.arange(4, dtype=np.float32).reshape(4, 1)[:, :]
    odd = np.lib.stride_tricks.as_strided(arr, shape=(4, 1), strides=(4, 400))
    with pytest.warns(RuntimeWarning):
        t = pb.Tensor.from_dlpack("X", odd)
    assert t.shape() == [4, 1]


def test_from_dlpack_unsupported_dtype():
    pb.configure(numpy_from_dlpack="warn")
    with pytest.raises(pb.TritonModelException, match="not supported by Python backend"):
        pb.Tensor.from_dlpack("X", np.zeros(2, dtype=np.complex64))


def test_from_dlpack_of_pb_tensor_shares_memory():
    src = pb.make_input_tensor("X", np.arange(4, dtype=np.int32), 8, gpu=False)
    out = pb.Tensor.from_dlpack("Y", src)  # a pb Tensor is not NumPy: allowed
    src.as_numpy()[0] = 42
    assert out.as_numpy()[0] == 42 and out.is_cpu() and out.name() == "Y"


def test_as_numpy_on_gpu_tensor_raises():
    t = pb.Tensor.__new__(pb.Tensor)
    t._init("X", 11, [2], "GPU", 0)
    with pytest.raises(pb.TritonModelException, match="^Tensor is stored in GPU and cannot be converted to NumPy.$"):
        t.as_numpy()
    assert not t.is_cpu() and t.__dlpack_device__() == (2, 0)


# ----------------------------------------------------------------------------- pure helpers


def test_serialize_deserialize_bytes():
    assert pb.serialize_byte_tensor(np.array([b"ab", b"c"], dtype=object)) == b"\x02\x00\x00\x00ab\x01\x00\x00\x00c"
    assert pb.serialize_byte_tensor(np.array([], dtype=object)) == ()
    assert pb.serialize_byte_tensor(np.array([1, 2])) is None
    assert pb.serialize_byte_tensor(np.array([7], dtype=object)) == struct.pack("<I", 1) + b"7"
    out = pb.deserialize_bytes_tensor(b"\x02\x00\x00\x00ab\x01\x00\x00\x00c")
    assert out.dtype == object and out.tolist() == [b"ab", b"c"]


def test_dtype_maps():
    assert pb.triton_string_to_numpy("TYPE_BOOL") is bool
    assert pb.triton_string_to_numpy("TYPE_STRING") is np.object_
    with pytest.raises(KeyError):
        pb.triton_string_to_numpy("TYPE_BF16")
    assert pb.triton_to_numpy_type(1) is np.bool_ and pb.triton_to_numpy_type(13) is np.object_
    assert pb.triton_to_numpy_type(14) is None
    assert pb.numpy_to_triton_type(np.float32) == 11
    assert pb.numpy_to_triton_type(np.dtype("int64")) == 9
    assert pb.numpy_to_triton_type(np.bytes_) == 13 and pb.numpy_to_triton_type(np.object_) == 13
    assert pb.numpy_to_triton_type(np.complex64) is None


def test_config_and_tensor_lookups():
    cfg = {"input": [{"name": "A"}], "output": [{"name": "B"}], "model_transaction_policy": {"decoupled": True}}
    assert pb.get_input_config_by_name(cfg, "A") == {"name": "A"}
    assert pb.get_input_config_by_name(cfg, "Z") is None
    assert pb.get_output_config_by_name(cfg, "B") == {"name": "B"}
    assert pb.using_decoupled_model_transaction_policy(cfg) is True
    assert pb.using_decoupled_model_transaction_policy({}) is False
    resp = pb.InferenceResponse([pb.Tensor("B", np.zeros(1))])
    assert pb.get_output_tensor_by_name(resp, "B").name() == "B"
    assert pb.get_output_tensor_by_name(resp, "Z") is None


# ----------------------------------------------------------------------------- errors, responses, requests


def test_triton_error_codes_and_defaults():
    err = pb.TritonError("bad")
    assert err.message() == "bad" and err.code() == pb.TritonError.INTERNAL
    assert [int(getattr(pb.TritonError, n)) for n in (
        "UNKNOWN", "INTERNAL", "NOT_FOUND", "INVALID_ARG", "UNAVAILABLE", "UNSUPPORTED", "ALREADY_EXISTS", "CANCELLED"
    )] == list(range(8))
    assert pb.TritonError("x", pb.TritonError.INVALID_ARG).code() == 3
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb.TritonError("x", 3)  # a plain int is not the pybind enum


def test_inference_response_arguments():
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb.InferenceResponse([np.zeros(2)])
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb.InferenceResponse(output_tensors=[], parameters={"a": 1})  # only from 25.02
    pb.configure(triton_version="25.02")
    assert json.loads(pb.InferenceResponse(output_tensors=[], parameters={"a": 1}).parameters()) == {"a": 1}
    r = pb.InferenceResponse(error=pb.TritonError("x"))
    assert r.has_error() and r.error().message() == "x"
    assert not pb.InferenceResponse().has_error()


def test_bls_request_constructor_rules():
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb.InferenceRequest(model_name="m", inputs=[])  # requested_output_names missing
    with pytest.raises(pb.TritonModelException, match=r"^Expect parameters values to have type bool/int/str, found type <class 'float'>$"):
        pb.InferenceRequest(model_name="m", inputs=[], requested_output_names=[], parameters={"k": 1.5})
    req = pb.InferenceRequest(model_name="m", inputs=[], requested_output_names=["A"], parameters={"k": "v"})
    assert req.parameters() == '{"k": "v"}'
    assert req.requested_output_names() == {"A"} and req.request_id() == "" and req.correlation_id() == 0


def test_bls_outside_execute_is_forbidden():
    req = pb.InferenceRequest(model_name="m", inputs=[], requested_output_names=[])
    with pytest.raises(pb.TritonModelException, match=r"^BLS is only supported during the 'execute' function\.$"):
        req.exec()
    with pytest.raises(pb.TritonModelException, match="BLS is only supported"):
        req.async_exec()


def test_response_sender_state_machine():
    sink = []
    dec = pb.InferenceResponseSender(True, {"Y"}, sink)
    with pytest.raises(pb.TritonModelException, match="^Inference Response object must be provided when the response flags is set to zero.$"):
        dec.send()
    with pytest.raises(pb.TritonModelException, match="Unsupported flag provided"):
        dec.send(pb.InferenceResponse(), flags=5)
    dec.send(pb.InferenceResponse([pb.Tensor("Y", np.zeros(1)), pb.Tensor("Z", np.zeros(1))]))
    assert [t.name() for t in sink[0][0].output_tensors()] == ["Y"]  # unrequested outputs pruned
    dec.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    with pytest.raises(pb.TritonModelException, match="^Unable to send response. Response sender has been closed.$"):
        dec.send(pb.InferenceResponse())
    non = pb.InferenceResponseSender(False, set(), [])
    with pytest.raises(pb.TritonModelException, match="cannot send complete final before sending a response"):
        non.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    non.send(pb.InferenceResponse())
    with pytest.raises(pb.TritonModelException, match="cannot send more than one response"):
        non.send(pb.InferenceResponse())


def test_model_config_auto_complete_semantics():
    base = {"name": "m", "max_batch_size": 8, "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [2]}], "output": []}
    mc = pb.ModelConfig(json.dumps(base))
    with pytest.raises(ValueError, match=r"^configuration specified max_batch_size 8, but in auto-complete-config function for model 'm' specified max_batch_size 4$"):
        mc.set_max_batch_size(4)
    mc.set_max_batch_size(16)
    with pytest.raises(ValueError, match="configuration expects datatype TYPE_FP32 for input 'A', model provides TYPE_INT32"):
        mc.add_input({"name": "A", "data_type": "TYPE_INT32", "dims": [2]})
    with pytest.raises(ValueError, match=r"the model expects dims \[3\] but the model configuration specifies dims \[2\]"):
        mc.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [3]})
    with pytest.raises(ValueError, match="contains property other than 'name', 'data_type', 'dims' and 'optional'"):
        mc.add_input({"name": "B", "data_type": "TYPE_FP32", "dims": [3], "format": "x"})
    with pytest.raises(ValueError, match="is missing 'dims' property"):
        mc.add_output({"name": "O", "data_type": "TYPE_FP32"})
    mc.add_output({"name": "O", "data_type": "TYPE_FP32", "dims": [1]})
    mc.set_dynamic_batching()
    mc.set_model_transaction_policy({"decoupled": True})
    with pytest.raises(ValueError, match="trying to change decoupled property"):
        mc.set_model_transaction_policy({"decoupled": False})
    d = mc.as_dict()
    assert d["max_batch_size"] == 16 and d["dynamic_batching"] == {} and d["output"][0]["name"] == "O"
    seq = pb.ModelConfig(json.dumps({**base, "sequence_batching": {}}))
    with pytest.raises(ValueError, match="scheduling_choice as 'sequence_batching'"):
        seq.set_dynamic_batching()


def test_logger_and_metrics(caplog):
    import logging  # noqa: PLC0415

    with caplog.at_level(logging.DEBUG, logger="triton_python_backend_utils"):
        pb.Logger.log_info("hello")
        pb.Logger.log("v", pb.Logger.VERBOSE)
        pb.Logger.log_error("e")
    assert [r.levelname for r in caplog.records] == ["INFO", "DEBUG", "ERROR"]
    assert "hello" in caplog.records[0].getMessage()
    fam = pb.MetricFamily("requests", "count", pb.MetricFamily.COUNTER)
    m = fam.Metric(labels={"model": "x"})
    m.increment(2)
    assert m.value() == 2
    with pytest.raises(pb.TritonModelException):
        m.set(3)
    with pytest.raises(pb.TritonModelException):
        pb.MetricFamily("h", "h", pb.MetricFamily.HISTOGRAM).Metric()
