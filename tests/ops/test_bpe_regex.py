"""The kernels' regex engine (ops/bpe/regex): pieces exact to HF's Split (Oniguruma) for every behaviour and
``invert``, equal to the hand-written scanners on their own texts, tokenizer.json files with each pre-tokenizer
construct exact to HF ``encode_batch``, linear time, and load errors that name an unsupported construct."""

from __future__ import annotations

import json
import time

import bpe_oracles as O
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triton_textops.errors import ConfigError
from triton_textops.ops.bpe import formats as F
from triton_textops.ops.bpe.pretok import SCANNERS, class_tables, pretoken_end
from triton_textops.ops.bpe.regex import BYTE_LEVEL_PATTERN, RegexSplitter
from triton_textops.ops.bpe.regex.dfa import _none as no_dfa
from triton_textops.ops.bpe.tokenizer import BPETokenizer
from triton_textops.ops.core import kernels as K

tokenizers = pytest.importorskip("tokenizers")

AUSTEN = [json.loads(x)["text"] for x in
          (O.Path(__file__).parents[2] / "triton_textops" / "data" / "austen-paragraphs.jsonl").read_text().splitlines()]
CODE = (O.Path(__file__).parents[2] / "triton_textops" / "ops" / "bpe" / "regex" / "match.py").read_text().split("\n\n")
MULTILINGUAL = [
    "中文没有空格的句子测试一下。日本語のテキストとカタカナ、ひらがな。한국어도요",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ ລາວ", "مرحبا بالعالم ١٢٣ العربية", "नमस्ते दुनिया हिन्दी १२३",
    "👨‍👩‍👧‍👦 family 🏳️‍🌈 flag 🧑🏿‍💻 x😀y", "e\u0301\u0301 a\u0300 \u0301start ÅÉ\u030a",
    "    indented\n\t\ttabs\r\n\r\n\n   \n", "x" + " " * 50 + "y" + "\n" * 20 + "z\u3000\u3000w",
]
TEXTS = AUSTEN[:120] + CODE[:40] + O.BPE_ADVERSARIAL + MULTILINGUAL + O.random_texts(7, 150)
# DeepSeek-V3's pre-tokenizer (its tokenizer.json, deepseek-ai/DeepSeek-V3): three Isolated Splits, then ByteLevel
DEEPSEEK = [r"\p{N}{1,3}", r"[一-龥぀-ゟ゠-ヿ]+",
            r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""]  # noqa: E501
# every 31st code point in the contexts of bpe_oracles.every_code_point_texts (the full set: the chain and scanner
# tests)
SAMPLED_CODE_POINTS = ["".join(f"x{chr(c)} {chr(c)}{chr(c)}1{chr(c)}'s\n" for c in range(lo, min(lo + 31 * 4096, 0x110000), 31)
                               if not 0xD800 <= c < 0xE000) for lo in range(0, 0x110000, 31 * 4096)]
BEHAVIOURS = ["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]
# patterns that exercise the constructs: classes, negations and intersections, lazy / possessive / intervals,
# (?i:), anchors, lookaround, word boundaries
CONSTRUCTS = [
    r"\p{N}{1,3}", r"\s+", r"[\p{L}&&[^a-z]]+", r"(?i:the|and)", r"\d+?x|\d", r"[a-z]++|\p{Lu}",
    r"\w+(?=\s)|\S", r"(?<=\s)\p{L}+", r"\bth\p{L}*", r"^\s*\p{L}+|\p{P}$", r"[^\s\p{L}\p{N}]+[\r\n]*",
    r"\p{Han}+|\p{Hiragana}+|\p{Katakana}+", r"[\x{4E00}-\x{9FA5}]|\u3000", r"(?:ab|a)(?:c|bcd)", r"\p{N}{2}?\p{L}", r"x(?i)ab|cd", r"'{1,2}+\p{L}",
    r"[^\p{L}\p{N}\s]?[\p{Lu}\p{Lt}]*[\p{Ll}\p{M}]+(?i:'s|'t)?",
]


def hf_pieces(levels: list[tuple[str, str, bool]], text: str) -> list[tuple[int, int]]:
    """HF's pre_tokenize_str pieces of ``text`` as byte offsets."""
    steps = [tokenizers.pre_tokenizers.Split(tokenizers.Regex(p), _hf_name(b), invert=i) for p, b, i in levels]
    pre = tokenizers.pre_tokenizers.Sequence(steps) if len(steps) > 1 else steps[0]
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    cum = np.concatenate([[0], np.cumsum(1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000))])
    return [(int(cum[s]), int(cum[e])) for _, (s, e) in pre.pre_tokenize_str(text)]


