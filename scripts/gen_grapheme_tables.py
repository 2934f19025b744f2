#!/usr/bin/env python3
"""Generate ``triton_textops/data/grapheme_tables.npz``: the grapheme-cluster classes of HF's ``Precompiled``.

Why: HF ``tokenizers``' ``Precompiled`` normalizer (``precompiled.rs`` over the ``spm_precompiled`` crate) walks
the text by extended grapheme cluster (the Rust crate ``unicode-segmentation``, with its own Unicode data): a
cluster shorter than 6 bytes with a charsmap key as a prefix is replaced, whole, by the normalized string of its
*shortest* such key; any other cluster goes a character at a time. So the output depends on where HF puts
cluster boundaries. Those classes are measured here on HF itself, never read from Python's ``unicodedata``.

How: a probe charsmap maps every code point to ``#`` (``#`` itself to ``$``), built by sentencepiece's trainer
from a rule TSV. Under it HF's output holds one mark per cluster under 6 bytes and one per character of a longer
cluster, so a probe text of a few characters tells whether one chosen boundary joins. Per code point ``c``
(``E`` = U+0300, ``L V T LV`` Hangul jamo / syllable, ``K`` = U+0915, ``H`` = U+094D, ``P`` = U+00A9):

- EXT ``a c`` (GB9/9a: Extend, ZWJ, SpacingMark); PRE ``c a E`` (GB9b); CTL ``c E E`` (GB4: Control, CR, LF);
  CR ``c \\n`` and LF ``\\r c`` (GB3);
- Hangul GB6-8: ``c L E``, ``c V E``, ``c T E`` (left side) and ``L c E``, ``V c E``, ``T c E`` (right side);
- GB11: EP ``P ZWJ c E``; ZWJ ``P c P``; its Extend* ``P c ZWJ P E``;
- GB9c (Indic conjuncts): consonant ``K H c E``, linker ``K c K E``, extend ``K c H K E``.

Regional indicators (GB12/13) are not measured: they are 4-byte characters, so every cluster holding one and
anything else is 6 bytes or more and goes a character at a time whatever the pairing.

Then the kernel (:func:`triton_textops.ops.sentencepiece.normalize.normalize_texts` with a ``Precompiled`` op on
these tables) runs against HF on every code point in contexts and on random strings of the probed characters,
under the probe charsmap and under sentencepiece's nmt_nfkc and nfkc charsmaps; any difference fails the script.

Usage: python scripts/gen_grapheme_tables.py [OUT.npz]   (needs tokenizers==0.22.2, the dev pin, sentencepiece)
"""

from __future__ import annotations

import io
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
N_CP = 0x110000
SEP = "\x00"  # NUL: Control (breaks both sides; checked), no charsmap key, kept by HF as it is
BIT = {name: 1 << i for i, name in enumerate(
    ["EXT", "PRE", "CTL", "CR", "LF", "HL", "HVL", "HTL", "HLR", "HVR", "HTR", "EP", "ZWJ", "XEP", "CONS", "LNK",
     "INX"])}
E, ZWJ, P, K, H = "\u0300", "\u200d", "\u00a9", "\u0915", "\u094d"
JL, JV, JT = "\u1100", "\u1161", "\u11a8"


def _cps() -> list[int]:
    return [cp for cp in range(1, N_CP) if not 0xD800 <= cp <= 0xDFFF]


def probe_charsmap() -> bytes:
    """Every code point (NUL aside) to ``#``, ``#`` to ``$``: sentencepiece's trainer builds the blob."""
    import sentencepiece as spm  # noqa: PLC0415

    from triton_textops.ops.sentencepiece.model_proto import model_proto_class  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as d:
        tsv = Path(d) / "rules.tsv"
        tsv.write_text("".join(f"{c:X}\t{0x24 if c == 0x23 else 0x23:X}\n" for c in _cps()))
        out = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(["probe text"] * 20), model_writer=out, vocab_size=20, model_type="char",
            normalization_rule_tsv=str(tsv), minloglevel=2, hard_vocab_limit=False, add_dummy_prefix=False,
            remove_extra_whitespaces=False)
    m = model_proto_class()()
    m.ParseFromString(out.getvalue())
    return bytes(m.normalizer_spec.precompiled_charsmap)


