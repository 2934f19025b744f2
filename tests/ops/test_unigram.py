"""The Unigram model stage, exact to sentencepiece (``.model`` rules) and to HF tokenizers (tokenizer.json rules):
models trained here on the bundled corpus and multilingual text (nmt_nfkc and identity, byte fallback, user-defined
symbols, a vocabulary small enough to force byte fallback), fed the text sentencepiece itself normalized, compared
with ``SentencePieceProcessor.encode`` and with HF's ``models.Unigram`` alone; crafted vocabularies for ties,
float32 against float64 sums, piece types and unknowns; every code point; hypothesis text; the checks at load."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parents[1]))
import unigram_cases as U  # noqa: E402

from triton_textops.errors import InputError  # noqa: E402
from triton_textops.ops.core import kernels as K  # noqa: E402
from triton_textops.ops.sentencepiece.unigram import (  # noqa: E402
    BYTE,
    CONTROL,
    HF,
    NORMAL,
    SENTENCEPIECE,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    Unigram,
)

pytest.importorskip("sentencepiece")
pytest.importorskip("tokenizers")

# literal control / unknown / byte pieces in the text: sentencepiece never matches them, HF does
LITERALS = ["<s>x</s>", "<unk>", "a<unk>b", "<0x41><0xE4>", "<unk>\U0001d11e\u2603", "\u2603<unk>\u2603", "<pad>"]


class Models:
    """A trained model under its four engines: sentencepiece, HF, and ours under each one's rules."""

    def __init__(self, name: str) -> None:
        proto = U.trained(name)
        self.sp = U.sp_processor(proto)
        self.ours_sp = U.ours_sp(proto)
        vocab, unk, fallback = U.hf_vocab(proto)
        self.hf = U.hf_model(vocab, unk, fallback)
        self.ours_hf = U.ours_hf(vocab, unk, fallback)

    def check(self, texts: list[str], hf: bool = True) -> None:
        """0 differences on ``texts`` (normalized by sentencepiece) against sentencepiece and, ``hf``, HF."""
        norm = [self.sp.normalize(t) for t in texts]
        expected = [self.sp.encode(t) for t in texts]
        got = self.ours_sp.encode(norm).tolist()
        bad = [i for i in range(len(texts)) if got[i] != expected[i]]
        assert not bad, [(norm[i][:80], expected[i][:20], got[i][:20]) for i in bad[:3]]
        if hf:
            expected = [e.ids for e in self.hf.encode_batch(norm, add_special_tokens=False)]
            got = self.ours_hf.encode(norm).tolist()
            bad = [i for i in range(len(texts)) if got[i] != expected[i]]
            assert not bad, [(norm[i][:80], expected[i][:20], got[i][:20]) for i in bad[:3]]


MODELS: dict[str, Models] = {}


@pytest.fixture(scope="session", params=sorted(U.CONFIGS))
def models(request: pytest.FixtureRequest) -> Models:
    if request.param not in MODELS:
        MODELS[request.param] = Models(request.param)
    return MODELS[request.param]


def test_trained_models_on_corpus_and_multilingual_text(models: Models) -> None:
    models.check(U.texts() + LITERALS + [t * 3 for t in LITERALS])


def test_every_code_point_in_context(models: Models) -> None:
    """Every code point (after a letter, doubled): against sentencepiece for every model, HF for the two without
    byte fallback (HF's pass over these 4.4 M characters takes 12-18 s with it, 3-6 s without)."""
    models.check(U.every_code_point_texts(), hf=not models.ours_hf.byte_fallback)


def test_long_runs_without_spaces(models: Models) -> None:
    """Long texts with no space: one letter, one CJK character, a repeated word, unknowns."""
    models.check(["a" * 20000, "中" * 20000, "ab" * 10000, "\u2603" * 5000, "中文字符测试" * 3000,
                  "x\U0001d11e" * 4000])


def test_long_texts_past_sentencepiece_rescaling(models: Models) -> None:
    """Texts whose path scores pass -1e5, where sentencepiece 0.2.3 rescales its float32 bests: 300 Austen paragraphs
    in one text (190 K characters; without the rescaling, 7 of these 8 differ from sentencepiece), the multilingual
    lines 200 times."""
    paragraphs = U.austen_paragraphs()
    models.check([" ".join(paragraphs[:300]), " ".join(paragraphs[1000:1300]), "".join(U.MULTILINGUAL * 200)])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=40) | st.lists(st.sampled_from(U.MULTILINGUAL + LITERALS + U.USER_SYMBOLS +
                                                                 [" ", "  ", "a", "中", "\u0301", "😀"]),
                                                max_size=6).map("".join), min_size=1, max_size=8))
