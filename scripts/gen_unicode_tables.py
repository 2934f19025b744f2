#!/usr/bin/env python3
"""Generate ``triton_textops/data/unicode_tables.npz`` from the pinned HuggingFace ``tokenizers``.

Why: our tokenizer must give HF's ids exactly, and HF uses its own Unicode tables (Rust crates), which
differ from whatever ``unicodedata`` the running Python has. So the per-code-point tables are *measured*
on the oracle itself, once, and shipped as package data; nothing is rebuilt at import time.

For every code point except surrogates this records:
- the output of ``BertNormalizer`` with ``clean_text`` and ``handle_chinese_chars`` on, for each (lowercase, strip
  accents) pair, as UTF-8 bytes: ``uncased`` (lowercase + strip accents), ``cased`` (neither), ``lower_only``
  and ``strip_only`` (``{name}_len``, ``{name}_off``, ``{name}_pool``);
- ``clean_set`` and ``cjk_set`` (packed bits): the code points ``clean_text`` changes (removes, or makes a space)
  and those ``handle_chinese_chars`` pads with spaces, each measured with every other step off; and, per stored
  table, the code points of ``clean_set`` that the normalizer without ``clean_text`` does not keep as they are
  (``{name}_noclean_cp`` / ``_len`` / ``_pool``: NFD makes U+2000 U+2002). From these the package derives the
  tables of the other 12 option sets (``normalize.derive_table``); this script checks all 16 derived tables against
  the oracle on every code point alone (batched, joined by U+10000), that no code point normalizes to more than one
  pre-token under any of them, and the reordering rule below end to end for the 8 that strip accents;
- its class under ``BertPreTokenizer``: 0 = part of a word, 1 = whitespace (splits), 2 = punctuation
  (isolated), measured on ``"a" + ch + "a"``;
- ``word_char`` (packed bits): ``\\w`` as HF's ``single_word`` added tokens see it, measured with a single-word
  added token on either side of every code point;
- ``{name}_ccc`` (uint8), what a kernel needs to redo the one thing these per-character tables miss: the canonical
  reordering of NFD. A normalizer that strips accents runs NFD on the whole cleaned string, which stably sorts every
  maximal run of combining marks (ccc != 0) by canonical combining class; the marks that survive the Mn filter
  (Mc marks such as U+302E, U+1B44, U+1D165, and marks HF's older data does not call Mn) stay in that order:
  x U+302E U+1B44 -> x U+1B44 U+302E. Encoding, for a code point with a non-empty output: the class HF's NFD gives
  it (0 for starters); for a removed one (output length 0): 255 if it is *transparent* (marks on either side still
  reorder as if it were not there: removed by clean_text before NFD, or a removed mark of class != 0), 0 if it is
  a *barrier* (it ends the run: a removed Mn of class 0 such as U+034F, or one whose decomposition holds a
  starter). The tables that keep accents are all zeros: no NFD, so nothing reorders. The kernel's rule: map each
  code point through the table; an output code point of class 0, or a removed barrier, ends the current run of
  marks; an output mark goes into the run after every mark of class <= its own; a transparent one does nothing.
BERT normalization is otherwise per character (clean/pad/NFD-strip/lowercase of one code point never
depends on its neighbours), so these tables reproduce it on whole texts; the test-suite checks that claim
against the oracle on real prose, adversarial Unicode and generated text.

The classes are measured on the oracle, not read from ``unicodedata``, whose Unicode version differs from
the one in HF's Rust crates (U+07FD, U+0898 have class 220/230 in Python's Unicode 14.0; HF's NFD does not
know them: class 0, and its normalizer keeps them). ``tokenizers.normalizers.NFD`` (the same NFD, without
the Mn filter) runs on every code point; for each one it leaves as is, the candidate class
``unicodedata.combining`` (immutable once assigned, so right for any character HF knows) is checked by
``"x"+c+r`` and ``"x"+r+c`` against reference marks ``r`` of known classes (swaps exactly when the first
has the greater class): one that never swaps has class 0 for HF; a disagreement raises unless HF plainly
lacks the character (class 0, and not in Unicode 3.2). Removed code points are classified on the table's own
normalizer with ``"x" + U+302E + c + U+1B44`` (``"x"+B+A``: transparent, ``"x"+A+B``: barrier), cross-checked
against their NFD. Then, on each derived table, the kernel's rule is run against HF's normalizer of that option set
on every ordered pair of kept marks, every removed code point between two marks, the replacements that contain
marks (U+1D15F -> U+1D158 U+1D165) next to every kept mark, and random mixes; any difference raises. The probes are
batched, separated by a starter, into a few ``normalize_str`` calls.

Usage: python scripts/gen_unicode_tables.py [OUT.npz]   (needs tokenizers==0.22.2, the dev pin)
"""

