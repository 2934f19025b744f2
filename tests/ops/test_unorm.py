"""The Unicode forms NFD, NFKC, NFKD and the Lowercase / StripAccents maps of ops.core.unorm against HF's
normalizers (``tokenizers.normalizers.NFKC()`` ...), the oracle: every code point alone and in contexts, the
expansion bound (reached), the quick check, compatibility characters, Hangul, marks out of order, Turkish İ, Greek
sigma. (NFC, the same device functions on its own tables: tests/ops/test_nfc.py.)"""

from __future__ import annotations

import random

import numpy as np
import pytest

from triton_textops.ops.core import unorm as N
from triton_textops.ops.core.unorm import map_normalize, nfc_normalize

tokenizers = pytest.importorskip("tokenizers")
NZ = tokenizers.normalizers
ORACLES = {"nfc": NZ.NFC(), "nfd": NZ.NFD(), "nfkc": NZ.NFKC(), "nfkd": NZ.NFKD()}
MAP_ORACLES = {"lower": NZ.Lowercase(), "strip": NZ.StripAccents()}
SEP = "\U000f0000"  # a private-use starter no form or map changes or produces: joined texts normalize independently
CPS = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and cp != ord(SEP)]
HARD = ["ﬁﬂﬀﬃ ＡＢＣ１２３ ㎒㎏㍻ \ufdfa ½ ⁴ ℌ Ⅻ ① ǅ", "İstanbul ıI ΣΑΣ ὈΔΥΣΣΕΎΣ ς ẞ ß", "한국어 \u1100\u1161\u11a8 \uac00\u11a8",
        "a\u0316\u0301\u0300\u05b0 e\u0301\u0316 \u1e0b\u0323 q\u0307\u0323 \u0344\u0345", "👨‍👩‍👧 👍🏽 🏳️‍🌈",
        "\u00c5\u212b\u0041\u030a Ω Ω", "ﾊﾝｶｸ ｶﾞ ㌀ ﷺ ﷻ", ""]


def _joined(fn, texts: list[str]) -> list[bytes]:
    return [s.encode() for s in fn(SEP.join(texts)).split(SEP)]


def _check(form: str, texts: list[str]) -> None:
    want = _joined(ORACLES[form].normalize_str, texts)
    for quick in (False, True):
        got = nfc_normalize(texts, form=form, quick=quick)
        bad = [t for t, g, w in zip(texts, got, want) if g != w]
        assert not bad, (form, quick, [[f"U+{ord(c):04X}" for c in t] for t in bad[:5]])


@pytest.mark.parametrize("form", ["nfd", "nfkc", "nfkd"])
def test_form_every_code_point_alone_and_in_context(form: str) -> None:
    texts = [chr(cp) for cp in CPS]
    _check(form, texts)
    want = _joined(ORACLES[form].normalize_str, texts)
    changed = [i for i, (t, w) in enumerate(zip(texts, want)) if t.encode() != w]
    assert max(len(want[i]) / len(texts[i].encode()) for i in changed) == N.form_expansion(form)  # reached
    rng = random.Random(form)
    some = [cp for cp in CPS if rng.random() < 0.15 or cp < 0x3400]
    _check(form, [f"a{chr(c)}\u0301" for c in some] + [f"{chr(c)}\u0316\u0301" for c in some]
           + [f"\u1100{chr(c)}" for c in some[::3]])
    _check(form, HARD)


def test_expansions() -> None:
    assert [N.form_expansion(f) for f in N.FORMS] == [3, 3, 11, 11]  # U+FDFA: 3 bytes -> 33
    assert N.packaged_map_expansion("lower") == 2 and N.packaged_map_expansion("strip") == 1


