#!/usr/bin/env python3
"""Generate ``triton_textops/data/regex_unicode.npz``: the Unicode tables of the pre-tokenizer regex engine.

Why measured: a ``Split`` pattern of an HF ``tokenizer.json`` runs on Oniguruma, a tiktoken pattern on fancy-regex
(the Rust ``regex`` crate's tables); each has its own Unicode version. The engine
(:mod:`triton_textops.ops.bpe.regex`) evaluates character classes over these tables, measured per engine on the
engine itself (as ``gen_bpe_tables.py`` does: every code point matched with a one-class pattern), never read
from the running Python's ``unicodedata``.

Per engine (``onig``: HF tokenizers' ``Split``; ``fancy``: tiktoken): ``gc_<engine>`` (uint8 per code point: the
index in ``gc_names`` of its general category; each code point in exactly one, checked), ``prop_<engine>``
(uint32 per code point: bit k set when ``prop_names[k]`` matches it: ``\\s``, ``\\d``, ``\\w``, ``\\h``, ``.``
and the scripts listed), ``fold_cp_<engine>`` / ``fold_to_<engine>``: the non-ASCII code points ``(?i:x)``
matches for an ASCII letter x. The general-category groups (``\\p{L}`` ...) are checked to be the unions of
their members on both engines.

Usage: python scripts/gen_regex_tables.py [OUT.npz]   (needs tiktoken and tokenizers, the dev extras)
"""

from __future__ import annotations

import string
import sys
from pathlib import Path

import numpy as np
from gen_bpe_tables import N_CP, all_code_points, hf_members, tiktoken_members

GC_NAMES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf",
            "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"]
PROP_PATTERNS = {"s": r"\s", "d": r"\d", "w": r"\w", "h": r"\h", "dot": r"."}
SCRIPTS = ["Han", "Hiragana", "Katakana", "Hangul", "Latin", "Greek", "Cyrillic", "Arabic", "Hebrew", "Thai",
           "Devanagari", "Common", "Inherited"]
ENGINES = {"onig": hf_members, "fancy": tiktoken_members}


def measure(engine: str) -> dict[str, np.ndarray]:
    members = ENGINES[engine]
    cps = all_code_points()
    gc = np.full(N_CP, 255, dtype=np.uint8)
    gc[0xD800:0xE000] = GC_NAMES.index("Cs")  # (no string holds a surrogate: Cs by definition)
    for k, name in enumerate(GC_NAMES):
        if name == "Cs":
            continue
        got = sorted(members(rf"\p{{{name}}}", cps))
        if (gc[got] != 255).any():
            raise SystemExit(f"{engine}: \\p{{{name}}} overlaps another category")
        gc[got] = k
        print(f"{engine} \\p{{{name}}}: {len(got)}")
    if (gc == 255).any():
        raise SystemExit(f"{engine}: {int((gc == 255).sum())} code points in no category")
    for group in "LMNPSZC":
        if group == "C":
            continue  # (\p{C} of the engines may leave out Cn / Cs: never used, not checked)
        got = members(rf"\p{{{group}}}", cps)
        union = {c for c in cps if GC_NAMES[gc[c]][0] == group}
        if got != union:
            raise SystemExit(f"{engine}: \\p{{{group}}} is not the union of its categories ({len(got ^ union)})")
    names = list(PROP_PATTERNS) + SCRIPTS
    prop = np.zeros(N_CP, dtype=np.uint32)
    for k, name in enumerate(names):
        got = sorted(members(PROP_PATTERNS.get(name, rf"\p{{{name}}}"), cps))
        prop[got] |= np.uint32(1 << k)
        print(f"{engine} {name}: {len(got)}")
    fold_cp, fold_to = [], []
    for x in string.ascii_lowercase:
        got = members(f"(?i:{x})", cps)
        if {ord(x), ord(x.upper())} - got:
            raise SystemExit(f"{engine}: (?i:{x}) does not match {x} and {x.upper()}")
        for c in sorted(got):
            if c >= 0x80:
                fold_cp.append(c)
                fold_to.append(ord(x))
    print(f"{engine} folds: {[(hex(a), chr(b)) for a, b in zip(fold_cp, fold_to)]}")
    return {f"gc_{engine}": gc, f"prop_{engine}": prop, f"fold_cp_{engine}": np.array(fold_cp, dtype=np.int32),
            f"fold_to_{engine}": np.array(fold_to, dtype=np.int32)}


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else (
        Path(__file__).resolve().parent.parent / "triton_textops" / "data" / "regex_unicode.npz")
    tables: dict[str, np.ndarray] = {}
    for engine in ENGINES:
        tables.update(measure(engine))
    diff = np.flatnonzero(tables["gc_onig"] != tables["gc_fancy"])
    print(f"general category: the engines differ on {diff.size} code points {[hex(c) for c in diff[:10]]}")
    np.savez_compressed(out, gc_names=np.array(GC_NAMES), prop_names=np.array(list(PROP_PATTERNS) + SCRIPTS),
                        **tables)
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
