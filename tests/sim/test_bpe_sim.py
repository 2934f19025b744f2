"""The BPE GPU kernels in the CUDA simulator: the same ids, rows and bytes as the CPU kernels, bit for bit, and
the launch discipline (fixed rows: one launch, one device-to-host copy)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import bpe_oracles as O  # noqa: E402

from triton_textops.ops import kernels as K  # noqa: E402
from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: E402

# the simulator runs device code as Python on NumPy scalars: the BPE hashes' uint64 products wrap as on the GPU,
# with a warning
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in scalar:RuntimeWarning")

TEXTS = O.BPE_ADVERSARIAL[:12] + O.random_texts(3, 12) + ["a" * 120 + "é" * 30]  # > SHORT: the heap path


@pytest.fixture(scope="module", params=["cl100k_base", "o200k_base"])
def pair(request: pytest.FixtureRequest) -> tuple[BPETokenizer, BPETokenizer]:
    path = O.DATA / O.RANK_FILES[request.param]
    return (BPETokenizer.from_tiktoken(path, encoding=request.param, device="cpu"),
            BPETokenizer.from_tiktoken(path, encoding=request.param, device="cuda"))


def test_encode_gpu_equals_cpu(pair: tuple[BPETokenizer, BPETokenizer]) -> None:
    cpu, gpu = pair
    a = cpu.encode(TEXTS, allowed_special="all")
    b = gpu.encode(TEXTS, allowed_special="all")
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets)
    assert gpu.decode(b.ids, b.offsets) == cpu.decode(a.ids, a.offsets)


def test_rows_one_launch_one_copy(pair: tuple[BPETokenizer, BPETokenizer]) -> None:
    cpu, gpu = pair
    K.COUNTS.clear()
    rows = gpu.encode_rows(TEXTS, max_length=16, padding_side="left", truncation_side="left")
    assert (K.COUNTS["launch"], K.COUNTS["d2h"]) == (1, 1)
    ref = cpu.encode_rows(TEXTS, max_length=16, padding_side="left", truncation_side="left")
    assert np.array_equal(rows.input_ids, ref.input_ids) and np.array_equal(rows.attention_mask, ref.attention_mask)


def test_invalid_utf8_names_the_row(pair: tuple[BPETokenizer, BPETokenizer]) -> None:
    from triton_textops.errors import InputError  # noqa: PLC0415

    with pytest.raises(InputError, match="row 2: text is not valid UTF-8"):
        pair[1].encode([b"a", b"b", b"\xc3("])