def _hf_name(behaviour: str) -> str:
    return {"MergedWithPrevious": "merged_with_previous", "MergedWithNext": "merged_with_next"}.get(
        behaviour, behaviour.lower())


def _mismatches(levels: list, texts: list[str]) -> list:
    got = RegexSplitter(levels, "onig").pre_tokenize(texts)
    return [(t[:40], g[:6], hf_pieces(levels, t)[:6]) for t, g in zip(texts, got) if g != hf_pieces(levels, t)][:3]


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
@pytest.mark.parametrize("invert", [False, True])
def test_split_behaviours_as_hf(behaviour: str, invert: bool) -> None:
    texts = O.BPE_ADVERSARIAL + MULTILINGUAL + O.random_texts(3, 40)
    for pattern in (r"\p{N}{1,3}", r"\s+", DEEPSEEK[2], r"[\p{P}\p{S}]"):
        assert not _mismatches([(pattern, behaviour, invert)], texts), pattern


@pytest.mark.parametrize("pattern", CONSTRUCTS)
def test_constructs_as_oniguruma(pattern: str) -> None:
    assert not _mismatches([(pattern, "Isolated", False)], TEXTS)


def test_deepseek_chain_pieces_as_hf() -> None:
    levels = [(p, "Isolated", False) for p in DEEPSEEK]
    assert not _mismatches(levels, TEXTS + O.every_code_point_texts(1 << 16))


def test_mixed_chain_pieces_as_hf() -> None:
    levels = [(r"\p{N}+", "MergedWithNext", False), (r"\s", "Contiguous", True), (r"[\p{P}]", "Removed", False),
              (BYTE_LEVEL_PATTERN, "MergedWithPrevious", False)]
    assert not _mismatches(levels, TEXTS)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["ab", "AB", "1", "123", " ", "  ", "\n", "\r\n", "'s", "'LL", ".", "!?", "中文",
                                 "カナ", "e\u0301", "😀", "\u00a0", "\t", "x1y", "Ω"]), max_size=20).map("".join),
       st.sampled_from(BEHAVIOURS), st.booleans())
def test_hypothesis_chains_as_hf(text: str, behaviour: str, invert: bool) -> None:
    levels = [(DEEPSEEK[0], behaviour, invert), (DEEPSEEK[2], "Isolated", False)]
    assert RegexSplitter(levels, "onig").pre_tokenize([text])[0] == hf_pieces(levels, text)


