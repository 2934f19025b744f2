"""GPU placement and DLPack with CuPy (skipped without CuPy and a CUDA device)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from triton_textops.testing import pb_utils as pb

MODELS = Path(__file__).parent / "models"

pytestmark = pytest.mark.gpu


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


def test_gpu_placement_when_force_cpu_only_is_no(triton_model, cp):
    h = triton_model(MODELS / "gpu_scale", placement="gpu")
    out = h.infer({"X": np.array([[1, 2, 3]], np.float32)})
    assert out["WHERE"].tolist() == [[b"gpu"]]
    np.testing.assert_array_equal(out["Y"], [[2, 4, 6]])
    assert isinstance(out["Y"], np.ndarray)  # what a client receives


def test_force_cpu_only_default_keeps_inputs_on_cpu(triton_model, cp):
    h = triton_model(MODELS / "add_sub", placement="gpu")  # no FORCE_CPU_ONLY_INPUT_TENSORS: default "yes"
    req = h.make_request({"INPUT0": np.ones(4, np.float32), "INPUT1": cp.ones(4, dtype=cp.float32)})
    assert all(t.is_cpu() for t in req.inputs())
    out = h.infer({"INPUT0": np.ones(4, np.float32), "INPUT1": cp.ones(4, dtype=cp.float32)})
    np.testing.assert_array_equal(out["OUTPUT0"], [2, 2, 2, 2])


def test_bytes_stay_on_cpu_with_gpu_placement(triton_model, cp):
    h = triton_model(MODELS / "bytes_echo", placement="gpu")
    assert h.infer({"TEXT": [["a"]]})["KINDS"].tolist() == [[b"bytes|True"]]


def test_mixed_placement_is_seeded_per_tensor(triton_model, cp):
    def run(seed):
        h = triton_model(MODELS / "gpu_scale", placement="mixed", seed=seed)
        return [h.infer({"X": np.ones((1, 2), np.float32)})["WHERE"][0, 0] for _ in range(16)]

    first = run(3)
    assert set(first) == {b"cpu", b"gpu"}
    assert run(3) == first


def test_gpu_tensor_traps(cp):
    arr = cp.arange(6, dtype=cp.float32).reshape(2, 3)
    t = pb.Tensor.from_dlpack("X", arr)
    assert not t.is_cpu() and t.shape() == [2, 3]
    assert t.__dlpack_device__() == (2, arr.device.id)
    with pytest.raises(pb.TritonModelException, match="Tensor is stored in GPU and cannot be converted to NumPy."):
        t.as_numpy()
    back = cp.from_dlpack(t)
    assert bool((back == arr).all())
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        pb.Tensor("X", arr)  # the constructor takes NumPy only
    with pytest.raises(pb.TritonModelException, match="DLPack tensor is not contiguous"):
        pb.Tensor.from_dlpack("X", arr[:, ::2])
    capsule_tensor = pb.Tensor.from_dlpack("Y", cp.ones(3, dtype=cp.int32).toDlpack())
    assert not capsule_tensor.is_cpu()


def test_received_gpu_input_exports_dlpack(cp):
    t = pb.make_input_tensor("X", np.arange(4, dtype=np.int64), 9, gpu=True)
    assert not t.is_cpu()
    assert bool((cp.from_dlpack(t) == cp.arange(4)).all())


def test_bls_preferred_memory_gpu(triton_model, tmp_path, cp):
    mdir = tmp_path / "caller"
    (mdir / "1").mkdir(parents=True)
    (mdir / "config.pbtxt").write_text(
        'backend: "python"\ninput [{ name: "A" data_type: TYPE_FP32 dims: [4] }]\n'
        'output [{ name: "WHERE" data_type: TYPE_STRING dims: [1] }]\n'
    )
    (mdir / "1" / "model.py").write_text(
        "import numpy as np\n"
        "import triton_python_backend_utils as pb_utils\n"
        "class TritonPythonModel:\n"
        "    def execute(self, requests):\n"
        "        out = []\n"
        "        for r in requests:\n"
        "            a = pb_utils.get_input_tensor_by_name(r, 'A').as_numpy()\n"
        "            req = pb_utils.InferenceRequest(model_name='add_sub', requested_output_names=['OUTPUT0'],\n"
        "                inputs=[pb_utils.Tensor('INPUT0', a), pb_utils.Tensor('INPUT1', a)],\n"
        "                preferred_memory=pb_utils.PreferredMemory(pb_utils.TRITONSERVER_MEMORY_GPU, 0))\n"
        "            t = req.exec().output_tensors()[0]\n"
        "            w = 'cpu' if t.is_cpu() else 'gpu'\n"
        "            out.append(pb_utils.InferenceResponse([pb_utils.Tensor('WHERE', np.array([w], dtype=object))]))\n"
        "        return out\n"
    )
    triton_model(MODELS / "add_sub")
    h = triton_model(mdir)
    assert h.infer({"A": np.ones(4, np.float32)})["WHERE"].tolist() == [b"gpu"]
