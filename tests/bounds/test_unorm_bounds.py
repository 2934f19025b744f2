"""The Unicode forms and maps (ops.core.unorm) and the BPE normalizer program with every array access
bounds-checked: any bytes and any room in the output, including too little; an index outside an array raises
IndexError here."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[1]))
import bpe_oracles as O  # noqa: E402

from triton_textops.ops.core.unorm import map_normalize, nfc_normalize  # noqa: E402

HARD = st.text(alphabet=st.sampled_from("aA \u0301\u0316\u1100\u1161\uac00İΣẞﬁ㎒\ufdfa½\U0001d160\u0344Ǆ"),
               max_size=30).map(str.encode)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=40) | HARD, min_size=1, max_size=5),
       st.lists(st.integers(0, 200), min_size=5, max_size=5), st.sampled_from(["nfd", "nfkc", "nfkd"]))
def test_forms_never_index_out_of_bounds(texts, rooms, form):
    caps = rooms[: len(texts)]
    out = nfc_normalize(texts, form=form, caps=caps)
    assert all(o is None or len(o) <= c for o, c in zip(out, caps))
    assert all(o is not None for o in nfc_normalize(texts, form=form))  # the form's expansion always fits


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=40) | HARD, min_size=1, max_size=5), st.sampled_from(["lower", "strip"]))
def test_maps_never_index_out_of_bounds(texts, name):
    assert len(map_normalize(texts, name)) == len(texts)


_TOK: list = []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(HARD.map(lambda b: b.decode()), min_size=1, max_size=6))
def test_bpe_program_never_indexes_out_of_bounds(tmp_path_factory, texts):
    if not _TOK:
        from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: PLC0415

        d = tmp_path_factory.mktemp("unorm_bounds")
        O.write_tokenizer_json(d, "gpt2", family_pattern=O.LLAMA3_PATTERN, normalizer={
            "type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}, {"type": "StripAccents"},
                                                {"type": "Strip", "strip_left": True, "strip_right": True}]})
        _TOK.append(BPETokenizer.from_pretrained(d))
    r = _TOK[0].encode(texts)
    assert len(r.offsets) == len(texts) + 1
