"""Reference BPE engines for the tests (tiktoken, HF tokenizers) on the vocabularies under tests/data/bpe, and the
text cases they are compared on. Shared by tests/ops (CPU) and tests/sim (CUDA simulator)."""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from triton_textops.ops.bpe import formats as F

DATA = Path(__file__).parent / "data" / "bpe"
RANK_FILES = {"gpt2": None, "r50k_base": None, "cl100k_base": "cl100k_base.tiktoken",
              "o200k_base": "o200k_base.tiktoken", "qwen2": "qwen.tiktoken"}
TIKTOKEN_PATTERNS = {  # as tiktoken (and Qwen's tokenizer code) define them
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
    "o200k_base": F._O200K,
    "qwen2": next(p for p, f in F.PATTERNS.items() if f == F.QWEN2),
}
LLAMA3_PATTERN = next(p for p, f in F.PATTERNS.items() if f == F.CL100K)


@functools.cache
def ranks(name: str) -> dict[bytes, int]:
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe  # noqa: PLC0415

    if name == "gpt2":
        return data_gym_to_mergeable_bpe_ranks(str(DATA / "vocab.bpe"), str(DATA / "encoder.json"))
    return load_tiktoken_bpe(str(DATA / RANK_FILES[name]))


@functools.cache
def tiktoken_encoding(name: str):  # noqa: ANN201
    import tiktoken  # noqa: PLC0415

    return tiktoken.Encoding(name, pat_str=TIKTOKEN_PATTERNS[name], mergeable_ranks=ranks(name),
                             special_tokens=F.ENCODINGS[name][1])


def merges_from_ranks(rk: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """HF's conversion of tiktoken ranks into ranked merges (transformers' TikTokenConverter rule)."""
    out = []
    get = rk.get
    for tok, r in rk.items():
        n = len(tok)
        if n < 2:
            continue
        local = []
        for i in range(1, n):
            ra = get(tok[:i])
            if ra is not None and ra < r:
                rb = get(tok[i:])
                if rb is not None and rb < r:
                    local.append((ra, rb, tok[:i], tok[i:]))
        local.sort()
        out.extend((r, ra, rb, a, b) for ra, rb, a, b in local)
    out.sort()
    return [(a, b) for _, _, _, a, b in out]


def write_tokenizer_json(directory: Path, name: str, *, family_pattern: str, nfc: bool = False,
                         bos: str | None = None, added: list[dict] | None = None,
                         ignore_merges: bool = True, normalizer: dict | None = None) -> Path:
    """A Llama-3- / Qwen2-style tokenizer.json built from a rank file (Split regex + ByteLevel, ignore_merges,
    BOS template, added tokens; ``normalizer``: HF's normalizer object, else NFC when ``nfc``)."""
    rk = ranks(name)
    table = {i: F.BYTE_CHAR[i] for i in range(256)}
    enc = lambda b: b.decode("latin-1").translate(table)  # noqa: E731  (GPT-2's bytes -> unicode map)
    vocab = {enc(t): i for t, i in rk.items()}
    merges = [f"{enc(a)} {enc(b)}" for a, b in merges_from_ranks(rk)]
    added = added or []
    doc = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": a["id"], "content": a["content"], "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": a.get("normalized", False), "special": a.get("special", True)}
                         for a in added],
        "normalizer": normalizer if normalizer is not None else {"type": "NFC"} if nfc else None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": family_pattern}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": ignore_merges, "vocab": vocab, "merges": merges},
    }
    if bos is not None:
        bos_id = next(a["id"] for a in added if a["content"] == bos)
        doc["post_processor"] = {"type": "TemplateProcessing",
                                 "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                            {"Sequence": {"id": "A", "type_id": 0}}],
                                 "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}},
                                          {"Sequence": {"id": "B", "type_id": 1}}],
                                 "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "tokenizer.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


# a tokenizer.json's ``truncation`` / ``padding`` fields, as HF writes them: each kind, side and edge (a max_length
# under the template's count, a strategy HF fails on)
TRUNCATIONS = [None] + [{"direction": d, "max_length": m, "strategy": s, "stride": 0} for d, m, s in (
    ("Right", 0, "LongestFirst"), ("Right", 1, "OnlyFirst"), ("Right", 2, "LongestFirst"), ("Left", 3, "LongestFirst"),
    ("Left", 1, "LongestFirst"), ("Right", 40, "OnlySecond"))]
PADDINGS = [None] + [{"strategy": s, "direction": d, "pad_to_multiple_of": m, "pad_id": 7, "pad_type_id": 0,
                      "pad_token": "!"} for s, d, m in (("BatchLongest", "Right", None), ({"Fixed": 5}, "Left", None),
                                                        ("BatchLongest", "Left", 4), ({"Fixed": 5}, "Right", 4))]
LIMIT_TEXTS = ["a", "a b c", "a b c d e f <s> g", "", "x" * 30, "hello world, this is it"]
# (truncation, padding) pairs that take each side of each, for the device checks (the CPU test takes them all)
LIMIT_CASES = [(TRUNCATIONS[4], PADDINGS[3]), (TRUNCATIONS[3], PADDINGS[2]), (TRUNCATIONS[5], PADDINGS[1]),
               (TRUNCATIONS[1], PADDINGS[4]), (TRUNCATIONS[2], None), (None, PADDINGS[3])]