@pytest.mark.parametrize("flavor", ["onig", "fancy"])
def test_dfa_equals_the_vm_alone(flavor: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The anchored DFA (regex/dfa.py, with the VM where it hands over) gives the VM's pieces: each construct
    (lookarounds, word boundaries, anchors: those with a DFA and those without), DeepSeek's chain, on hard texts;
    so does the DFA alone, each position tried in turn (the encode kernel's variant without the VM), wherever the
    DFA is complete."""
    import triton_textops.ops.bpe.regex as R  # noqa: PLC0415

    chains = [[(p, "Isolated", False)] for p in CONSTRUCTS] + [[(p, "Isolated", False) for p in DEEPSEEK]]
    texts = O.BPE_ADVERSARIAL + MULTILINGUAL + O.random_texts(11, 60) + AUSTEN[:20] + SAMPLED_CODE_POINTS[:4]
    dfa_alone = K.kernel(R.match.rx_pieces_item, (("rx_find", "rx_find_dfa"),))
    with_dfa = complete = 0
    for levels in chains:
        fast = RegexSplitter(levels, flavor)
        vm = RegexSplitter(levels, flavor)
        vm.dfa = no_dfa(len(levels), vm.dfa.ccls)
        with_dfa += fast.dfa.trans.shape[0] > 0
        got, want = fast.pre_tokenize(texts), vm.pre_tokenize(texts)
        assert [(t[:30], g[:5], w[:5]) for t, g, w in zip(texts, got, want) if g != w][:2] == [], levels
        if fast.dfa_only:
            complete += 1
            with monkeypatch.context() as m:
                m.setattr(R, "PIECES", dfa_alone)
                got = fast.pre_tokenize(texts)
            assert [(t[:30], g[:5], w[:5]) for t, g, w in zip(texts, got, want) if g != w][:2] == [], levels
    assert complete >= len(chains) // 2
    assert with_dfa == len(chains) - (flavor == "onig")  # (all but Oniguruma's ^...$: line anchors have no DFA)


def test_dfa_built_for_the_real_patterns() -> None:
    """The files that need the compiled path get its fast path (a DFA), not the VM alone."""
    for levels, flavor in (([(p, "Isolated", False) for p in DEEPSEEK], "onig"), ([(F._O200K, "Removed", True)], "onig"),
                           ([(O.TIKTOKEN_PATTERNS["cl100k_base"], "Isolated", False)], "fancy"),
                           ([(BYTE_LEVEL_PATTERN, "Isolated", False)], "onig")):
        assert RegexSplitter(levels, flavor).dfa.trans.shape[0] > 0, levels
    assert RegexSplitter([(r"^\s*\p{L}+|\p{P}$", "Isolated", False)], "onig").dfa.trans.shape[0] == 0


# --------------------------------------------------------------------------- the program vs the scanners


@K.device
def scanner_pieces_item(t, data, offsets, ctab, out, cnt):  # noqa: ANN001, ANN201
    """Pieces of text ``t`` by the hand-written scanner the kernel variant binds as ``pretoken_end``."""
    lo = offsets[t]
    hi = offsets[t + 1]
    i = lo
    c = 0
    while i < hi:
        j = pretoken_end(data, i, hi, ctab)
        out[0, lo + c] = i - lo
        out[1, lo + c] = j - lo
        c += 1
        i = j
    cnt[t] = c


def scanner_pieces(family: int, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, counts) as :meth:`RegexSplitter.piece_arrays` gives them, by the family's scanner."""
    raw = [t.encode() for t in texts]
    data = np.frombuffer(b"".join(raw) or b"\0", dtype=np.uint8).copy()
    offsets = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in raw], out=offsets[1:])
    out = np.zeros((2, max(int(offsets[-1]), 1)), dtype=np.int64)
    cnt = np.zeros(len(raw), dtype=np.int64)
    K.launch("cpu", K.kernel(scanner_pieces_item, (("pretoken_end", SCANNERS[family]),)), len(raw), data, offsets,
             class_tables("cpu", np), out, cnt)
    rows = np.concatenate([np.arange(offsets[t], offsets[t] + cnt[t]) for t in range(len(raw))])
    return out[0, rows], out[1, rows], cnt


