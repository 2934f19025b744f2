"""BPE on a real GPU (marked ``gpu``: skipped without one): the same ids, rows and bytes as the CPU kernels, and
the launch discipline. The CUDA simulator checks the same in CI (tests/sim/test_bpe_sim.py)."""

from __future__ import annotations

import bpe_oracles as O
import numpy as np
import pytest

from triton_textops.ops.bpe.tokenizer import BPETokenizer
from triton_textops.ops.core import kernels as K

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "qwen2"])
def test_bpe_gpu_equals_cpu(name: str) -> None:
    cupy = pytest.importorskip("cupy")
    path = O.DATA / O.RANK_FILES[name]
    cpu = BPETokenizer.from_tiktoken(path, encoding=name, device="cpu")
    gpu = BPETokenizer.from_tiktoken(path, encoding=name, device="cuda")
    texts = O.BPE_ADVERSARIAL + O.random_texts(5, 300) + O.every_code_point_texts(1 << 14)
    a = cpu.encode(texts, allowed_special="all")
    b = gpu.encode(texts, allowed_special="all", gpu_min_batch=0)
    assert isinstance(b.ids, cupy.ndarray)
    assert np.array_equal(a.ids, b.ids.get()) and np.array_equal(a.offsets, b.offsets.get())
    K.COUNTS.clear()
    rows = gpu.encode_rows(texts, max_length=64, padding_side="left", gpu_min_batch=0)
    assert (K.COUNTS["launch"], K.COUNTS["d2h"]) == (1, 1)
    ref = cpu.encode_rows(texts, max_length=64, padding_side="left")
    assert np.array_equal(rows.input_ids.get(), ref.input_ids)
    assert gpu.decode(b.ids, b.offsets, errors=None) == cpu.decode(a.ids, a.offsets, errors=None)


def test_file_limits_on_the_gpu_as_hf(tmp_path: O.Path) -> None:
    """A tokenizer.json's truncation and padding on CuPy arrays (the compaction kernel): HF's encode_batch ids, in
    two launches and one device-to-host copy."""
    cupy = pytest.importorskip("cupy")
    pytest.importorskip("tokenizers")
    for gpu, specials, expected, case in O.limit_cases(tmp_path, "cuda"):
        K.COUNTS.clear()
        got = gpu.encode(O.LIMIT_TEXTS, add_special_tokens=specials, gpu_min_batch=0)
        assert (K.COUNTS["launch_cuda"], K.COUNTS["d2h"]) == (2, 1), (case, K.COUNTS)
        assert isinstance(got.ids, cupy.ndarray) and isinstance(got.offsets, cupy.ndarray)
        assert got.tolist() == expected, (case, specials)