def test_hypothesis_text(models: Models, texts: list[str]) -> None:
    texts = [t.encode("utf-8", "surrogatepass").decode("utf-8", "replace") for t in texts]
    models.check(texts)


def _both(pieces: list[str], scores: list[float], types: list[int], texts: list[str], *,
          byte_fallback: bool = False) -> tuple[list, list]:
    """(sentencepiece's ids, HF's ids) of ``texts`` for a crafted vocabulary (identity normalization), after checking
    that ours gives each under its rules."""
    proto = U.write_model(pieces, scores, types, byte_fallback)
    sp = U.sp_processor(proto)
    expected_sp = [sp.encode(t) for t in texts]
    assert U.ours_sp(proto).encode(texts).tolist() == expected_sp
    vocab = list(zip(pieces, scores))
    unk = types.index(UNKNOWN)
    expected_hf = [e.ids for e in U.hf_model(vocab, unk, byte_fallback).encode_batch(texts, add_special_tokens=False)]
    assert U.ours_hf(vocab, unk, byte_fallback).encode(texts).tolist() == expected_hf
    return expected_sp, expected_hf


@pytest.mark.parametrize("case", range(len(U.TIES)))
def test_ties_as_both_references(case: int) -> None:
    """Equal-score paths: both keep the first best offer at each position (strict >, starts left to right), so
    the path whose last piece starts earliest wins; they agree here."""
    pieces, scores, _ = U.TIES[case]
    sp, hf = _both(pieces, scores, [UNKNOWN] + [NORMAL] * (len(pieces) - 1), U.TIE_TEXTS)
    assert sp == hf


def test_tie_picks_the_longest_last_piece() -> None:
    pieces, scores, _ = U.TIES[1]
    m = Unigram.from_pieces(pieces, scores, unk_id=0)
    assert m.encode(["x" * 10, "xx", "xxxx"]).tolist() == [[1, 3, 3, 3], [2], [1, 3]]


def test_float32_and_float64_sums_differ() -> None:
    """sentencepiece keeps each position's best as a float32, HF as a float64: the same vocabulary gives a b c in
    one and abc in the other, and ours follows each."""
    pieces, scores = U.float32_split()
    sp, hf = _both(pieces, scores, [UNKNOWN] + [NORMAL] * 4, ["abc", "abcabc"])
    assert sp == [[1, 2, 3], [1, 2, 3, 1, 2, 3]] and hf == [[4], [4, 4]]
    # an offer above the kept best by under half a float32 step ties it in sentencepiece (the first stays)
    sp, hf = _both(["<unk>", "a", "b", "ab"], [-2000.0, -1024.0, 2.0 ** -15, -1024.0], [UNKNOWN] + [NORMAL] * 3,
                   ["ab"])
    assert sp == [[3]] and hf == [[1, 2]]
    # past -1e5 sentencepiece subtracts the best at a start from the bests ahead (float32): another rounding
    pieces, scores, text = U.rescaled()
    sp, hf = _both(pieces, scores, [UNKNOWN] + [NORMAL] * 6, [text, text[:6], text * 3])
    assert sp[0][-2:] == [4, 1] and hf[0][-2:] == [1, 4]


def test_piece_types() -> None:
    """sentencepiece: a user-defined piece of n bytes scores float32((n - 1) * 0.1) whatever its own score, CONTROL,
    UNKNOWN and BYTE pieces are never matched in text, UNUSED ones are skipped (their character is unknown);
    HF matches every piece by its score."""
    pieces = ["<unk>", "<s>", "a", "b", "ab", "c", "cc", "<0x41>", "d"]
    scores = [0.0, 0.0, -1.0, -1.0, -5.0, -2.0, -1.0, 0.0, -3.0]
    types = [UNKNOWN, CONTROL, NORMAL, NORMAL, USER_DEFINED, UNUSED, NORMAL, CONTROL, NORMAL]
    texts = ["ab", "<s>ab", "c", "ccc", "cc", "<0x41>", "abab", "dab", "<unk>"]
    sp, hf = _both(pieces, scores, types, texts)
    assert sp[0] == [4] and hf[0] == [2, 3]  # the bonus: 0.1 against a + b = -2; HF: -5 against -2
    assert sp[2] == [0] and hf[2] == [5]  # unused
    assert sp[1][:1] == [0] and hf[1][:1] == [1]  # control
    # the bonus grows with the length, whatever the other scores: 0.3 (abab) beats 4 x 0.07
    sp, hf = _both(["<unk>", "a", "b", "aba", "abab", "z"], [0.0, 0.07, 0.07, 0.21, -9.0, 3.0],
                   [UNKNOWN, NORMAL, NORMAL, NORMAL, USER_DEFINED, NORMAL], ["abab", "aba", "ababab"])
    assert sp[0] == [4] and hf[0] != [4]