@pytest.mark.parametrize("pattern", list(F.PATTERNS))
def test_program_equals_each_scanner(pattern: str) -> None:
    """The compiled program of each scanner's pattern, read as the engine the scanner serves it for, gives the
    scanner's pieces on the scanners' own test texts (tests/bpe_oracles.py: adversarial, every code point in
    context for each scanner, random). tiktoken's cl100k form (``\\s++$``) differs at a text-final whitespace
    run with a line break (:func:`test_cl100k_tiktoken_form_is_not_its_scanners`): compared on texts that end
    otherwise."""
    family = F.PATTERNS[pattern]
    flavor = "fancy" if "++" in pattern else "onig"  # (tiktoken's possessive forms are fancy-regex's)
    full = pattern in (F._O200K, O.LLAMA3_PATTERN, BYTE_LEVEL_PATTERN, O.TIKTOKEN_PATTERNS["qwen2"])
    texts = O.BPE_ADVERSARIAL + O.random_texts(1, 200) + MULTILINGUAL + (
        O.every_code_point_texts(1 << 15) if full else SAMPLED_CODE_POINTS)
    if pattern not in F.FANCY_SCANNED:
        texts = [t + "x" for t in texts]
    got = RegexSplitter([(pattern, "Isolated", False)], flavor).piece_arrays(texts)
    want = scanner_pieces(family, texts)
    assert np.array_equal(got[2], want[2]), [t[:40] for t, a, b in zip(texts, got[2], want[2]) if a != b]
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_cl100k_tiktoken_form_is_not_its_scanners() -> None:
    """tiktoken's own cl100k pattern takes a text-final whitespace run with a line break whole (``\\s++$``, fancy
    regex's ``$``: the text's end); the scanner (the tokenizer.json form) ends the piece after the line break.
    tiktoken itself, with a vocabulary where the two differ, agrees with the compiled program, which a rank file
    with that pattern therefore gets; a tokenizer.json with it (Oniguruma reads it otherwise) too."""
    tiktoken = pytest.importorskip("tiktoken")
    pattern = O.TIKTOKEN_PATTERNS["cl100k_base"]
    assert pattern not in F.FANCY_SCANNED and pattern not in F.ONIG_SCANNED
    ranks = {bytes([i]): i for i in range(256)} | {b" \n ": 256, b" \n": 257, b"\r  ": 258, b"\r": 259}
    enc = tiktoken.Encoding("t", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    texts = [" \n ", "x\r  ", "a \n\n ", "\n\n\t"]
    pieces = RegexSplitter([(pattern, "Isolated", False)], "fancy").pre_tokenize(texts)
    assert [[t.encode()[a:b] for a, b in p] for t, p in zip(texts, pieces)] == \
        [[enc.decode_single_token_bytes(i) for i in enc.encode_ordinary(t)] for t in texts[:2]] + \
        [[b"a", b" \n\n "], [b"\n\n\t"]]
    assert scanner_pieces(F.CL100K, texts[:1])[2].tolist() == [2]


# --------------------------------------------------------------------------- tokenizer.json files


def _write(tmp_path: O.Path, name: str, pre_tokenizer: dict) -> O.Path:
    d = tmp_path / name
    path = O.write_tokenizer_json(d, "gpt2", family_pattern=O.LLAMA3_PATTERN)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["pre_tokenizer"] = pre_tokenizer
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return d


def _split(pattern: str, behaviour: str = "Isolated", invert: bool = False) -> dict:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behaviour, "invert": invert}


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
FILES = {  # the pre-tokenizer shapes of real files
    "deepseek_v3": {"type": "Sequence", "pretokenizers": [*map(_split, DEEPSEEK), BYTE_LEVEL]},
    "gpt4o_removed_invert": {"type": "Sequence", "pretokenizers": [_split(F._O200K, "Removed", True), BYTE_LEVEL]},
    "split_then_byte_level_regex": {"type": "Sequence", "pretokenizers": [
        _split(r"\p{N}{1,3}"), {**BYTE_LEVEL, "use_regex": True}]},
    "byte_level_no_regex": BYTE_LEVEL,
    "string_split_merged": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": "."}, "behavior": "MergedWithPrevious", "invert": False},
        _split(r"\s+", "MergedWithNext"), BYTE_LEVEL]},
    "contiguous_removed": {"type": "Sequence", "pretokenizers": [
        _split(r"\p{L}", "Contiguous"), _split(r"[\p{P}\p{S}]", "Removed", True), BYTE_LEVEL]},
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("regex_files")
    return {name: _write(root, name, pre) for name, pre in FILES.items()}


@pytest.mark.parametrize("name", list(FILES))
def test_tokenizer_json_as_hf(name: str, files: dict) -> None:
    d = files[name]
    ours = BPETokenizer.from_pretrained(d)
    hf = tokenizers.Tokenizer.from_file(str(d / "tokenizer.json"))
    texts = TEXTS + SAMPLED_CODE_POINTS
    got = ours.encode(texts).tolist()
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    assert [t[:40] for t, g, w in zip(texts, got, want) if g != w] == []
    if name == "gpt4o_removed_invert":
        assert ours.spec.family == F.O200K  # (the pieces of Isolated: the hand-written scanner)
    elif name != "byte_level_no_regex":
        assert ours.spec.family == F.REGEX