def _counts(norm, texts: list[str]) -> np.ndarray:
    """Marks (``#`` or ``$``) HF's output holds for each text, all texts in one call, NUL-separated."""
    res = norm.normalize_str(SEP.join(texts)).split(SEP)
    if len(res) != len(texts):
        raise RuntimeError("probe: the separators did not survive")
    return np.array([len(r) for r in res], dtype=np.int64)


def _u8(cp: int) -> int:
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


def measure(norm) -> np.ndarray:
    """The flags (:data:`BIT`) of every code point, measured by the probes of the module docstring."""
    cps = _cps()
    ln = np.array([_u8(c) for c in cps])
    ch = [chr(c) for c in cps]

    def probe(make) -> np.ndarray:  # noqa: ANN001
        return _counts(norm, [make(c) for c in ch])

    flags = np.zeros(N_CP, dtype=np.int64)
    at = np.array(cps)
    ext = probe(lambda c: "a" + c) == 1
    flags[at[ext]] |= BIT["EXT"]
    flags[at[probe(lambda c: c + "a" + E) != 2]] |= BIT["PRE"]  # joined: 1 (c <= 2 bytes) or 3; split: 2
    cnt = probe(lambda c: c + E + E)  # joined: 1 (1-byte c) or 3; split: 2
    flags[at[cnt == 2]] |= BIT["CTL"]
    flags[at[probe(lambda c: c + "\n") == 1]] |= BIT["CR"]
    flags[at[probe(lambda c: "\r" + c) == 1]] |= BIT["LF"]
    ctl = cnt == 2
    free = ~ctl & ~ext  # a character the plain rules (GB4/5, GB9) do not already decide
    pre = (flags[at] & BIT["PRE"]) != 0
    j = {x: (probe(lambda c, x=x: c + x + E) == 3) & ~ctl & ~pre for x in (JL, JV, JT)}  # c x E: joined 3
    flags[at[j[JL]]] |= BIT["HL"]  # L: joins L V LV LVT
    flags[at[j[JV] & j[JT]]] |= BIT["HVL"]  # V, LV: join V and T
    flags[at[j[JT] & ~j[JV]]] |= BIT["HTL"]  # T, LVT: join T (L x T has no rule)
    for name, x in (("HLR", JL), ("HVR", JV), ("HTR", JT)):  # x c E: joined 3, split 2 (c <= 3 bytes)
        flags[at[(probe(lambda c, x=x: x + c + E) == 3) & free & (ln <= 3)]] |= BIT[name]
    flags[at[(probe(lambda c: P + ZWJ + c + E) == 4) & ~ctl & ~ext]] |= BIT["EP"]
    flags[at[(probe(lambda c: P + c + P) == 3) & ext & (ln <= 3)]] |= BIT["ZWJ"]
    flags[at[(probe(lambda c: P + c + ZWJ + P + E) == 5) & ext]] |= BIT["XEP"]
    flags[at[(probe(lambda c: K + H + c + E) == 4) & free & (ln <= 3)]] |= BIT["CONS"]
    flags[at[(probe(lambda c: K + c + K + E) == 4) & ext]] |= BIT["LNK"]
    flags[at[(probe(lambda c: K + c + H + K + E) == 5) & ext]] |= BIT["INX"]
    flags[0] = BIT["CTL"]
    return flags


def check_separator(norm) -> None:
    """NUL breaks on both sides: ``a NUL E`` keeps the mark apart."""
    if norm.normalize_str("a" + SEP + E) != "#" + SEP + "#":
        raise RuntimeError("probe: NUL does not break clusters")


def build(flags: np.ndarray, block: int = 128) -> dict[str, np.ndarray]:
    """Two-stage table: ``idx`` (block number per block of 128 code points) and ``flags`` (the blocks)."""
    data = flags.astype(np.int32).reshape(-1, block)
    uniq, inv = np.unique(data, axis=0, return_inverse=True)
    return {"idx": inv.astype(np.int32).ravel(), "flags": uniq.ravel().astype(np.int32)}


