"""The NFC kernel with every array access bounds-checked: any bytes (valid UTF-8 or not: the contract asks for
valid, but a bad caller must still never lead outside the arrays) and any room in the output, including too
little; an index outside an array raises IndexError here."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_textops.ops.core.unorm import nfc_normalize

MARKY = st.text(alphabet=st.sampled_from("ae\u0301\u0316\u0345\u0334\u1100\u1161\u11a8\uac00\u0958\U0001d160\u0344 "),
                max_size=30).map(str.encode)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=40) | MARKY, min_size=1, max_size=5), st.lists(st.integers(0, 120), min_size=5,
                                                                                 max_size=5), st.booleans())
def test_fuzz_never_indexes_out_of_bounds(texts, rooms, quick):
    caps = rooms[: len(texts)]
    out = nfc_normalize(texts, quick=quick, caps=caps)
    assert all(o is None or len(o) <= c for o, c in zip(out, caps))
    assert all(o is not None for o in nfc_normalize(texts, quick=quick))  # NFC_EXPAND per byte always fits