from __future__ import annotations

import random
import sys
import unicodedata
from pathlib import Path

import numpy as np

N_CP = 0x110000
IDENTITY = -1
PROBE_A, PROBE_B = 0x302E, 0x1B44  # marks the uncased normalizer keeps (Mc), ccc 224 and 9: xAB -> xBA
BASE_REFS = {1: 0x0334, 230: 0x0301, 240: 0x0345}  # old reference marks (Unicode 1.1) of known classes
TRANSPARENT = 255  # *_ccc of a removed code point that does not break a run of combining marks
# batch separators: starters (NFD never reorders across them) that nothing probed here produces; a batch
# uses the first one none of its segments holds (BertNormalizer batches only " ", which it keeps as is)
SEPS = (" ", "\U00010000", "\u4e00")
CHUNK = 1 << 15  # segments per normalize_str call


def _batched(normalize, segments: list[str], seps: tuple[str, ...] = SEPS[:1]) -> list[str]:
    """``[normalize(s) for s in segments]`` in a few calls: segments joined by a separator, split after."""
    out: list[str] = []
    for i in range(0, len(segments), CHUNK):
        part = segments[i : i + CHUNK]
        held = set("".join(part))
        sep = next((s for s in seps if s not in held), None)
        if sep is None:
            raise RuntimeError("batched normalization: every separator occurs in the segments")
        res = normalize(sep.join(part)).split(sep)
        if len(res) != len(part):
            raise RuntimeError("batched normalization: the separators did not survive")
        out.extend(res)
    return out


def _swaps(nfd, pairs: list[tuple[int, int]]) -> list[bool]:
    """For each (p, q) of NFD-stable code points: does HF's NFD turn ``"x"+p+q`` into ``"x"+q+p``?"""
    out: list[bool] = []
    for i in range(0, len(pairs), CHUNK):
        part = pairs[i : i + CHUNK]
        segs = ["x" + chr(p) + chr(q) for p, q in part]
        for (p, q), s, r in zip(part, segs, _batched(nfd, segs, SEPS)):
            if r == s:
                out.append(False)
            elif r == "x" + chr(q) + chr(p):
                out.append(True)
            else:
                raise RuntimeError(f"NFD of x U+{p:04X} U+{q:04X} gave {[f'U+{ord(c):04X}' for c in r]}")
    return out


def _expected_swap(kp: int, kq: int) -> bool:
    """Canonical ordering: q moves before p exactly when both are marks and ccc(p) > ccc(q)."""
    return kp > kq > 0