def _interesting(flags: np.ndarray) -> list[int]:
    """A sample of every class's characters, and some plain ones."""
    rng = random.Random(0)
    out = [0x20, 0x41, 0x61, 0x0A, 0x0D, 0x09, 0x3000, 0xFF21, 0xAC00, 0xAC01, 0x1F600, 0x1F3FB, 0x1F1EB, 0x1F1F7]
    for b in BIT.values():
        cps = np.flatnonzero(flags & b).tolist()
        out += rng.sample(cps, min(12, len(cps)))
    return sorted(set(out))


def verify(flags: np.ndarray, tables: dict[str, np.ndarray], charsmaps: dict[str, bytes]) -> int:
    """The kernel on ``tables`` against HF's Precompiled, per charsmap: every code point in contexts and random
    strings of interesting characters. Returns the number of differences (printed)."""
    from tokenizers import normalizers  # noqa: PLC0415

    from triton_textops.ops.sentencepiece import normalize as N  # noqa: PLC0415

    rng = random.Random(1)
    pool = [chr(c) for c in _interesting(flags)] + list("aé ") + [E, ZWJ, P, K, H, JL, JV, JT]
    ctx = ["a{}", "{}a", "{}\u0300\u0300", "a{}\u0300", "\u1100{}\u0300", "\u00a9\u200d{}\u0300", "\u0915\u094d{}",
           "{}\u0301"]
    bad = 0
    for name, blob in charsmaps.items():
        hf = normalizers.Precompiled(blob)
        prog = N.Program([(N.OP_PRECOMP, b"", b"", 0)], blob, [], grapheme=tables)
        texts = [c.format(chr(cp)) for cp in _cps()[::7] for c in ctx]
        texts += ["".join(rng.choice(pool) for _ in range(rng.randint(1, 12))) for _ in range(200000)]
        got = N.normalize_texts(prog, [t.encode() for t in texts])
        want = [s.encode() for s in _counts_raw(hf, texts)]
        diff = [t for t, g, w in zip(texts, got, want) if g != w]
        print(f"{name}: {len(texts)} texts, {len(diff)} differences", [[f"{ord(c):04X}" for c in t] for t in diff[:5]])
        bad += len(diff)
    return bad


def _counts_raw(norm, texts: list[str]) -> list[str]:
    res = norm.normalize_str(SEP.join(texts)).split(SEP)
    if len(res) != len(texts):
        raise RuntimeError("separators did not survive")
    return res


def spm_charsmap(rule: str) -> bytes:
    """sentencepiece's built-in charsmap of ``rule`` (nmt_nfkc, nfkc, nmt_nfkc_cf, nfkc_cf)."""
    import sentencepiece as spm  # noqa: PLC0415

    from triton_textops.ops.sentencepiece.model_proto import model_proto_class  # noqa: PLC0415

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(["probe text"] * 20), model_writer=out, vocab_size=20, model_type="char",
        normalization_rule_name=rule, minloglevel=2, hard_vocab_limit=False)
    m = model_proto_class()()
    m.ParseFromString(out.getvalue())
    return bytes(m.normalizer_spec.precompiled_charsmap)


def main() -> None:
    from tokenizers import __version__, normalizers  # noqa: PLC0415

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "triton_textops" / "data" / "grapheme_tables.npz"
    t0 = time.time()
    blob = probe_charsmap()
    norm = normalizers.Precompiled(blob)
    check_separator(norm)
    flags = measure(norm)
    for name, b in BIT.items():
        print(f"{name}: {int(np.count_nonzero(flags & b))} code points")
    tables = build(flags)
    maps = {"probe": blob, **{r: spm_charsmap(r) for r in ("nmt_nfkc", "nfkc", "nmt_nfkc_cf")}}
    if verify(flags, tables, maps):
        raise SystemExit("differences: tables not written")
    np.savez_compressed(out, **tables, version=np.array(__version__))
    print(f"wrote {out} ({out.stat().st_size} bytes) in {time.time() - t0:.0f} s with tokenizers {__version__}")


if __name__ == "__main__":
    main()
