"""The NFC kernel's GPU entry point (numba.cuda.jit, run by the CUDA simulator) gives exactly the CPU entry's
bytes on a mixed batch: marks in and out of order, compositions, Hangul, expansions, ASCII, a text that does not
fit its room and an empty one."""

from __future__ import annotations

import pytest

from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.unorm import nfc_normalize

TEXTS = ["plain ascii", "", "e\u0301 a\u0316\u0301\u0301 \u212b", "\u1100\u1161\u11a8 \uac00\u11a8 \ud55c\uad6d\uc5b4",
         "\u0958\U0001d160x", "\u0301\u0316 x\u0345\u0313\u0301", "caf\u00e9 \u1ea1\u0302 \u0b47\u0b3e", "<\u0338=\u0338",
         "\u05e9\u05bc\u05c1 \u0f73\u0344"]


@pytest.mark.parametrize("quick", [False, True])
def test_nfc_gpu_equals_cpu(quick):
    assert K.SIMULATOR
    caps = [3 * len(t.encode()) for t in TEXTS]
    caps[2] = 3  # does not fit: None on both
    cpu = nfc_normalize(TEXTS, "cpu", quick=quick, caps=caps)
    gpu = nfc_normalize(TEXTS, "cuda", quick=quick, caps=caps)
    assert gpu == cpu
    assert cpu[2] is None and cpu[1] == b"" and cpu[0] == b"plain ascii"
    assert cpu[3] == "\uac01 \uac01 \ud55c\uad6d\uc5b4".encode()