def _hf_ccc(nfd, hf_nfd: list[str | None]) -> tuple[np.ndarray, list[int]]:
    """HF's canonical combining class of every NFD-stable code point (-1 for the others), measured.

    Candidate: ``unicodedata.combining`` (classes are immutable once assigned, so for a character HF
    knows it is HF's class). Every stable code point is probed against the base references (ccc 1, 230,
    240) in both orders: one that never swaps has class 0 for HF (a class v > 1 swaps ahead of the ccc-1
    reference, v = 1 lets the ccc-230 one pass it). One that swaps is probed against one reference of every
    class and must behave exactly as its candidate says. Returns the classes and the code points where
    HF's class differs from the running Python's (raises unless HF plainly lacks the character: class 0
    there, and the character is not in Unicode 3.2)."""
    ccc = np.full(N_CP, -1, dtype=np.int16)
    stable = [cp for cp in range(N_CP) if hf_nfd[cp] == chr(cp)]
    cand = {cp: unicodedata.combining(chr(cp)) for cp in stable}
    # the references: the base ones must behave as their classes say among themselves
    base = sorted(BASE_REFS.items())
    got = _swaps(nfd, [(p, q) for _, p in base for _, q in base])
    if got != [_expected_swap(kp, kq) for kp, _ in base for kq, _ in base]:
        raise RuntimeError("the base reference marks do not reorder as their classes say")
    # every stable code point against the base references, both orders
    probes = [(cp, r) for cp in stable for _, r in base] + [(r, cp) for cp in stable for _, r in base]
    sw = np.array(_swaps(nfd, probes), dtype=bool)
    n = len(stable)
    moved = sw[: 3 * n].reshape(n, 3).any(axis=1) | sw[3 * n :].reshape(n, 3).any(axis=1)
    marks = [cp for cp, m in zip(stable, moved) if m]
    for cp, m in zip(stable, moved):
        if not m:
            ccc[cp] = 0
    # one reference per candidate class among those: the lowest code point of that class HF reorders, and
    # every one of those code points against all the references (themselves included), both orders
    refs: dict[int, int] = dict(BASE_REFS)
    for cp in marks:
        if cand[cp] and cand[cp] not in refs:
            refs[cand[cp]] = cp
    kr = sorted(refs.items())
    pairs = [(cp, r) for cp in marks for _, r in kr] + [(r, cp) for cp in marks for _, r in kr]
    sw = _swaps(nfd, pairs)
    for i, (p, q) in enumerate(pairs):
        kp = cand[p]
        kq = cand[q]
        if kp == 0 or kq == 0 or sw[i] != _expected_swap(kp, kq):
            raise RuntimeError(
                f"HF's NFD orders U+{p:04X} (candidate ccc {kp}) and U+{q:04X} (candidate ccc {kq}) "
                "against their classes"
            )
    for cp in marks:
        ccc[cp] = cand[cp]
    diff = [cp for cp in stable if ccc[cp] != cand[cp]]
    for cp in diff:
        if ccc[cp] != 0 or unicodedata.ucd_3_2_0.category(chr(cp)) != "Cn":
            raise RuntimeError(f"HF's ccc of U+{cp:04X} is {ccc[cp]}, Python's {cand[cp]}: unexplained")
    return ccc, diff


def _table(normalize) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense per-code-point (length, pool offset or IDENTITY) and the byte pool of replacements."""
    out_len = np.zeros(N_CP, dtype=np.uint8)
    out_off = np.full(N_CP, IDENTITY, dtype=np.int32)
    pool = bytearray()
    seen: dict[bytes, int] = {}
    for cp in range(N_CP):
        if 0xD800 <= cp <= 0xDFFF:
            continue  # not encodable in UTF-8: rejected by validation before the tables are used
        ch = chr(cp)
        res = normalize(ch)
        if res == ch:
            out_len[cp] = len(ch.encode("utf-8"))
            continue
        b = res.encode("utf-8")
        if len(b) > 255:
            raise RuntimeError(f"replacement of U+{cp:04X} longer than 255 bytes")
        out_len[cp] = len(b)
        if b not in seen:
            seen[b] = len(pool)
            pool += b
        out_off[cp] = seen[b]
    return out_len, out_off, np.frombuffer(bytes(pool), dtype=np.uint8)


def _outputs(ln: np.ndarray, off: np.ndarray, pool: np.ndarray) -> dict[int, str]:
    """The replacement string of every code point the table does not map to itself (removed ones: "")."""
    raw = pool.tobytes()
    out: dict[int, str] = {}
    for cp in np.nonzero((off >= 0) | (ln == 0))[0].tolist():
        if not 0xD800 <= cp <= 0xDFFF:
            out[cp] = raw[off[cp] : off[cp] + ln[cp]].decode("utf-8") if ln[cp] else ""
    return out


def _emulate(text: str, repl: dict[int, str], ccc: np.ndarray) -> str:
    """The kernel's rule: per-code-point outputs, each output mark (ccc != 0) inserted into the current run
    of marks after every mark of class <= its own; an output starter or a removed barrier (ccc 0) ends the
    run, a removed transparent code point (255) does nothing."""
    res: list[int] = []
    run = 0  # index in res where the current run of marks starts
    for ch in text:
        cp = ord(ch)
        outs = repl.get(cp, ch)
        if not outs:
            if ccc[cp] == 0:
                run = len(res)
            continue
        for o in map(ord, outs):
            k = int(ccc[o])
            if k == 0:
                res.append(o)
                run = len(res)
                continue
            i = len(res)
            while i > run and ccc[res[i - 1]] > k:
                i -= 1
            res.insert(i, o)
    return "".join(map(chr, res))


def _hf_nfd(nfd) -> list[str | None]:
    """HF's NFD of every code point (None for surrogates)."""
    hf_nfd: list[str | None] = [None] * N_CP
    cps = [cp for cp in range(N_CP) if not 0xD800 <= cp <= 0xDFFF]
    for cp, r in zip(cps, _batched(nfd, [chr(cp) for cp in cps], SEPS)):
        hf_nfd[cp] = r
    return hf_nfd


