"""The six behaviours of issue #19 where the harness used to differ from tritonserver 2.51, and custom metrics.

Each test model lives in ``tests/testing/models``; ``tests/server/test_parity.py`` runs the same models in the
real server and compares (marker ``server``). The expected values here are the ones the server gave.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from triton_textops.testing import InferError
from triton_textops.testing import pb_utils as pb

MODELS = Path(__file__).parent / "models"
RESCHEDULE_REFUSED = (
    "Failed to release request: Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model "
    "is not configured to handle such a flag."
)


def n32(v: int) -> np.ndarray:
    return np.array([v], np.int32)


# ------------------------------------------------------------------ 1. late decoupled responses


@pytest.mark.parametrize("n", [0, 4, 3000])
def test_responses_sent_after_execute_returned_are_all_delivered(triton_model, n):
    h = triton_model(MODELS / "late_repeat")
    got = h.infer_stream({"N": n32(n)})
    assert [int(r["I"][0]) for r in got] == list(range(n))


def test_decoupled_bls_waits_for_the_callee_final_flag(triton_model):
    triton_model(MODELS / "late_repeat")
    h = triton_model(MODELS / "bls_late_sum")
    out = h.infer({"N": n32(2000)})
    # the server: 2000 data responses + the final empty one; sum 0..1999
    assert (int(out["SUM"][0]), int(out["COUNT"][0]), int(out["EMPTY"][0])) == (1999000, 2001, 1)


def _write_model(root: Path, name: str, config: str, code: str) -> Path:
    d = root / name
    (d / "1").mkdir(parents=True)
    (d / "config.pbtxt").write_text(textwrap.dedent(config))
    (d / "1" / "model.py").write_text(textwrap.dedent(code))
    return d


NO_FINAL_CONFIG = """
    name: "no_final"
    backend: "python"
    model_transaction_policy { decoupled: true }
    input [ { name: "HOLD", data_type: TYPE_FP32, dims: [ 1 ] } ]
    output [ { name: "I", data_type: TYPE_INT32, dims: [ 1 ] } ]
"""
NO_FINAL_CODE = """
    import threading
    import time

    import numpy as np
    import triton_python_backend_utils as pb_utils


    class TritonPythonModel:
        def execute(self, requests):
            for request in requests:
                hold = float(request.inputs()[0].as_numpy()[0])
                sender = request.get_response_sender()

                def work(sender=sender, hold=hold):
                    sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("I", np.array([7], np.int32))]))
                    time.sleep(hold)  # alive, but never sends the final flag

                threading.Thread(target=work).start()
            return None