def limit_cases(root: Path, device: str) -> Iterator[tuple[Any, bool, list[list[int]], tuple]]:
    """For each of :data:`LIMIT_CASES` and add_special_tokens True / False: (our tokenizer of that file on
    ``device``, add_special_tokens, HF's ``encode_batch`` ids of :data:`LIMIT_TEXTS`, the case)."""
    import tokenizers  # noqa: PLC0415

    from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: PLC0415

    for i, (trunc, pad) in enumerate(LIMIT_CASES):
        d = write_limited_json(root / f"t{i}", trunc, pad)
        ours = BPETokenizer.from_pretrained(d, device=device)
        hf = tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))
        for specials in (True, False):
            yield ours, specials, [e.ids for e in hf.encode_batch(LIMIT_TEXTS, add_special_tokens=specials)], \
                (trunc, pad)


def write_limited_json(directory: Path, truncation: dict | None, padding: dict | None) -> Path:
    """A Llama-3-style tokenizer.json (gpt2's ranks, a ``<s>`` BOS template) with these ``truncation`` and
    ``padding`` fields; returns its directory."""
    path = write_tokenizer_json(directory, "gpt2", family_pattern=LLAMA3_PATTERN, bos="<s>",
                                added=[{"id": 50256, "content": "<s>"}])
    doc = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**doc, "truncation": truncation, "padding": padding}, ensure_ascii=False),
                    encoding="utf-8")
    return directory


# ids right after the ranks (cl100k: 0 .. 100255), as in Llama-3's own file (HF renumbers added tokens past a gap)
LLAMA3_ADDED = [{"id": 100256 + i, "content": c} for i, c in enumerate(
    ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"])] + [
    {"id": 100261, "content": "<|plain|>", "special": False, "normalized": True}]

# ------------------------------------------------------------------------------------------ texts

BPE_ADVERSARIAL = [
    "Hello world!  \n\n  x's THE'LL 12345 \t\r\n ok",
    "it's it'S IT'S it'd it'D we're WE'RE we've WE'VE i'm I'M we'll WE'LL WE'Ll 'ſ x'ſ 's 'S 't 'T",
    "' s '' 's's ''ll '.'d a'b'c'd'e",
    "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890 ١٢٣٤ ½¾ Ⅻ ①②③ 𝟏𝟐𝟑",
    "  \n \r\n\t\t \u00a0\u3000 \u2028 \u2029\x0b\x0c\x85 x  \n\n\n   y\r\r\r z \t \n",
    "line\nline\r\nline\rline\n\n\nline \n line\t\nline",
    "trailing spaces   ", "   ", "\n", "\r\n", " \n ", "x\n", " x", "  x", "\t\tx",
    "emoji 😀👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇩🇪 ❤️ 🧑🏿‍💻 x😀y 1😀2",
    "e\u0301 a\u0300\u0301 x\u0327\u0328 \u0301 alone .\u0301 1\u0301 \u0301\u0301A ÉCOLE\u0301s CamelCase McDonald'S",
    "中文字符测试，日本語のテキスト、한국어 텍스트 ภาษาไทยไม่มีช่องว่าง ພາສາລາວ ខ្មែរ မြန်မာ",
    "Ελληνικά ΣΟΦΙΑ σοφία, Кириллица ПРИВЕТ, العربية مرحبا, עברית, हिन्दी, தமிழ்",
    "def f(x):\n    return x**2 + 1  # comment\n\tif a<b and c>=d: print(\"hi\")\n",
    "https://example.com/a/b?c=d&e=f#g path/to/file.py C:\\dir\\x ../.. //x /// a/b/c",
    "<|endoftext|> <|fim_prefix|>x<|fim_suffix|> <|begin_of_text|><|eot_id|> <|im_start|>user<|im_end|> <|endoftext|",
    "a" * 300 + " " + "ab" * 200 + " " + "1" * 50 + " " + "!" * 77 + " " + " " * 40 + "x",
    "ǅungla ǈ ǋ ᾈ Ⅻx xⅫ ʰʲ ⁿx x\u02b0 \u3005\u3005 ーー カタカナー",
    "\x00\x01\x07 ctrl \x7f \ufeff bom \u200b zw \u200d zwj \ufffd repl \ue000 pua",
    "",
]


def every_code_point_texts(step: int = 4096) -> list[str]:
    """Every code point but the surrogates, each in contexts that exercise the scanners' classes."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    out = []
    for i in range(0, len(cps), step):
        out.append("".join(f"x{chr(c)} {chr(c)}{chr(c)}1{chr(c)}'s\n" for c in cps[i:i + step]))
    return out


_POOL = ("abcXYZ", "0123456789", " \t\n\r\u00a0\u3000\u2028", "'", ".,!?-/()[]<>#", "éÉçÇßſ", "\u0301\u0327\u0308",
         "中文日本語한국어", "😀👍🏽\u200d❤️", "٠١٢३४", "ǅǈᾈⅫʰ", "ΣσςЖж")


def random_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(0, 30)):
            pool = rng.choice(_POOL)
            parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 6))))
        out.append("".join(parts))
    return out