def _ccc_table(name: str, arrays: dict[str, np.ndarray], norm, cased, hf_nfd: list[str | None], hf: np.ndarray
               ) -> np.ndarray:
    """``{name}_ccc`` of a table whose normalizer strips accents (NFD then the Mn filter; see the module docstring),
    measured and checked on the oracle (``norm``: that normalizer; ``hf``: HF's classes, :func:`_hf_ccc`)."""
    ln, cased_ln = arrays[f"{name}_len"], arrays["cased_len"]
    cps = [cp for cp in range(N_CP) if not 0xD800 <= cp <= 0xDFFF]
    repl = _outputs(ln, arrays[f"{name}_off"], arrays[f"{name}_pool"])
    uccc = np.zeros(N_CP, dtype=np.uint8)

    # code points that can appear in the output: kept ones and those inside replacements
    kept = {cp for cp in cps if ln[cp] and cp not in repl}
    inside = {ord(c) for s in repl.values() for c in s}
    for cp in kept | inside:
        if ln[cp] == 0:
            raise RuntimeError(f"U+{cp:04X} is removed, yet appears in a replacement")
        if hf[cp] < 0:
            raise RuntimeError(f"U+{cp:04X} can appear in the output but HF's NFD decomposes it")
    for cp in cps:
        if ln[cp] == 0:
            continue
        if hf[cp] >= 0:
            uccc[cp] = hf[cp]
        elif unicodedata.combining(chr(cp)) or unicodedata.normalize("NFD", chr(cp)) != hf_nfd[cp]:
            raise RuntimeError(f"decomposable U+{cp:04X} has a non-empty output and an unclear class")
        # else: a decomposable starter, never itself in the output (checked above): 0
    surviving = sorted(cp for cp in cps if ln[cp] and uccc[cp])
    bad = [cp for cp in surviving if arrays["pretok_class"][cp] != 0]
    if bad:
        raise RuntimeError(f"marks that are not word characters: {[f'U+{cp:04X}' for cp in bad]}")
    classes = sorted({int(uccc[cp]) for cp in surviving})
    if len(classes) > 30:
        raise RuntimeError(f"{len(classes)} classes among the kept marks: the kernel packs at most 30")

    # removed code points: barrier or transparent, measured on "x" + A + c + B
    a, b = chr(PROBE_A), chr(PROBE_B)
    if not ({PROBE_A, PROBE_B} <= kept and uccc[PROBE_A] > uccc[PROBE_B] > 0):
        raise RuntimeError("the probe marks are not kept marks of the expected classes")
    if norm.normalize_str("x" + a + b) != "x" + b + a or norm.normalize_str("x" + b + a) != "x" + b + a:
        raise RuntimeError("the probe marks do not reorder as expected")
    removed = [cp for cp in cps if ln[cp] == 0]
    for cp, r in zip(removed, _batched(norm.normalize_str, ["x" + a + chr(cp) + b for cp in removed])):
        if r == "x" + b + a:
            uccc[cp] = TRANSPARENT
        elif r != "x" + a + b:
            raise RuntimeError(f"x A U+{cp:04X} B normalizes to {r!r}")
        # cross-check: removed by clean_text before NFD (the cased normalizer drops it too) -> transparent;
        # removed after NFD -> a barrier exactly when its decomposition holds a starter
        pred = cased_ln[cp] == 0 or all(hf[ord(d)] > 0 for d in hf_nfd[cp])
        if pred != (uccc[cp] == TRANSPARENT):
            raise RuntimeError(f"removed U+{cp:04X}: barrier measured {uccc[cp] == 0}, predicted {not pred}")

    # cased: no NFD, so nothing reorders -- every pair of marks it keeps stays as it is
    ckept = [cp for cp in cps if hf[cp] > 0 and cased_ln[cp] and arrays["cased_off"][cp] < 0]
    if not set(surviving) <= set(ckept):
        raise RuntimeError(f"a mark the {name} normalizer keeps is changed by the cased one")
    segs = ["x" + chr(p) + chr(q) for p in ckept for q in ckept]
    if _batched(cased.normalize_str, segs) != segs:
        raise RuntimeError("the cased normalizer reorders marks")
    nbar = sum(1 for cp in removed if uccc[cp] == 0)
    print(f"{name}_ccc: {len(surviving)} kept marks, classes {classes}; removed: {nbar} barriers, "
          f"{len(removed) - nbar} transparent")
    return uccc