def test_adversarial_megabyte_linear() -> None:
    """1 MB adversarial texts through DeepSeek's chain: one pass each (no backtracking blow-up): the 1 MB text
    takes at most ~20x the 100 KB one (timings printed)."""
    sp = RegexSplitter([(p, "Isolated", False) for p in DEEPSEEK], "onig")
    sp.pre_tokenize(["warm 1"])
    for unit in (" ", "a", "1", "!", " \n", "'s", "中", "a1!", " \t\r\n x", "e\u0301"):
        small, big = unit * (100_000 // len(unit.encode())), unit * (1_000_000 // len(unit.encode()))
        t0 = time.perf_counter()
        sp.pre_tokenize([small])
        t1 = time.perf_counter()
        got = sp.pre_tokenize([big])[0]
        t2 = time.perf_counter()
        print(f"{unit!r}: 100 KB {t1 - t0:.3f} s, 1 MB {t2 - t1:.3f} s")
        assert got[-1][1] == len(big.encode())
        assert t2 - t1 < 20 * (t1 - t0) + 0.5


@pytest.mark.parametrize("pattern, what", [
    (r"(a)\1", "escape \\1"), (r"(?<=ab)c", "lookbehind"), (r"(?:ab)++", "possessive"), (r"a*", "empty string"),
    (r"(?x) a", "the group"), (r"\p{Foo}", "\\p{Foo}"), (r"[[:alpha:]]", "POSIX"), (r"(?>ab|a)c", "atomic"),
    (r"(?i:é)", "non-ASCII letter"), (r"(?=a|b)c", "lookahead"), (r"\G", "escape \\G"), (r"(a*)*b", "repetition"),
])
def test_unsupported_constructs_are_named(pattern: str, what: str) -> None:
    with pytest.raises(ConfigError, match=what.replace("\\", "\\\\").replace("{", "\\{")):
        RegexSplitter([(pattern, "Isolated", False)], "onig")


def test_unsupported_pattern_in_a_file_fails_load(tmp_path: O.Path) -> None:
    d = _write(tmp_path, "bad", {"type": "Sequence", "pretokenizers": [_split(r"(\w)\1"), BYTE_LEVEL]})
    with pytest.raises(ConfigError, match=r"escape \\1"):
        BPETokenizer.from_pretrained(d)
    d = _write(tmp_path, "bad2", {"type": "Sequence", "pretokenizers": [_split(r"\s"), {**BYTE_LEVEL,
                                                                                          "add_prefix_space": True}]})
    with pytest.raises(ValueError, match="add_prefix_space"):
        BPETokenizer.from_pretrained(d)


def test_inline_flag_scope_per_engine() -> None:
    """``x(?i)ab|cd``: Oniguruma reads ``x(?i:ab|cd)``, fancy-regex ``x(?i:ab)|(?i:cd)`` (each engine checked)."""
    tiktoken = pytest.importorskip("tiktoken")
    pattern, texts = r"x(?i)ab|cd", ["xab CD cd xAB", "CDxAbcD"]
    assert RegexSplitter([(pattern, "Removed", True)], "onig").pre_tokenize(texts) == \
        [hf_pieces([(pattern, "Removed", True)], t) for t in texts]
    enc = tiktoken.Encoding("p", pat_str=pattern, mergeable_ranks={bytes([i]): i for i in range(256)},
                            special_tokens={})
    got = RegexSplitter([(pattern, "Removed", True)], "fancy").pre_tokenize(texts)
    assert [b"".join(t.encode()[a:b] for a, b in p) for t, p in zip(texts, got)] == \
        [bytes(enc.encode_ordinary(t)) for t in texts]
    assert got[0] == [(0, 3), (4, 6), (7, 9), (10, 13)]
