"""Unigram test material shared by tests/ops, tests/sim and tests/bounds: SentencePiece Unigram models trained at test
time on the bundled corpus and multilingual text, crafted vocabularies (ties, unknowns), and a ModelProto reader /
writer (protobuf's wire format, so the tests need neither sentencepiece's generated module, pinned to one protobuf
release, nor transformers)."""

from __future__ import annotations

import functools
import io
import random
import struct

from triton_textops.bundled import austen_paragraphs
from triton_textops.ops.sentencepiece.unigram import (
    NORMAL,
    UNKNOWN,
    Unigram,
)

MULTILINGUAL = [
    "中文字符测试，这是一个没有空格的句子。我们今天去北京大学图书馆看书，然后在食堂吃饭。",
    "日本語のテキストです。東京都は日本の首都であり、人口が最も多い都市です。カタカナとひらがな。",
    "한국어 텍스트입니다. 서울은 대한민국의 수도이며 가장 큰 도시입니다.",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
    "العربية لغة جميلة. مرحبا بكم في مدينة القاهرة، عاصمة جمهورية مصر العربية.",
    "हिन्दी भारत की राजभाषा है। नई दिल्ली भारत की राजधानी है और यह एक बड़ा शहर है।",
    "Ελληνικά: η Αθήνα είναι η πρωτεύουσα της Ελλάδας. Кириллица: Москва — столица России.",
    "עברית: ירושלים היא עיר עתיקה. Tiếng Việt có dấu: Hà Nội, Đà Nẵng, Thành phố Hồ Chí Minh.",
    "emoji 😀👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇩🇪 ❤️ 🧑🏿‍💻 x😀y 1😀2 👩‍❤️‍💋‍👨",
    "e\u0301 a\u0300\u0301 x\u0327\u0328 \u0301 alone .\u0301 1\u0301 \u0301\u0301A ÉCOLE\u0301s Z\u0335\u0321a\u0334",
    "def f(x):\n    return x**2 + 1  # comment\n\tif a<b and c>=d: print(\"hi\")\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; } // C++ loop\nSELECT * FROM t WHERE id = 42;",
    "https://example.com/a/b?c=d&e=f#g path/to/file.py C:\\dir\\x ../.. //x /// a/b/c",
    "  \n \r\n\t\t \u00a0\u3000 \u2028 \u2029\x0b\x0c\x85 x  \n\n\n   y\r\r\r z \t \n",
    "ＦＵＬＬ ｗｉｄｔｈ １２３ ！？ and ﬁ ﬂ ﬀ ligatures Ⅻ ½ ² ㍿ ℃ №",
    "zero\u200bwidth\u200c join\u200d bom\ufeff soft\u00adhyphen \ufffd \ue000 \U0010fffd",
]
USER_SYMBOLS = ["<sep>", "@@", "▁NY"]


def corpus() -> list[str]:
    """Training text: 600 Austen paragraphs and the multilingual lines, each several times."""
    return austen_paragraphs()[:600] + MULTILINGUAL * 5


def texts(seed: int = 0, n: int = 40) -> list[str]:
    """Test texts: Austen paragraphs beyond the training slice, the multilingual lines, mixes and long runs."""
    rng = random.Random(seed)
    pools = MULTILINGUAL + ["abcXYZ 0123", " \t\n\u3000\u00a0", "<sep>@@▁NY", "中文日本語한국어", "😀👍🏽\u200d❤️"]
    mixed = ["".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 80))) for _ in range(n)]
    runs = ["a" * 300, "中" * 200, "ab" * 150, " " * 50 + "x", "😀" * 40, "\u0301" * 30, "<sep>" * 5 + "@@@" * 4]
    return austen_paragraphs()[700:720] + MULTILINGUAL + mixed + runs + ["", " ", "x"]


