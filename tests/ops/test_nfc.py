"""NFC device functions (ops.core.unorm) against HF's NFC (``tokenizers.normalizers.NFC``), the oracle: every code
point alone and in contexts, Hangul, runs of marks in and out of order, generated strings, linear time, the
does-not-fit path and the quick check."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_textops.ops.core import kernels as K
from triton_textops.ops.core import unorm as N
from triton_textops.ops.core.batch import pack_host
from triton_textops.ops.core.unorm import nfc_normalize, nfc_quick, nfc_write

tokenizers = pytest.importorskip("tokenizers")
ORACLE = tokenizers.normalizers.NFC().normalize_str
SEP = " "  # a starter that composes with nothing (checked below): texts joined by it normalize independently
CPS = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and cp != ord(SEP)]


def _quick_cpu(share, shares, n, data, offs, res, tabs):
    for t in range(share, n, shares):
        res[t] = nfc_quick(data, offs[t], offs[t + 1], tabs)


def _write_cpu(share, shares, n, data, lo, hi, out, o, cap, res, tabs):
    res[0] = nfc_write(data, lo, hi, out, o, cap, tabs)


QUICK = K.cpu(_quick_cpu)
WRITE = K.cpu(_write_cpu)


def quick_rows(texts: list[str]) -> np.ndarray:
    """nfc_quick of each text."""
    data, offs = pack_host(texts)
    res = np.zeros(len(texts), dtype=np.bool_)
    QUICK(0, 1, len(texts), data, offs, res, N.form_tables("nfc", "cpu"))
    return res


def _info() -> np.ndarray:
    """The packed table entry of every code point."""
    idx, info = N.table_tuple(N.load_tables())[:2]
    return info[(idx.astype(np.int64)[:, None] << N.BLOCK_SHIFT) + np.arange(1 << N.BLOCK_SHIFT)].reshape(-1)


INFO = _info()


def nfc(texts: list[str], quick: bool = False) -> list[str]:
    return [b.decode() for b in nfc_normalize(texts, quick=quick)]


def assert_same_joined(texts: list[str]) -> str:
    """The kernel on the texts joined by SEP (one long text) equals the oracle; on a difference, name the texts.
    Returns the oracle's output."""
    joined = SEP.join(texts)
    got = nfc_normalize([joined], quick=False)[0].decode()
    want = ORACLE(joined)
    if got != want:
        bad = [t for t, g, w in zip(texts, got.split(SEP), want.split(SEP)) if g != w]
        pytest.fail(f"{len(bad)} texts differ, e.g. {[[f'U+{ord(c):04X}' for c in t] for t in bad[:5]]}")
    return want


def test_tables_from_the_oracle_version():
    tables = N.load_tables()
    assert str(tables["tokenizers_version"]) == tokenizers.__version__, "regenerate: scripts/gen_unorm_tables.py"
    keys = tables["comp_keys"]
    assert not np.isin(ord(SEP), np.concatenate([keys >> N.CP_BITS, keys & N.CP_MASK]))  # SEP never composes
    assert np.all(np.diff(keys) > 0)


def test_every_code_point_alone():
    texts = [chr(cp) for cp in CPS]
    want = assert_same_joined(texts).split(SEP)
    changed = [i for i, (t, w) in enumerate(zip(texts, want)) if t != w]
    # the quick check: False only where NFC leaves the code point as it is
    q = quick_rows(texts)
    assert q[changed].all()
    assert (~q).sum() > 1_000_000  # and not True everywhere: almost no code point is flagged
    # NFC_EXPAND bounds every code point's output, and is reached
    assert max(len(want[i].encode()) / len(texts[i].encode()) for i in changed) == N.NFC_EXPAND == 3


def _context_cps() -> list[int]:
    """Every code point of each 128-code-point block that holds a class, a decomposition or a flag, every 7th
    Hangul syllable and every 13th other code point (the generator runs the same contexts on all of them; the
    oracle takes ~0.4 us a character, too slow for all of them in each context here)."""
    cps = np.array(CPS)
    busy = INFO.reshape(-1, 1 << N.BLOCK_SHIFT).any(axis=1)
    keep = busy[cps >> N.BLOCK_SHIFT] | (cps % 13 == 0) | ((0xAC00 <= cps) & (cps < 0xD7A4) & (cps % 7 == 0))
    return cps[keep].tolist()


CONTEXT_CPS = _context_cps()


@pytest.mark.parametrize("context", ["a{}\u0301", "\u1100{}", "\uac00{}", "{}\u0301\u0316"])
def test_code_points_in_context(context):
    assert len(CONTEXT_CPS) > 100_000
    assert_same_joined([context.format(chr(cp)) for cp in CONTEXT_CPS])


def test_hangul():
    rng = random.Random(1)
    L, V, T = range(0x1100, 0x1114), range(0x1160, 0x1177), range(0x11A6, 0x11C4)
    texts = [chr(a) + chr(b) for a in L for b in V]
    texts += [chr(rng.choice(L)) + chr(rng.choice(V)) + chr(rng.choice(T)) for _ in range(3000)]
    texts += [chr(0xAC00 + 28 * rng.randrange(399)) + chr(t) + "\u0301" for t in T for _ in range(20)]
    texts += [chr(0xAC00 + rng.randrange(11172)) + chr(rng.choice(T)) for _ in range(2000)]
    assert_same_joined(texts)