"""


def test_missing_final_flag_is_a_clear_error_after_the_timeout(tmp_path, triton_model):
    h = triton_model(_write_model(tmp_path, "no_final", NO_FINAL_CONFIG, NO_FINAL_CODE), response_timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(InferError) as info:
        h.infer_stream({"HOLD": np.array([1.5], np.float32)})
    assert 0.3 <= time.monotonic() - t0 < 1.4
    assert str(info.value) == (
        "[pb_utils mock] model 'no_final' sent 1 response(s) but not the final flag "
        "(TRITONSERVER_RESPONSE_COMPLETE_FINAL) within response_timeout=0.3 s after execute returned: the server "
        "would never complete this request"
    )
    # once the model's threads are gone there is nothing to wait for: the error comes at once
    h.response_timeout = 30
    t0 = time.monotonic()
    with pytest.raises(InferError, match="and no thread the model started is still running"):
        h.infer_stream({"HOLD": np.array([0.0], np.float32)})
    assert time.monotonic() - t0 < 5


# ------------------------------------------------------------------ 2. bytes where the stub takes std::string


def test_bls_request_takes_bytes_like_the_stub():
    req = pb.InferenceRequest(
        model_name=b"add_sub", request_id=b"r-1", inputs=[], requested_output_names=[b"OUTPUT0", "OUTPUT1"]
    )
    assert req._model_name == "add_sub" and req.request_id() == "r-1"
    assert req.requested_output_names() == {"OUTPUT0", "OUTPUT1"}
    # python_backend's bls example passes the name straight from a BYTES input: a NumPy bytes scalar
    name = np.array([b"add_sub"], dtype=object).astype(np.bytes_)[0]
    assert pb.InferenceRequest(model_name=name, inputs=[], requested_output_names=["OUTPUT0"])._model_name == "add_sub"
    with pytest.raises(pb.TritonModelException, match="^Correlation ID must be integer or string$"):
        pb.InferenceRequest(model_name="m", inputs=[], requested_output_names=[], correlation_id=1.5)
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb.InferenceRequest(model_name=7, inputs=[], requested_output_names=[])


# ------------------------------------------------------------------ 3. DLPack round trip on CPU


def test_from_dlpack_of_a_tensors_own_capsule_is_identity(triton_model):
    h = triton_model(MODELS / "dlpack_identity")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = h.infer({"X": x})
    np.testing.assert_array_equal(out["Y"], x)
    np.testing.assert_array_equal(out["Z"], x)
    assert out["Y"].dtype == np.float32
    # NumPy's own capsules are still the trap they are in the real server
    with pytest.raises(pb.TritonModelException, match="given NumPy data"):
        pb.Tensor.from_dlpack("Y", np.arange(3, dtype=np.float32).__dlpack__())


# ------------------------------------------------------------------ 4. request rescheduling


def test_iterative_sequence_reexecutes_rescheduled_requests(triton_model):
    h = triton_model(MODELS / "iterative")
    info = json.loads(h.infer({"N": n32(3)}, request_id="rq")["INFO"][0])
    # the sequence batcher gives the request a correlation id and START, then flags 0 on re-execution
    assert info == {"calls": [[1, "rq"], [0, "rq"], [0, "rq"]], "correlation_id_set": True}
    info = json.loads(h.infer({"N": n32(1)})["INFO"][0])
    assert info == {"calls": [[1, ""]], "correlation_id_set": True}
    batch = h.infer_batch([{"N": n32(2)}, {"N": n32(4)}])
    assert [len(json.loads(b["INFO"][0])["calls"]) for b in batch] == [2, 4]


def test_decoupled_iterative_sequence_sends_one_response_per_execution(triton_model):
    h = triton_model(MODELS / "iterative_decoupled")
    got = h.infer_stream({"IN": n32(3)})
    assert [(int(r["OUT"][0]), int(r["FLAGS"][0])) for r in got] == [(2, 1), (1, 0), (0, 0)]


def _without_sequence_batching(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / f"{name}_plain"
    shutil.copytree(MODELS / name, dst)
    cfg = (dst / "config.pbtxt").read_text()
    cfg = cfg.replace(f'name: "{name}"', f'name: "{name}_plain"').replace("sequence_batching { iterative_sequence: true }", "")
    (dst / "config.pbtxt").write_text(cfg)
    return dst


def test_reschedule_without_iterative_sequence_is_refused_like_the_server(tmp_path, triton_model):
    h = triton_model(_without_sequence_batching(tmp_path, "iterative"))
    with pytest.raises(InferError) as info:
        h.infer({"N": n32(2)})
    assert RESCHEDULE_REFUSED in str(info.value) and "never answers" in str(info.value)
    assert h.log[-1] == RESCHEDULE_REFUSED
    d = triton_model(_without_sequence_batching(tmp_path, "iterative_decoupled"))
    responses = d.execute_all([d.make_request({"IN": n32(3)})])[0]
    assert not responses[0].has_error()  # what was sent before is delivered; then the request is dropped
    assert responses[1].has_error() and RESCHEDULE_REFUSED in responses[1].error().message()


def test_reschedule_returning_a_response_breaks_the_contract(tmp_path, triton_model):
    d = _write_model(
        tmp_path,
        "resched_bad",
        """
        name: "resched_bad"
        backend: "python"
        sequence_batching { iterative_sequence: true }
        input [ { name: "X", data_type: TYPE_INT32, dims: [ 1 ] } ]
        output [ { name: "Y", data_type: TYPE_INT32, dims: [ 1 ] } ]
        """,
        """
        import triton_python_backend_utils as pb_utils


        class TritonPythonModel:
            def execute(self, requests):
                for r in requests:
                    r.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                return [pb_utils.InferenceResponse([r.inputs()[0]]) for r in requests]
        """,
    )
    h = triton_model(d)
    with pytest.raises(InferError, match="Expected a None object in the execute function return list for reschduled"):
        h.infer({"X": n32(1)})


# ------------------------------------------------------------------ 5. zero-row numeric inputs


def test_zero_row_numeric_input_is_rejected_with_the_server_message(triton_model):
    h = triton_model(MODELS / "dlpack_identity")
    with pytest.raises(InferError) as info:
        h.infer({"X": np.zeros((0, 3), np.float32)}, request_id="z")
    assert str(info.value) == (
        "[request id: z] input byte size mismatch for input 'X' for model 'dlpack_identity'. Expected 12, got 0"
    )
    assert info.value.code == pb.TritonError.INVALID_ARG
    # [0, 0] passes the byte-size check; python_backend then sees batch size 0 and never answers
    with pytest.raises(InferError, match=r"the batch size of this execute call is 0 .* never answers"):
        h.infer({"X": np.zeros((0, 0), np.float32)})


# ------------------------------------------------------------------ 6. answer through the sender, then raise


def test_send_then_raise_gives_two_responses(triton_model):
    h = triton_model(MODELS / "send_then_raise")
    with pytest.raises(InferError, match="^expected a single response, got 2$"):
        h.infer({"X": n32(3)})
    first, second = h.execute_all([h.make_request({"X": n32(3)})])[0]
    assert first.output_tensors()[0].as_numpy().tolist() == [6]
    msg = second.error().message()
    assert msg.startswith(
        "Failed to process the request(s) for model 'send_then_raise_0', message: AttributeError: "
        "'c_python_backend_utils.InferenceResponseSender' object has no attribute 'close'\n\nAt:\n"
    )
    assert msg.endswith("model.py(17): execute\n")


def test_send_final_then_raise_reports_the_server_crash(triton_model):
    h = triton_model(MODELS / "send_then_raise")
    with pytest.raises(InferError, match="tritonserver 2.51 crashes here"):
        h.infer({"X": n32(-1)})


@pytest.mark.parametrize(
    ("obj", "name"),
    [
        (pb.Tensor("X", np.zeros(1)), "Tensor"),
        (pb.InferenceResponse(), "InferenceResponse"),
        (pb.TritonError("x"), "TritonError"),
        (pb.MetricFamily("f", "d", pb.MetricFamily.GAUGE), "MetricFamily"),
    ],
)
def test_missing_attributes_name_the_pybind_type(obj, name):
    with pytest.raises(AttributeError, match=f"^'c_python_backend_utils.{name}' object has no attribute 'nope'$"):
        obj.nope  # noqa: B018
    assert type(obj).__name__ == name  # pybind11's __name__ has no module


# ------------------------------------------------------------------ metrics

PROBE_VALUES = (0.5, 3.0, 1e-7, 12345678.9)


def probe_metrics_text(name: str = "metrics_probe") -> str:
    """What the server's /metrics shows for metrics_probe after PROBE_VALUES (gauge lines in our order)."""
    return textwrap.dedent(
        f"""\
        # HELP textops_probe_requests Requests seen by the probe
        # TYPE textops_probe_requests counter
        textops_probe_requests{{model="{name}",version="1"}} 4
        # HELP textops_probe_value Last and summed input values
        # TYPE textops_probe_value gauge
        textops_probe_value{{model="{name}",slot="last"}} 12345678.9
        textops_probe_value{{model="{name}",slot="sum"}} 12345682.4000001
        # HELP textops_probe_sizes Input values
        # TYPE textops_probe_sizes histogram
        textops_probe_sizes_count{{model="{name}"}} 4
        textops_probe_sizes_sum{{model="{name}"}} 12345682.4000001
        textops_probe_sizes_bucket{{model="{name}",le="1"}} 2
        textops_probe_sizes_bucket{{model="{name}",le="2.5"}} 2
        textops_probe_sizes_bucket{{model="{name}",le="10"}} 3
        textops_probe_sizes_bucket{{model="{name}",le="+Inf"}} 4
        """
    )