def test_unknowns_fused_and_byte_fallback() -> None:
    """Runs of unknown characters: one unk (both), or byte pieces (byte fallback). HF fuses the unk piece matched in
    the text with unknown characters next to it, and maps the run as a string: its own piece when it is one
    (scores high enough that two unknowns beat it), else its bytes' pieces when all exist, else unk."""
    byte_pieces = [f"<0x{b:02X}>" for b in range(256)]
    pieces = ["<unk>", "a", "xy"] + byte_pieces
    types = [UNKNOWN, NORMAL, NORMAL] + [BYTE] * 256
    scores = [0.0, -1.0, -1.0] + [0.0] * 256
    texts = ["a\u2603\u2603a", "\u2603", "\U0001d11ea", "x", "xy", "a<unk>\u2603", "<unk>"]
    sp, hf = _both(pieces, scores, types, texts, byte_fallback=True)
    assert sp[0] == [1] + [3 + b for b in "\u2603\u2603".encode()] + [1] == hf[0]
    sp, hf = _both(pieces[:3], scores[:3], types[:3], texts)
    assert sp[0] == [1, 0, 1] == hf[0]
    # HF: a run that is a piece: every score 25 or more, so two unknowns (2 * (25 - 10)) beat "xy" (25)
    vocab = [("<unk>", 30.0), ("xy", 25.0), ("a", 30.0)] + [(p, 30.0) for p in byte_pieces[:200]]
    texts = ["xy", "axy", "\u2603", "a\u00ff"]
    for fallback, last in ((False, [2, 0]), (True, [2, 3 + 0xC3, 3 + 0xBF])):
        got = U.hf_model(vocab, 0, fallback).encode_batch(texts, add_special_tokens=False)
        ours = U.ours_hf(vocab, 0, fallback).encode(texts).tolist()
        assert ours == [e.ids for e in got] == [[1], [2, 1], [0], last]  # (no <0xE2> piece: the snowman is unk)


def test_hf_repeated_pieces_take_the_last_id() -> None:
    vocab = [("<unk>", 0.0), ("ab", -1.0), ("a", -1.0), ("ab", -3.0), ("b", -1.0)]
    texts = ["ab", "aab", "b"]
    expected = [e.ids for e in U.hf_model(vocab, 0, False).encode_batch(texts, add_special_tokens=False)]
    assert U.ours_hf(vocab, 0, False).encode(texts).tolist() == expected == [[2, 4], [2, 2, 4], [4]]


def test_hf_without_unk_id() -> None:
    """HF: an unknown character without an unk_id is an error (MissingUnkId); ours names the rows."""
    vocab = [("a", -1.0), ("b", -2.0)]
    tok = U.hf_model(vocab, None, False)
    assert tok.encode("ab").ids == [0, 1]
    with pytest.raises(Exception, match="(?i)unk"):
        tok.encode("ac")
    m = U.ours_hf(vocab, None, False)
    assert m.encode(["ab", ""]).tolist() == [[0, 1], []]
    with pytest.raises(InputError, match="row 1: .*no unk_id") as e:
        m.encode(["ab", "ac", "b", "c"])
    assert e.value.rows.tolist() == [1, 3]


def test_from_tokenizer_json_and_model_proto() -> None:
    """The tokenizer.json ``model`` HF writes, and a ModelProto parsed by protobuf, load as the pieces do."""
    vocab, unk, fallback = U.hf_vocab(U.trained("identity_bytes"))
    doc = json.loads(U.hf_model(vocab, unk, fallback).to_str())["model"]
    m = Unigram.from_tokenizer_json(doc)
    assert (m.semantics, m.unk_id, m.byte_fallback, m.n_ids) == (HF, unk, True, len(vocab))
    texts = ["▁Hello▁world", "▁中文字符", "\u2603"]
    assert m.encode(texts).tolist() == U.ours_hf(vocab, unk, fallback).encode(texts).tolist()
    pb = pytest.importorskip("transformers.utils.sentencepiece_model_pb2_new")
    proto = pb.ModelProto()
    proto.ParseFromString(U.trained("identity_bytes"))
    m = Unigram.from_model_proto(proto)
    assert (m.semantics, m.unk_id, m.byte_fallback) == (SENTENCEPIECE, unk, True)
    assert m.encode(texts).tolist() == U.ours_sp(U.trained("identity_bytes")).encode(texts).tolist()