@pytest.mark.parametrize("form", ["nfd", "nfkc", "nfkd"])
def test_form_marks_out_of_order_and_hangul(form: str) -> None:
    rng = random.Random(3)
    marks = [0x0301, 0x0316, 0x0323, 0x0300, 0x05B0, 0x0345, 0x0344, 0x302A, 0x0F72, 0x1DCE, 0x0E38, 0x0BCD]
    bases = [ord(c) for c in "aeoAEOqsʒ"] + [0x1100, 0xAC00, 0xAC01, 0x0B47, 0x0DD9, 0x1E0B, 0xFB01, 0x3300]
    texts = ["".join(chr(rng.choice(bases if k == 0 or rng.random() < 0.2 else marks)) for k in range(rng.randint(1, 24)))
             for _ in range(5000)]
    texts += [chr(0xAC00 + rng.randrange(11172)) + chr(rng.randrange(0x1160, 0x11C4)) for _ in range(3000)]
    _check(form, texts)


def test_forms_do_not_fit() -> None:
    text = "\ufdfa" * 3
    want = ORACLES["nfkc"].normalize_str(text).encode()
    assert nfc_normalize([text, text], form="nfkc", caps=[len(want) - 1, len(want)]) == [None, want]


@pytest.mark.parametrize("name", ["lower", "strip"])
def test_maps_every_code_point_alone_and_in_context(name: str) -> None:
    fn = MAP_ORACLES[name].normalize_str
    for texts in ([chr(cp) for cp in CPS], [f"A{chr(c)}\u03a3" for c in CPS[::5]], [f"{chr(c)}\u0301" for c in CPS[::7]],
                  HARD):
        want = _joined(fn, texts)
        got = map_normalize(texts, name)
        bad = [t for t, g, w in zip(texts, got, want) if g != w]
        assert not bad, [[f"U+{ord(c):04X}" for c in t] for t in bad[:5]]
    assert map_normalize(["İ"], "lower") == ["i\u0307".encode()]


def test_tables_layout() -> None:
    arrays = N.load_tables()
    for form in N.FORMS:
        idx, info, pool, keys, vals = N.table_tuple(arrays, form)
        assert idx.shape == (0x110000 >> N.BLOCK_SHIFT,) and int(idx.max()) < info.shape[0] >> N.BLOCK_SHIFT
        assert info.shape[0] % (1 << N.BLOCK_SHIFT) == 0 and int(info.min()) >= 0
        off = (info.astype(np.int64) >> N.DOFF_SHIFT) & N.DOFF_MASK
        ln = (info.astype(np.int64) >> N.DLEN_SHIFT) & N.DLEN_MASK
        assert int((off + ln).max()) <= pool.shape[0]
        assert (vals[0] < 0) == (form not in N.COMPOSING)
    with pytest.raises(ValueError, match="unknown normalization form"):
        N.table_tuple(arrays, "nfx")


@pytest.mark.parametrize("damage", ["block", "decomposition", "pool code point", "pairs", "map pool", "map block"])
def test_damaged_tables_are_refused_before_a_kernel_reads_them(damage: str) -> None:
    tables = dict(N.load_tables())
    assert N.check_tables(dict(tables)) is not None  # the packaged ones pass

    def edit(name: str, at: int, value: int) -> None:
        arr = tables[name].copy()
        arr[at] = value
        tables[name] = arr

    if damage == "block":
        edit("nfc_idx", 3, tables["nfc_info"].shape[0] >> N.BLOCK_SHIFT)
    elif damage == "decomposition":
        at = int(np.nonzero((tables["nfkd_info"] >> N.DLEN_SHIFT) & N.DLEN_MASK)[0][0])
        edit("nfkd_info", at, int(tables["nfkd_info"][at]) | (N.DOFF_MASK << N.DOFF_SHIFT))
    elif damage == "pool code point":
        edit("nfd_pool", 0, (int(tables["nfd_pool"][0]) & ~N.CP_MASK) | 0x110000)
    elif damage == "pairs":
        edit("comp_keys", 1, int(tables["comp_keys"][0]))
    elif damage == "map pool":
        edit("lower_map", int(np.nonzero(tables["lower_map"] <= -2)[0][0]), -2 - tables["map_pool"].shape[0])
    else:
        edit("strip_idx", 0, -1)
    with pytest.raises(ValueError, match="unorm tables"):
        N.check_tables(tables)