def test_custom_metrics_readable_and_rendered_as_prometheus_text(triton_model):
    h = triton_model(MODELS / "metrics_probe")
    infos = [json.loads(h.infer({"X": np.array([v], np.float64)})["INFO"][0]) for v in PROBE_VALUES]
    assert infos[-1] == {"count": 4.0, "last": 12345678.9, "total": 12345682.400000101}
    assert h.metrics_text() == probe_metrics_text()
    m = h.metrics()
    assert m["textops_probe_requests"] == [{"labels": {"model": "metrics_probe", "version": "1"}, "value": 4.0}]
    assert [r["value"] for r in m["textops_probe_value"]] == [12345678.9, 12345682.400000101]
    (hist,) = m["textops_probe_sizes"]
    assert hist["count"] == 4 and hist["buckets"] == {"1": 2, "2.5": 2, "10": 3, "+Inf": 4}


PREFIX = "Failed to process the request for model 'metric_errors_0', message: TRITONSERVER_METRIC_KIND_"
METRIC_ERRORS = [  # [E] tritonserver 2.51, in the order of metric_errors' OPS
    f"Failed to increment metric value: {PREFIX}COUNTER can only be incremented monotonically by non-negative values.",
    f"Failed to set metric value: {PREFIX}COUNTER does not support Set",
    f"Failed to observe metric value: {PREFIX}COUNTER does not support Observe",
    f"Failed to observe metric value: {PREFIX}GAUGE does not support Observe",
    f"Failed to get metric value: {PREFIX}HISTOGRAM does not support Value",
    f"Failed to increment metric value: {PREFIX}HISTOGRAM does not support Increment",
    f"Failed to set metric value: {PREFIX}HISTOGRAM does not support Set",
    "Failed to create metric. Missing required buckets.",
    "Failed to create metric. Unexpected buckets found.",
    "Failed to create metric. Labels must be a dictionary.",
]