def test_buffers_and_bad_spans() -> None:
    """A (data, offsets) pair of any texts; a span outside the buffer or backwards names its row."""
    pieces, scores, _ = U.TIES[0]
    m = Unigram.from_pieces(pieces, scores, unk_id=0)
    data = np.frombuffer(b"abcabcab", dtype=np.uint8)
    assert m.encode((data, np.array([0, 3, 3, 8]))).tolist() == [[6], [], [6, 4]]
    for offsets, row in (([0, 5, 3], 1), ([0, 99], 0), ([-1, 4], 0), ([0, 2, 1, 4], 1)):
        with pytest.raises(InputError, match=f"row {row}: its offsets"):
            m.encode((data, np.array(offsets, dtype=np.int64)))


def test_launches_and_empty_batches() -> None:
    m = Unigram.from_pieces(*U.TIES[0][:2], unk_id=0)
    K.COUNTS.clear()
    r = m.encode(["ab", "c", ""])
    assert (K.COUNTS["launch"], r.tolist()) == (2, [[4], [3], []])
    assert m.encode([]).tolist() == []
    assert m.encode([""] * 3).tolist() == [[], [], []]


def test_invalid_utf8_takes_lead_byte_lengths() -> None:
    """Bytes that are not UTF-8 (ours only: the references take str): a character is as long as its lead byte
    says, cut at the end; every byte ends up in some id."""
    m = Unigram.from_pieces(["<unk>", "a"], [0.0, -1.0], unk_id=0, byte_fallback=False)
    assert m.encode([b"\xffa", b"a\xe4", b"\x80\x80a", b"\xf0a"]).tolist() == [[0], [1, 0], [0, 1], [0]]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"pieces": ["a", "b"], "scores": [0.0]}, "1 scores for 2 pieces"),
    ({"scores": [0.0, float("nan"), 0.0]}, "not finite"),
    ({"scores": [0.0, 1e39, 0.0], "types": [UNKNOWN, NORMAL, NORMAL]}, "not finite as a float32"),
    ({"unk_id": 3}, "unk_id 3"),
    ({"unk_id": True}, "unk_id True"),
    ({"pieces": ["a", 1, "c"]}, "str or bytes"),
    ({"types": [UNKNOWN, NORMAL, 9]}, "piece type 9"),
    ({"types": [NORMAL, NORMAL, NORMAL], "unk_id": None}, "0 UNKNOWN pieces"),
    ({"types": [UNKNOWN, UNKNOWN, NORMAL], "unk_id": None}, "2 UNKNOWN pieces"),
    ({"types": [NORMAL, UNKNOWN, NORMAL], "unk_id": 0}, "not the UNKNOWN piece"),
    ({"pieces": ["<unk>", "a", "a"], "types": [UNKNOWN, NORMAL, USER_DEFINED]}, "already defined"),
    ({"pieces": ["<unk>", "", "a"], "types": [UNKNOWN, NORMAL, NORMAL]}, "empty"),
    ({"pieces": ["<unk>", "<0x41>", "a"], "types": [UNKNOWN, BYTE, NORMAL]}, "byte_fallback is false"),
    ({"pieces": ["<unk>", "<0x4g>", "a"], "types": [UNKNOWN, BYTE, NORMAL], "byte_fallback": True}, "not <0xXX>"),
    ({"pieces": ["<unk>", "<0x41>", "a"], "types": [UNKNOWN, BYTE, NORMAL], "byte_fallback": True}, "all 256"),
    ({"types": [UNKNOWN, NORMAL, NORMAL], "semantics": HF}, "no piece types"),
    ({"semantics": SENTENCEPIECE}, "need the pieces' types"),
    ({"byte_fallback": 1}, "must be a bool"),
])
def test_bad_models_fail_at_load(kwargs: dict, match: str) -> None:
    args = {"pieces": ["<unk>", "a", "b"], "scores": [0.0, -1.0, -2.0], "unk_id": 0} | kwargs
    with pytest.raises(ValueError, match=match):
        Unigram.from_pieces(args.pop("pieces"), args.pop("scores"), **args)
    with pytest.raises(ValueError, match="Unigram vocab"):
        Unigram.from_tokenizer_json({"type": "Unigram", "vocab": [["a"]]})