def _marks() -> list[int]:
    """Marks of distinct classes (HF's NFD keeps them; class measured in the tables), lowest code point each."""
    cc = INFO & N.CCC_MASK
    stable = (INFO >> N.DLEN_SHIFT) & N.DLEN_MASK == 0
    return [int(np.nonzero(stable & (cc == c))[0][0]) for c in np.unique(cc[stable & (cc > 0)])]


MARKS = _marks()
# composable marks and bases, some of them decomposing (U+1E09 = c cedilla acute, U+01D5 = U diaeresis macron)
SECONDS = [0x0300, 0x0301, 0x0302, 0x0303, 0x0308, 0x0323, 0x0327, 0x0328, 0x0345, 0x0338, 0x0B3E, 0x0CD5, 0x3099]
BASES = [ord(c) for c in "aAeEoOuUcCsS<=>"] + [0x00E9, 0x01D5, 0x1E09, 0x1EA1, 0x03B1, 0x1F00, 0x0B47, 0x304B, 0x0958]


def test_runs_of_marks_in_both_orders():
    assert len(MARKS) >= 50
    texts = ["a" + chr(p) + chr(q) for p in MARKS for q in MARKS]
    texts += ["e" + "".join(map(chr, MARKS)), "e" + "".join(map(chr, MARKS[::-1])), "".join(map(chr, MARKS[::-1]))]
    rng = random.Random(2)
    pool = MARKS + SECONDS
    for _ in range(3000):
        run = [rng.choice(pool) for _ in range(rng.randint(2, 12))]
        base = chr(rng.choice(BASES)) if rng.random() < 0.9 else ""
        texts += [base + "".join(map(chr, run)), base + "".join(map(chr, run[::-1]))]
    assert_same_joined(texts)


INTERESTING = [chr(c) for c in MARKS + SECONDS + BASES] + list("xyz \u1100\u1161\u11a8\uac00\uac01\u0f73\u0344\u0340")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(alphabet=st.sampled_from(INTERESTING), max_size=30), min_size=1, max_size=8))
def test_hypothesis_against_oracle(texts):
    want = [ORACLE(t) for t in texts]
    assert nfc(texts) == want
    assert nfc(texts, quick=True) == want
    q = quick_rows(texts)
    assert all(f or w == t for t, f, w in zip(texts, q, want))


def test_quick_check_on_text_nfc_keeps():
    """Common text NFC leaves as it is passes the quick check (no call of nfc_write needed)."""
    keep = ["plain ASCII, with <tags> & =signs!", "café naïve Ærø façade", "日本語のテキスト", "한국어 텍스트입니다",
            "Привет, мир", "مرحبا بالعالم", "Tiếng Việt có dấu", "\u00e9\u0316", "ὅτι"]
    for t in keep:
        assert ORACLE(t) == t
    assert not quick_rows(keep).any()
    change = ["e\u0301", "\u1100\u1161", "a\u0301\u0316", "\u0958", "\u212b", "\uac00\u11a8"]
    assert all(ORACLE(t) != t for t in change)
    assert quick_rows(change).all()


def _marks_run(size: int) -> str:
    """``size`` bytes of marks in all classes, in reverse canonical order (the worst case: one walk per class)."""
    unit = "".join(map(chr, MARKS[::-1]))
    return "a" + unit * (size // len(unit.encode()))


def test_long_run_of_marks_is_exact():
    small = _marks_run(100_000)
    assert nfc([small]) == [ORACLE(small)]


@pytest.mark.timing
def test_long_run_of_marks_is_linear():
    """1 MB of marks takes about 10x the time of 100 KB, not 100x (ratio, never absolute times)."""
    small, big = _marks_run(100_000), _marks_run(1_000_000)

    def best(s: str) -> float:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            nfc_normalize([s], quick=False)
            times.append(time.perf_counter() - t0)
        return min(times)

    ratio = best(big) / best(small)
    assert ratio < 30, f"1 MB of marks took {ratio:.1f}x the time of 100 KB"


@pytest.mark.parametrize("text", ["e\u0301", "\u0958", "\U0001d160x", "\u1100\u1161\u11a8", "a\u0316\u0301\u0301",
                                  "\u0301\u0316", "xyz", "\uac00\u0301\u11a8"])
def test_does_not_fit(text):
    """-1 exactly when the output does not fit in out[o:cap], and nothing written outside out[o:cap]."""
    want = ORACLE(text).encode()
    data = np.frombuffer(text.encode(), dtype=np.uint8)
    tabs = N.form_tables("nfc", "cpu")
    for room in range(len(want) + 2):
        out = np.full(len(want) + 12, 0xAA, dtype=np.uint8)
        res = np.zeros(1, dtype=np.int64)
        WRITE(0, 1, 1, data, 0, len(data), out, 5, 5 + room, res, tabs)
        assert res[0] == (-1 if room < len(want) else 5 + len(want))
        assert (out[:5] == 0xAA).all() and (out[5 + room :] == 0xAA).all()
        if res[0] >= 0:
            assert out[5 : res[0]].tobytes() == want
    assert nfc_normalize([text, text], caps=[len(want) - 1, len(want)]) == [None, want]
    # a span outside the data, or a cap past the array: -1 / clamped, never an access outside
    WRITE(0, 1, 1, data, 0, len(data) + 1, out, 0, len(out), res, tabs)
    assert res[0] == -1
    WRITE(0, 1, 1, data, 0, len(data), out, 0, 10**9, res, tabs)
    assert out[: res[0]].tobytes() == want
