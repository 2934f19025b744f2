"""HF's ``Precompiled`` normalizer (a tokenizer.json's ``precompiled_charsmap``) in the kernels, exact to HF
tokenizers' ``normalize_str``: sentencepiece's nmt_nfkc / nfkc / nmt_nfkc_cf charsmaps and user rules (keys of
several code points, a Hangul and a combining-mark key), on every code point in contexts and hard text (combining
marks, Hangul jamo, ZWJ emoji, regional indicators, Indic conjuncts, full width, whitespace runs of every kind).
The grapheme clusters HF walks are the measured ``grapheme_tables.npz`` (``scripts/gen_grapheme_tables.py``)."""

from __future__ import annotations

import base64
import io
import random
from pathlib import Path

import numpy as np
import pytest

from triton_textops.errors import ConfigError
from triton_textops.ops.sentencepiece import normalize as N
from triton_textops.ops.sentencepiece.model_proto import model_proto_class

spm = pytest.importorskip("sentencepiece")
normalizers = pytest.importorskip("tokenizers.normalizers")

HARD = ["e\u0301\u0301 a\u0300\u0316\u0301 \u1100\u1161\u11a8 \u1100\u1161 \uac00\u11a8 \u1100\u1100\u1161",
        "\U0001f468\u200d\U0001f469\u200d\U0001f467 \u00a9\u200d\u00a9 \u2764\ufe0f \U0001f44d\U0001f3fd",
        "\U0001f1eb\U0001f1f7\U0001f1e9 \u0915\u094d\u0937 \u0915\u094d\u200d\u0937 \u0600a \u0605\u0300 \r\n\u0301",
        "\uff21\uff22\uff23\uff41\uff10\uff01 \u2460 \ufb01 \u3300 \u00bd \u2126 \u212b \u1e9b\u0323",
        " \t\n\r\x0b\x0c\x85\u00a0\u1680\u2000\u2001\u2009\u200a\u2028\u2029\u202f\u205f\u3000  \u3000\u3000 x",
        "\u0e01\u0e33 \u0e40\u0e01 \u0627\u0644\u0639\u0631\u0628\u064a\u0629\u064b \u05e9\u05c1\u05b8 \u0d15\u0d4d",
        "a\u200c\u200db \ufeff\u00ad\u200b x\u0300\ufe0f\u20e3 1\ufe0f\u20e3 \u0308\u0308\u0308 \x00a\x00",
        "Hello, World! \u00c5ngstr\u00f6m \u00df \u0130 \u03a3\u03c3\u03c2 \u1f88 \u0149 \u01c4"]
E = "\u0300"
RULES = "61 300\tE0\n41\t62 63\n1100 1161\tAC00\n301\t\n20 20\t20\nFF21\t41 41 41 41\n"


def _charsmap(**kw: object) -> bytes:
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(["probe text"] * 20), model_writer=out, vocab_size=20,
                                   model_type="char", minloglevel=2, hard_vocab_limit=False, **kw)
    m = model_proto_class()()
    m.ParseFromString(out.getvalue())
    return bytes(m.normalizer_spec.precompiled_charsmap)


@pytest.fixture(scope="module")
def charsmaps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tsv = Path(tmp_path_factory.mktemp("rules")) / "rules.tsv"
    tsv.write_text(RULES)
    maps = {r: _charsmap(normalization_rule_name=r) for r in ("nmt_nfkc", "nfkc", "nmt_nfkc_cf")}
    maps["user"] = _charsmap(normalization_rule_tsv=str(tsv))
    return maps


def _texts() -> list[str]:
    cps = [c for c in range(1, 0x110000, 97) if not 0xD800 <= c <= 0xDFFF]
    out = [f.format(chr(c)) for c in cps for f in ("a{}", "{}a" + E, "{}" + E + E, "\u00a9\u200d{}" + E)]
    rng = random.Random(0)
    pool = sorted(set("".join(HARD)))
    out += ["".join(rng.choice(pool) for _ in range(rng.randint(1, 16))) for _ in range(3000)]
    return out + HARD


@pytest.mark.parametrize("name", ["nmt_nfkc", "nfkc", "nmt_nfkc_cf", "user"])
def test_precompiled_is_hf(charsmaps: dict[str, bytes], name: str) -> None:
    blob = charsmaps[name]
    hf = normalizers.Precompiled(blob)
    prog = N.from_json({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(blob).decode()}, _refuse)
    texts = _texts()
    got = N.normalize_texts(prog, [t.encode() for t in texts])
    bad = [(t, g.decode(), hf.normalize_str(t)) for t, g in zip(texts, got) if g.decode() != hf.normalize_str(t)]
    assert bad == []


def test_user_rules_take_the_shortest_key_of_a_short_cluster(charsmaps: dict[str, bytes]) -> None:
    blob = charsmaps["user"]
    prog = N.from_json({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(blob).decode()}, _refuse)
    # "A" + U+0300 is one cluster: HF replaces it whole by A's string ("bc"), the mark goes with it; a cluster of
    # 6 bytes or more goes a character at a time
    texts = ["A\u0300", "a\u0300", "A", "A\u0300\u0300\u0300", "\uff21\u0300", "\uff21\u0300\u0300"]
    want = ["bc", "\u00e0", "bc", "bc\u0300\u0300\u0300", "AAAA", "AAAA\u0300\u0300"]
    assert [normalizers.Precompiled(blob).normalize_str(t) for t in texts] == want
    assert N.normalize_texts(prog, [t.encode() for t in texts]) == [w.encode() for w in want]


def _refuse(where: str, value: object, why: str) -> None:
    raise ConfigError(f"{where} {why}")


def test_bad_charsmaps_fail_at_load() -> None:
    for raw in (None, "", "not base64!", base64.b64encode(b"\x00\x01").decode()):
        with pytest.raises(ConfigError, match="precompiled_charsmap"):
            N.from_json({"type": "Precompiled", "precompiled_charsmap": raw}, _refuse)


def test_grapheme_tables_a_kernel_would_index_past_are_refused():
    """Tables handed in by a caller (the generator does) are checked before a kernel indexes them."""
    good = N.grapheme_tables()
    N.check_grapheme_tables(good["idx"].astype(np.int32), good["flags"].astype(np.int32))
    bad_idx = good["idx"].astype(np.int32).copy()
    bad_idx[5] = good["flags"].shape[0] >> N.GB_SHIFT  # one block past the flags
    for idx, flags in ((bad_idx, good["flags"]), (good["idx"][:-1], good["flags"]), (good["idx"], good["flags"][:-1])):
        with pytest.raises(ValueError, match="grapheme tables"):
            N.Program([(N.OP_PRECOMP, b"", b"", 0)], b"", [], grapheme={"idx": idx, "flags": flags}).tables()