def test_metric_errors_as_the_server_words_them(triton_model):
    h = triton_model(MODELS / "metric_errors")
    for op, message in enumerate(METRIC_ERRORS):
        if op < 7:  # the kind errors warn: the real server may crash on them instead
            with pytest.warns(RuntimeWarning, match="crashes"):
                info = h.infer({"OP": n32(op)})["INFO"][0].decode()
        else:
            info = h.infer({"OP": n32(op)})["INFO"][0].decode()
        assert info == message


def test_metric_rendering_and_lifetime():
    fam = pb.MetricFamily("c", 'say "hi" \\ there', pb.MetricFamily.COUNTER)
    assert pb.metrics_text([fam]) == ""  # no metric yet: the server does not show the family
    m = fam.Metric(labels={"b": 'q"x\\y', "a": "1"})
    m.increment(2)
    # [E] HELP as is, label values escaped, labels sorted
    assert pb.metrics_text([fam]) == '# HELP c say "hi" \\ there\n# TYPE c counter\nc{a="1",b="q\\"x\\\\y"} 2\n'
    other = fam.Metric()
    del m  # a deleted metric disappears from the endpoint
    assert pb.metrics_text([fam]) == '# HELP c say "hi" \\ there\n# TYPE c counter\nc 0\n'
    del fam  # [E] a metric whose family object is gone cannot be used
    with pytest.raises(pb.TritonModelException, match="^Failed to increment metric value: Invalid metric operation as the corresponding 'MetricFamily' has been deleted"):
        other.increment(1)