def every_code_point_texts(step: int = 8192) -> list[str]:
    """Every code point but the surrogates, each after a letter and doubled before a space."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    return ["".join(f"a{chr(c)}{chr(c)} " for c in cps[i:i + step]) for i in range(0, len(cps), step)]


CONFIGS = {  # name -> trainer options (model_type unigram; vocab small: fast)
    "nfkc": {"normalization_rule_name": "nmt_nfkc", "vocab_size": 1200, "character_coverage": 0.9995},
    "identity_bytes": {"normalization_rule_name": "identity", "vocab_size": 1200, "byte_fallback": True,
                       "user_defined_symbols": USER_SYMBOLS, "character_coverage": 0.9995},
    "small_bytes": {"normalization_rule_name": "nmt_nfkc", "vocab_size": 400, "byte_fallback": True,
                    "character_coverage": 0.98, "user_defined_symbols": USER_SYMBOLS[:1]},
    "identity": {"normalization_rule_name": "identity", "vocab_size": 800, "character_coverage": 0.99,
                 "user_defined_symbols": USER_SYMBOLS[1:]},
}


@functools.cache
def trained(name: str) -> bytes:
    """The serialized ModelProto of config ``name``, trained once per process."""
    import sentencepiece as spm  # noqa: PLC0415

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus()), model_writer=out, model_type="unigram",
                                   minloglevel=2, num_threads=1, seed_sentencepiece_size=20000,
                                   max_sentence_length=100000, **CONFIGS[name])
    return out.getvalue()


# ------------------------------------------------------------------------------ ModelProto wire format

def _varint(buf: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, i


def _fields(buf: bytes):  # noqa: ANN202 - (field number, wire type, value) of a message
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 2:
            ln, i = _varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield field, wire, v


def read_model(proto: bytes) -> tuple[list[str], list[float], list[int], bool]:
    """(pieces, scores, types, byte_fallback) of a serialized ModelProto."""
    pieces, scores, types, fallback = [], [], [], False
    for field, _, v in _fields(proto):
        if field == 1:  # SentencePiece {1: piece, 2: score (float), 3: type}
            p, s, t = "", 0.0, NORMAL
            for f, _, x in _fields(v):
                if f == 1:
                    p = x.decode("utf-8")
                elif f == 2:
                    s = struct.unpack("<f", x)[0]
                elif f == 3:
                    t = x
            pieces.append(p)
            scores.append(s)
            types.append(t)
        elif field == 2:  # TrainerSpec {35: byte_fallback}
            fallback = any(f == 35 and x for f, _, x in _fields(v))
    return pieces, scores, types, fallback


def _key(field: int, wire: int) -> bytes:
    return _put_varint(field << 3 | wire)


def _put_varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _message(field: int, body: bytes) -> bytes:
    return _key(field, 2) + _put_varint(len(body)) + body


def write_model(pieces: list[str], scores: list[float], types: list[int], byte_fallback: bool = False) -> bytes:
    """A serialized Unigram ModelProto of these pieces with identity normalization: no dummy prefix, no whitespace
    handling, so ``encode(text)`` runs the model on ``text`` itself."""
    out = bytearray()
    for p, s, t in zip(pieces, scores, types):
        raw = p.encode("utf-8")
        out += _message(1, _key(1, 2) + _put_varint(len(raw)) + raw + _key(2, 5) + struct.pack("<f", s)
                        + _key(3, 0) + _put_varint(t))
    out += _message(2, _key(3, 0) + _put_varint(1) + _key(35, 0) + _put_varint(int(byte_fallback)))
    out += _message(3, _message(1, b"identity") + _key(3, 0) + _put_varint(0) + _key(4, 0) + _put_varint(0)
                    + _key(5, 0) + _put_varint(0))
    return bytes(out)


# ------------------------------------------------------------------------------ the models under test

def sp_processor(proto: bytes):  # noqa: ANN201
    import sentencepiece as spm  # noqa: PLC0415

    return spm.SentencePieceProcessor(model_proto=proto)


def ours_sp(proto: bytes) -> Unigram:
    pieces, scores, types, fallback = read_model(proto)
    return Unigram.from_pieces(pieces, scores, unk_id=None, byte_fallback=fallback, types=types)


def hf_vocab(proto: bytes) -> tuple[list[tuple[str, float]], int, bool]:
    """The tokenizer.json ``Unigram`` of a ModelProto as transformers' converters write it: every piece with its
    score, unk_id the UNKNOWN piece."""
    pieces, scores, types, fallback = read_model(proto)
    return list(zip(pieces, [float(s) for s in scores])), types.index(UNKNOWN), fallback


def hf_model(vocab: list[tuple[str, float]], unk_id: int | None, byte_fallback: bool):  # noqa: ANN201
    """HF tokenizers' Unigram alone: no normalizer, no pre-tokenizer."""
    from tokenizers import Tokenizer, models  # noqa: PLC0415

    return Tokenizer(models.Unigram(vocab, unk_id, byte_fallback))


def ours_hf(vocab: list[tuple[str, float]], unk_id: int | None, byte_fallback: bool) -> Unigram:
    return Unigram.from_pieces([p for p, _ in vocab], [s for _, s in vocab], unk_id=unk_id, byte_fallback=byte_fallback)


# crafted vocabularies: (pieces, scores, types); unk first
TIES = [
    # "ab": a + b ties ab (-2); "abc": a + bc, ab + c, abc tie (-3)
    (["<unk>", "a", "b", "c", "ab", "bc", "abc"], [-5.0, -1.0, -1.0, -1.0, -2.0, -2.0, -3.0], None),
    # every split of a run of x's ties: x (-1), xx (-2), xxx (-3)
    (["<unk>", "x", "xx", "xxx", "y"], [-4.0, -1.0, -2.0, -3.0, -0.5], None),
    # a tie between a path through unk and one through pieces: unk = min - 10 = -10.5 ("q" unknown)
    (["<unk>", "q\u0301", "\u0301", "a", "aq"], [0.0, -10.5, -0.5, -0.5, -11.0], None),
    # multi-byte characters: 中 + 文 ties 中文; 文字 ties 文 + 字
    (["<unk>", "中", "文", "字", "中文", "文字", "中文字"], [-3.0, -1.5, -1.5, -2.0, -3.0, -3.5, -9.0], None),
]
TIE_TEXTS = ["ab", "abc", "abcabc", "x" * 10, "xxyxxxy", "aq\u0301", "q\u0301q", "aqq\u0301a", "中文字", "中文字中",
             "中文", "ab中文字abc", "xyzzy", ""]


def float32_split() -> tuple[list[str], list[float]]:
    """A vocabulary whose best path for "abc" differs between float32 and float64 sums: sentencepiece keeps each
    position's best as a float32, HF a float64. a + b = -1024 - 2**-14 is kept as -1024 by sentencepiece (half way:
    to even), so a + b + c = -24 there beats abc = -24 - 2**-15, which beats HF's -24 - 2**-14."""
    return ["<unk>", "a", "b", "c", "abc"], [-2000.0, -1024.0, -(2.0 ** -14), 1000.0, -24.0 - 2.0 ** -15]


def rescaled() -> tuple[list[str], list[float], str]:
    """A vocabulary and text whose sentencepiece result depends on its rescaling of bests beyond -1e5 (found by a
    seeded search over an emulation): with it the text ends ab aa a, without it ab a aa (HF: float64)."""
    return (["<unk>", "a", "b", "bba", "aa", "bb", "abb"],
            [0.0, -30000.494140625, -30000.529296875, -90002.921875, -60000.13671875, -60001.640625, -90000.9921875],
            "abbbbabaaa")