def _check_reordering(label: str, ln: np.ndarray, off: np.ndarray, pool: np.ndarray, ccc: np.ndarray,
                      normalize) -> int:
    """End to end: the kernel's reordering rule (:func:`_emulate`) on a derived table against HF's normalizer on
    every ordered pair of kept marks, every removed code point between two marks, the replacements that contain
    marks next to every kept mark, and random mixes; any difference raises. Returns the number of texts."""
    cps = [cp for cp in range(N_CP) if not 0xD800 <= cp <= 0xDFFF]
    repl = _outputs(ln, off, pool)
    surviving = sorted(cp for cp in cps if ln[cp] and ccc[cp])
    removed = [cp for cp in cps if ln[cp] == 0]
    a, b = chr(PROBE_A), chr(PROBE_B)
    texts = ["x" + chr(p) + chr(q) for p in surviving for q in surviving]
    texts += ["x" + a + chr(cp) + b for cp in removed]
    with_marks = sorted(cp for cp, s in repl.items() if any(ccc[ord(c)] and ln[ord(c)] for c in s))
    texts += ["x" + chr(p) + chr(m) for p in with_marks for m in surviving]
    texts += ["x" + chr(m) + chr(p) for p in with_marks for m in surviving]
    texts += ["x" + a + chr(p) + b for p in with_marks] + ["x\U0001d15f\u1b44", "x\U0001d160\U0001d16d"]
    rng = random.Random(0)  # plus random mixes of marks, removed code points and starters
    mix = surviving + with_marks + removed[:: max(1, len(removed) // 2000)] + [ord(c) for c in "xA \t\x00"]
    texts += ["".join(chr(rng.choice(mix)) for _ in range(rng.randint(1, 12))) for _ in range(20000)]
    ndiff = 0
    for i in range(0, len(texts), 4096):
        got = _emulate(" ".join(texts[i : i + 4096]), repl, ccc)
        want = normalize(" ".join(texts[i : i + 4096]))
        if got != want:
            ndiff += sum(_emulate(t, repl, ccc) != normalize(t) for t in texts[i : i + 4096])
    if ndiff:
        raise RuntimeError(f"{label}: the kernel's reordering rule differs from HF on {ndiff} of {len(texts)} texts")
    return len(texts)


def _per_code_point(normalize) -> list[str | None]:
    """``normalize`` of every code point alone (None for surrogates), batched: code points joined by U+10000, a
    starter every option set keeps as it is and no other code point's output holds (checked by the split); U+10000
    itself alone."""
    sep = "\U00010000"
    out: list[str | None] = [None] * N_CP
    cps = [cp for cp in range(N_CP) if not 0xD800 <= cp <= 0xDFFF and cp != 0x10000]
    for i in range(0, len(cps), CHUNK):
        part = cps[i : i + CHUNK]
        res = normalize(sep.join(map(chr, part))).split(sep)
        if len(res) != len(part):
            raise RuntimeError("per-code-point normalization: the separator did not survive")
        for cp, r in zip(part, res):
            out[cp] = r
    out[0x10000] = normalize(sep)
    return out


def _table_outputs(ln: np.ndarray, off: np.ndarray, pool: np.ndarray) -> list[str | None]:
    """Every code point's output under a table (None for surrogates)."""
    raw = pool.tobytes()
    out: list[str | None] = [None] * N_CP
    for cp in range(N_CP):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        out[cp] = chr(cp) if off[cp] < 0 and ln[cp] else raw[off[cp] : off[cp] + ln[cp]].decode("utf-8")
    return out


def _one_token_each(ln: np.ndarray, off: np.ndarray, pool: np.ndarray, cls: np.ndarray) -> None:
    """The kernel's bound: no code point normalizes to more than one pre-token (a word run or one punctuation)."""
    raw = pool.tobytes()
    for o, n in {(int(o), int(n)) for o, n in zip(off.tolist(), ln.tolist()) if o >= 0}:
        c = [int(cls[ord(ch)]) for ch in raw[o : o + n].decode("utf-8")]
        if sum(1 for j, x in enumerate(c) if x == 2 or (x == 0 and (j == 0 or c[j - 1] != 0))) > 1:
            raise RuntimeError(f"a replacement {raw[o:o + n]!r} holds more than one pre-token")


def _word_chars() -> np.ndarray:
    """``\\w`` as HF's ``single_word`` added tokens test it, measured: ``c + "#"`` and ``"#" + c`` with ``#`` a
    single-word added token, for every code point (one that is ``\\w`` stops the match on either side)."""
    from tokenizers import AddedToken, Tokenizer
    from tokenizers.models import WordPiece

    tok = Tokenizer(WordPiece({"[UNK]": 0}, unk_token="[UNK]"))
    tok.add_tokens([AddedToken("#", single_word=True, normalized=False)])
    cps = [cp for cp in range(N_CP) if not 0xD800 <= cp <= 0xDFFF and cp != ord("#")]
    before = tok.encode_batch([chr(cp) + "#" for cp in cps], add_special_tokens=False)
    after = tok.encode_batch(["#" + chr(cp) for cp in cps], add_special_tokens=False)
    word = np.zeros(N_CP, dtype=bool)
    for cp, x, y in zip(cps, before, after):
        if (1 in x.ids) != (1 in y.ids):
            raise RuntimeError(f"U+{cp:04X} is a word character on one side of a single_word token only")
        word[cp] = 1 not in x.ids
    word[ord("#")] = False
    return word


def _bits(a: np.ndarray) -> np.ndarray:
    return np.packbits(a.astype(bool), bitorder="little")


def main(argv: list[str]) -> int:
    import tokenizers
    from tokenizers.normalizers import NFD, BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from triton_textops.ops.wordpiece.normalize import BASES, NormOptions, derive_table

    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "triton_textops/data/unicode_tables.npz"

    def bert(clean: bool = True, chinese: bool = True, strip: bool = True, lower: bool = True):
        return BertNormalizer(clean_text=clean, handle_chinese_chars=chinese, strip_accents=strip, lowercase=lower)

    arrays: dict[str, np.ndarray] = {}
    for (lower, strip), name in BASES.items():  # the four stored tables: every code point alone
        arrays[f"{name}_len"], arrays[f"{name}_off"], arrays[f"{name}_pool"] = _table(bert(True, True, strip, lower).normalize_str)
    cps = [cp for cp in range(N_CP) if not 0xD800 <= cp <= 0xDFFF]
    pre = BertPreTokenizer()
    cls = np.zeros(N_CP, dtype=np.uint8)
    for cp in cps:
        ch = chr(cp)
        toks = [t for t, _ in pre.pre_tokenize_str("a" + ch + "a")]
        if toks == ["a", "a"]:
            cls[cp] = 1
        elif toks == ["a", ch, "a"]:
            cls[cp] = 2
        elif toks != ["a" + ch + "a"]:
            raise RuntimeError(f"unexpected pre-tokenization of U+{cp:04X}: {toks}")
    arrays["pretok_class"] = cls

    # the two sets the other option sets are made with, measured with every other step off
    clean_only = _per_code_point(bert(True, False, False, False).normalize_str)
    cjk_only = _per_code_point(bert(False, True, False, False).normalize_str)
    clean_set = np.zeros(N_CP, dtype=bool)
    cjk_set = np.zeros(N_CP, dtype=bool)
    for cp in cps:
        ch = chr(cp)
        if clean_only[cp] != ch:
            if clean_only[cp] not in ("", " "):
                raise RuntimeError(f"clean_text makes U+{cp:04X} {clean_only[cp]!r}, neither removed nor a space")
            clean_set[cp] = True
        if cjk_only[cp] != ch:
            if cjk_only[cp] != " " + ch + " ":
                raise RuntimeError(f"handle_chinese_chars makes U+{cp:04X} {cjk_only[cp]!r}")
            cjk_set[cp] = True
    if (clean_set & cjk_set).any():
        raise RuntimeError("a code point is changed by both clean_text and handle_chinese_chars")
    arrays["clean_set"], arrays["cjk_set"] = _bits(clean_set), _bits(cjk_set)
    # without clean_text, the code points it changes go through the other steps: the few that do not stay as they
    # are (NFD: U+2000 -> U+2002) are listed per stored table
    for (lower, strip), name in BASES.items():
        got = _per_code_point(bert(False, True, strip, lower).normalize_str)
        over = [cp for cp in np.flatnonzero(clean_set).tolist() if got[cp] != chr(cp)]
        raw = [got[cp].encode("utf-8") for cp in over]
        arrays[f"{name}_noclean_cp"] = np.array(over, dtype=np.int32)
        arrays[f"{name}_noclean_len"] = np.array([len(r) for r in raw], dtype=np.uint8)
        arrays[f"{name}_noclean_pool"] = np.frombuffer(b"".join(raw), dtype=np.uint8)
    arrays["word_char"] = _bits(_word_chars())

    # combining classes of the tables that strip accents (NFD), measured once on HF's NFD
    nfd = NFD().normalize_str
    hf_nfd = _hf_nfd(nfd)
    hf, diff = _hf_ccc(nfd, hf_nfd)
    print(f"ccc: HF differs from unicodedata {unicodedata.unidata_version} on {len(diff)} code points "
          f"({', '.join(f'U+{cp:04X}' for cp in diff[:6])}, ...)")
    cased = bert(True, True, False, False)
    for (lower, strip), name in BASES.items():
        arrays[f"{name}_ccc"] = _ccc_table(name, arrays, bert(True, True, True, lower), cased, hf_nfd, hf) if strip \
            else np.zeros(N_CP, dtype=np.uint8)

    # every option set: the table derive_table makes from these arrays against the oracle, every code point alone,
    # then the reordering rule end to end for those that run NFD
    arrays["tokenizers_version"] = np.array(tokenizers.__version__)
    checked = 0
    for clean in (True, False):
        for chinese in (True, False):
            for strip in (True, False):
                for lower in (True, False):
                    opts = NormOptions(clean, chinese, strip, lower)
                    label = f"clean_text={clean} handle_chinese_chars={chinese} strip_accents={strip} lowercase={lower}"
                    ln, off, pool, ccc = derive_table(arrays, opts)
                    want = _per_code_point(bert(clean, chinese, strip, lower).normalize_str)
                    got = _table_outputs(ln, off, pool)
                    bad = [cp for cp in cps if got[cp] != want[cp]]
                    if bad:
                        raise RuntimeError(f"{label}: the derived table differs from HF on {len(bad)} code points "
                                           f"({', '.join(f'U+{cp:04X}' for cp in bad[:6])})")
                    _one_token_each(ln, off, pool, cls)
                    n = _check_reordering(label, ln, off, pool, ccc, bert(clean, chinese, strip, lower).normalize_str) \
                        if strip else 0
                    checked += 1
                    print(f"{label}: {len(cps)} code points alone and {n} reordering texts, 0 differences")
    np.savez_compressed(out, **arrays)
    print(f"wrote {out} ({out.stat().st_size} bytes) from tokenizers {tokenizers.__version__}: {checked} option sets")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
