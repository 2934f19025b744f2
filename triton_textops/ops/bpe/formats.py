"""The files a byte-level BPE user brings, read offline into one :class:`BPESpec`.

- tiktoken rank files (``base64(bytes) rank`` per line): the pattern and special tokens of each named encoding
  are tiktoken's own (``tiktoken_ext/openai_public.py``); ``qwen2`` is Qwen's (``qwen.tiktoken``: its pattern,
  ``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``, ``<|extra_0..204|>`` from id 151643, and NFC).
- HF ``tokenizer.json`` (``model.type`` BPE) with ``tokenizer_config.json`` beside it when present.
- GPT-2's ``encoder.json`` + ``vocab.bpe``.

Everything a format says that the kernels do not implement is a :class:`ValueError` naming the field, never a
silent approximation. A pattern is recognized by its exact string (:data:`PATTERNS`).
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from triton_textops.ops.core.files import check_text
from triton_textops.ops.core.hf_json import AddedToken, Padding, Truncation, padding, read_config, truncation
from triton_textops.ops.core.validate import (
    check_tokenizer_json,
    gpt2_vocab,
    merge_lines,
    rank_lines,
    read_json,
)

# ------------------------------------------------------------------------------------------- patterns
GPT2, CL100K, QWEN2, O200K, WHOLE, REGEX = range(6)  # pre-tokenizer families (WHOLE: a segment is one pre-token;
# REGEX: the compiled regex engine, ops/bpe/regex, over ``BPESpec.splits``)
_O200K = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+""",
])
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""  # (Whisper's too)
CL100K_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""  # noqa: E501 (Llama-3's)
PATTERNS = {  # the exact strings recognized, each with its scanner family
    GPT2_PATTERN: GPT2,
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?[\p{L}]+| ?[\p{N}]+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""": GPT2,
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""": GPT2,
    CL100K_PATTERN: CL100K,
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""": CL100K,  # noqa: E501
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""": QWEN2,  # noqa: E501
    _O200K: O200K,
}

# the scanners are exact to a pattern as each engine reads it: tiktoken's possessive forms are not Oniguruma's
# (``{1,3}+`` repeats the interval, ``$`` ends a line), and cl100k's ``\s++$`` takes a text-final whitespace run
# whole where the scanner (the tokenizer.json form's ``\s*[\r\n]+`` first) stops after its last line break
ONIG_SCANNED = {p: f for p, f in PATTERNS.items() if "++" not in p}
FANCY_SCANNED = {p: f for p, f in PATTERNS.items() if not ("++" in p and f == CL100K)}

# tiktoken's named encodings: (family, special tokens, NFC)
_ENDOFTEXT, _FIM = "<|endoftext|>", ("<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>")
ENCODINGS: dict[str, tuple[int, dict[str, int], bool]] = {
    "gpt2": (GPT2, {_ENDOFTEXT: 50256}, False),
    "r50k_base": (GPT2, {_ENDOFTEXT: 50256}, False),
    "p50k_base": (GPT2, {_ENDOFTEXT: 50256}, False),
    "cl100k_base": (CL100K, {_ENDOFTEXT: 100257, _FIM[0]: 100258, _FIM[1]: 100259, _FIM[2]: 100260,
                             "<|endofprompt|>": 100276}, False),
    "o200k_base": (O200K, {_ENDOFTEXT: 199999, "<|endofprompt|>": 200018}, False),
    "qwen2": (QWEN2, {t: 151643 + i for i, t in enumerate(
        (_ENDOFTEXT, "<|im_start|>", "<|im_end|>") + tuple(f"<|extra_{i}|>" for i in range(205)))}, True),
}

RANK_COUNTS = {"gpt2": 50256, "r50k_base": 50256, "p50k_base": 50280, "cl100k_base": 100256, "o200k_base": 199998,
               "qwen2": 151643}  # the ranks 0 .. n - 1 of each named encoding's file (tiktoken's explicit_n_vocab)


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map (the alphabet of byte-level vocabularies)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_CHAR = bytes_to_unicode()
CHAR_BYTE = {c: b for b, c in BYTE_CHAR.items()}


def _unmap(token: str) -> bytes | None:
    """The bytes of a byte-level vocabulary string, or None when a character is outside the alphabet."""
    try:
        return bytes(CHAR_BYTE[c] for c in token)
    except KeyError:
        return None


@dataclass
class BPESpec:
    """Everything the kernels need of a byte-level BPE tokenizer, format-independent.

    ``vocab``: bytes -> id of the model's tokens. ``merges``: ranked (left bytes, right bytes) pairs (HF / GPT-2
    files); ``None`` for tiktoken rank files, whose rule is "merge the adjacent pair whose concatenation has the
    lowest rank" (:meth:`pair_table` turns both into one (left id, right id) -> (rank, result) table).
    ``ignore_merges``: a pre-token that is itself a token is emitted whole (tiktoken always; HF when set)."""

    vocab: dict[bytes, int]
    merges: list[tuple[bytes, bytes]] | None
    family: int
    ignore_merges: bool
    added: list[AddedToken] = field(default_factory=list)
    nfc: bool = False  # the normalizer is NFC alone (the kernels' NFC path)
    normalizer: Any = None  # any other: a Program of ops.sentencepiece.normalize (None: no normalizer, or NFC)
    add_prefix_space: bool = False
    prefix: list[int] = field(default_factory=list)  # TemplateProcessing's special ids before / after the text
    suffix: list[int] = field(default_factory=list)
    decode_bytes: dict[int, bytes] = field(default_factory=dict)  # ids whose decoded bytes are not vocab bytes
    source: str = ""
    config: dict[str, Any] = field(default_factory=dict)  # tokenizer_config.json, when present
    match_added: bool = False  # added tokens are matched by default (HF's encode); rank files: only those allowed
    truncation: Truncation | None = None  # tokenizer.json's, which HF's encode applies (ops.bpe.limits)
    padding: Padding | None = None
    splits: list[tuple[str, str, bool]] = field(default_factory=list)  # REGEX: (pattern, behaviour, invert) levels
    flavor: str = "onig"  # the engine whose regex semantics the splits follow (onig: HF; fancy: tiktoken)

    @property
    def n_ids(self) -> int:
        ids = list(self.vocab.values()) + [a.id for a in self.added]
        return max(ids) + 1 if ids else 0

    def pair_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(left id, right id, rank, result id) of every ranked merge (``merges`` files), as int64 arrays. Rank
        files' pairs (every split of every token) are built from the vocabulary table by
        :class:`~triton_textops.ops.bpe.merge.Vocab`. A pair listed twice has its last rank (HF's merge map)."""
        vocab = self.vocab
        pairs: dict[tuple[int, int], tuple[int, int]] = {}
        for r, (a, b) in enumerate(self.merges or ()):
            ia, ib, ic = vocab.get(a), vocab.get(b), vocab.get(a + b)
            if ia is None or ib is None or ic is None:
                continue  # (a merge over a token that is not byte-level: never applies)
            pairs.pop((ia, ib), None)
            pairs[ia, ib] = (r, ic)
        left = [p[0] for p in pairs]
        right = [p[1] for p in pairs]
        rank = [v[0] for v in pairs.values()]
        result = [v[1] for v in pairs.values()]
        return tuple(np.asarray(x, dtype=np.int64) for x in (left, right, rank, result))  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------- readers


def _read_bytes(path: str | os.PathLike, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} not found: {path}") from None


def read_tiktoken(path: str | os.PathLike, encoding: str) -> BPESpec:
    """A ``.tiktoken`` rank file with the pattern and specials of the named encoding."""
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {', '.join(ENCODINGS)}, got {encoding!r}")
    family, specials, nfc = ENCODINGS[encoding]
    data = _read_bytes(path, "tiktoken rank file")
    check_text(data, path, "tiktoken rank file")
    vocab = rank_lines(data, path)
    _check_bytes(vocab, path)
    n = RANK_COUNTS[encoding]
    if len(vocab) != n or max(vocab.values()) >= n + len(specials):  # (p50k: no rank at its special's id)
        # warned, not refused: tiktoken loads such a file under the encoding's pattern and specials too (and the
        # hostile-file layer accepts what tiktoken accepts), but a near-miss is never silent
        warnings.warn(f"{path}: {len(vocab)} ranks (0 .. {max(vocab.values())}), but encoding {encoding!r} has {n} "
                      f"ranks: if it is a file of its own, load it with pattern= and special_tokens=", stacklevel=3)
    clash = sorted(i for i in specials.values() if i in set(vocab.values()))
    if clash:
        raise ValueError(f"{path}: special token ids {clash[:5]} of encoding {encoding!r} are ranks of the file: "
                         f"is it the {encoding} file?")
    added = [AddedToken(t.encode(), i) for t, i in specials.items()]
    return BPESpec(vocab, None, family, True, added, nfc=nfc, source=f"{path} ({encoding})")


def _check_bytes(vocab: dict[bytes, int], where: Any) -> None:
    missing = [b for b in range(256) if bytes([b]) not in vocab]
    if missing:
        raise ValueError(f"{where}: the vocabulary lacks single-byte tokens for bytes {missing[:8]}: not a byte-level "
                         "BPE vocabulary")


def read_gpt2_files(encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike) -> BPESpec:
    """GPT-2's original ``encoder.json`` (token string -> id) and ``vocab.bpe`` (ranked merges)."""
    encoder = gpt2_vocab(read_json(encoder_json, "encoder.json"), encoder_json)
    merges = _byte_merges(merge_lines(_read_bytes(vocab_bpe, "vocab.bpe"), vocab_bpe, encoder))
    vocab = _byte_vocab(encoder, encoder_json, "")
    spec = BPESpec(vocab, merges, GPT2, False, source=f"{encoder_json} + {vocab_bpe}")
    if "<|endoftext|>" in encoder:
        spec.added = [AddedToken(b"<|endoftext|>", encoder["<|endoftext|>"])]
    return spec


def _byte_merges(pairs: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """The merges as bytes; one with a character outside the byte-level alphabet is dropped (a byte-level
    pre-tokenizer never makes that symbol, so HF never applies it either)."""
    out = []
    for a, b in pairs:
        x, y = _unmap(a), _unmap(b)
        if x is not None and y is not None:
            out.append((x, y))
    return out


def _byte_vocab(vocab: dict[str, int], where: Any, field_name: str) -> dict[bytes, int]:
    out: dict[bytes, int] = {}
    for tok, i in vocab.items():
        b = _unmap(tok)
        if b is None:
            continue  # not a byte-level string (an added token's text listed in the vocab): reachable only whole
        out[b] = i
    _check_bytes(out, f"{where} {field_name}".strip())
    return out


def _added_flags(t: dict) -> tuple[bool, bool, bool, bool, bool]:
    """(special, normalized, lstrip, rstrip, single_word) of an ``added_tokens`` entry, with HF's defaults (in
    :class:`AddedToken`'s order)."""
    special = bool(t.get("special", False))
    return (special, bool(t.get("normalized", not special)), bool(t.get("lstrip", False)),
            bool(t.get("rstrip", False)), bool(t.get("single_word", False)))


def _hf_added_ids(tokens: list[dict], str_vocab: dict[str, int], where: Any) -> list[tuple[str, int, tuple]]:
    """``added_tokens`` as HF's ``Tokenizer.from_file`` takes them: (content, the id HF gives it,
    :func:`_added_flags`), in the order HF matches them (the special ones, once per content, then the others whose
    content is not a special's).

    HF does not read an added token's ``id``: it adds the tokens in file order, a content the model has (or an
    earlier added token has) keeping that id, a new one getting the next id after the model's vocabulary and the
    ids added so far (a file whose ids disagree only gets a warning). An empty content, or a repeat of an earlier
    entry in every field, is skipped. A match is stripped and checked as a single word by the flags of the last
    entry of its id, not its own."""
    size = len(str_vocab)  # (the BPE model's get_vocab_size: its entries)
    ids: dict[str, int] = {}
    top = -1  # the largest id given so far (a running max: files list thousands of added tokens)
    kept: list[tuple[str, tuple]] = []
    seen: set[tuple[str, tuple]] = set()
    for n, t in enumerate(tokens):
        content = t.get("content") if isinstance(t, dict) else None
        if not isinstance(content, str):
            raise ValueError(f"{where}: added_tokens[{n}].content = {json.dumps(content)[:80]} is not a string")
        entry = (content, _added_flags(t))  # (HF's AddedToken equality: not the id)
        if not content or entry in seen:
            continue
        seen.add(entry)
        tid = ids.get(content, str_vocab.get(content))
        if tid is None:
            tid = size if top < 0 or (top < size and size) else top + 1
        ids[content] = tid = int(tid)
        top = max(top, tid)
        kept.append(entry)
    specials: dict[str, tuple] = {}
    for content, flags in kept:
        if flags[0]:
            specials.setdefault(content, flags)
    rest = [(c, f) for c, f in kept if not f[0] and c not in specials]
    last = {ids[c]: f for c, f in kept}
    return [(c, ids[c], f[:2] + last[ids[c]][2:]) for c, f in [*specials.items(), *rest]]


def read_tokenizer_json(directory: str | os.PathLike, *, as_transformers: bool = False) -> BPESpec:
    """HF ``tokenizer.json`` (+ ``tokenizer_config.json``): a byte-level BPE model, or a ValueError naming the
    field this package does not implement. Its ``truncation`` / ``padding`` are kept (HF's ``Tokenizer.encode``
    applies them: :mod:`~triton_textops.ops.bpe.limits`), unless ``as_transformers``: transformers' tokenizer turns
    them off for a call that does not ask for truncation or padding (the LLM models' reference)."""
    d = Path(directory)
    path = d / "tokenizer.json" if d.is_dir() else d
    doc = read_json(path)
    fc = check_tokenizer_json(doc, path, "BPE")
    model = doc["model"]
    where = str(path)

    def refuse(field_name: str, value: Any, why: str = "is not supported") -> None:
        fc.fail(field_name, value, why)
    for key, ok in (("dropout", (None,)), ("continuing_subword_prefix", (None, "")), ("end_of_word_suffix", (None, "")),
                    ("byte_fallback", (None, False))):
        if model.get(key) not in ok:
            refuse(f"model.{key}", model.get(key))
    str_vocab = fc.vocab(model["vocab"], "model.vocab")
    vocab = _byte_vocab(str_vocab, where, "model.vocab")
    merges = _byte_merges(fc.merges(model["merges"], str_vocab, "model.merges", model.get("continuing_subword_prefix")
                                    or ""))
    splits: list = []
    try:  # a pattern of the hand-written scanners, else the compiled regex engine
        family, prefix_space = _pre_tokenizer(doc.get("pre_tokenizer"), refuse)
    except ValueError:
        from triton_textops.ops.bpe.regex.hf import split_levels  # noqa: PLC0415 (regex imports the kernels)

        splits, prefix_space = split_levels(doc.get("pre_tokenizer"), refuse)
        family = REGEX if splits else WHOLE
    norm = doc.get("normalizer")
    nfc = False
    program = None
    if norm is not None:
        kinds = [n.get("type") for n in (norm.get("normalizers") if norm.get("type") == "Sequence" else [norm])]
        if kinds == ["NFC"]:
            nfc = True
        elif kinds:  # the normalizer program SentencePiece files run (one reader, one kernel stage for both)
            from triton_textops.ops.sentencepiece.normalize import from_json  # noqa: PLC0415

            program = from_json(norm, refuse)
            if not program.ops:
                program = None
    dec = doc.get("decoder")
    if dec is not None and dec.get("type") != "ByteLevel":
        refuse("decoder", dec, "is not supported (ByteLevel or none)")
    spec = BPESpec(vocab, merges, family, bool(model.get("ignore_merges", False)), nfc=nfc, normalizer=program,
                   add_prefix_space=prefix_space, source=where, match_added=True, splits=splits)
    for content, tid, flags in _hf_added_ids(doc.get("added_tokens") or [], str_vocab, where):
        spec.added.append(AddedToken(content.encode(), tid, *flags))
        if str_vocab.get(content) is None:  # HF decodes an added token by its text through the ByteLevel decoder
            mapped = _unmap(content)
            spec.decode_bytes[tid] = mapped if mapped is not None else content.encode()
    spec.prefix, spec.suffix = _template(doc.get("post_processor"), refuse)
    if not as_transformers:
        spec.truncation = truncation(doc.get("truncation"), refuse)
        spec.padding = padding(doc.get("padding"), refuse)
    spec.config = read_config(d if d.is_dir() else d.parent)
    return spec


def _pre_tokenizer(pre: Any, refuse: Any) -> tuple[int, bool]:
    """(family, add_prefix_space) of a ByteLevel / Split+ByteLevel pre-tokenizer."""
    steps = (pre.get("pretokenizers") or []) if pre and pre.get("type") == "Sequence" else [pre]
    family, prefix_space, byte_level = WHOLE, False, False
    for i, step in enumerate(steps):
        kind = (step or {}).get("type")
        name = f"pre_tokenizer.pretokenizers[{i}]" if len(steps) > 1 or (pre or {}).get("type") == "Sequence" \
            else "pre_tokenizer"
        if kind == "ByteLevel" and not byte_level and i == len(steps) - 1:
            byte_level = True
            prefix_space = bool(step.get("add_prefix_space", False))
            if prefix_space and family != WHOLE:  # (HF's ByteLevel adds its space to each piece the Split made)
                refuse(f"{name}.add_prefix_space", True, "after a Split is not supported (HF adds a space before "
                       "every piece of the Split that does not start with one)")
            if step.get("use_regex", True):
                if family != WHOLE:
                    refuse(f"{name}.use_regex", True, "after a Split is not supported")
                family = GPT2
        elif kind == "Split" and family == WHOLE and not byte_level:
            pat = (step.get("pattern") or {}).get("Regex")
            if pat not in ONIG_SCANNED:
                refuse(f"{name}.pattern", step.get("pattern"), "is not a known pattern (GPT-2, cl100k/Llama-3, "
                       "Qwen2, o200k: the exact strings)")
            if step.get("behavior") != "Isolated" and (step.get("behavior"), step.get("invert")) != ("Removed", True):
                refuse(f"{name}.behavior", [step.get("behavior"), step.get("invert")], "is not supported (Isolated; "
                       "Removed with invert: the same pieces, as these patterns match every character)")
            family = PATTERNS[pat]
        else:
            refuse(name, step, "is not supported (ByteLevel, or Split(Regex) then ByteLevel)")
    if not byte_level:
        refuse("pre_tokenizer", pre, "has no ByteLevel step: not a byte-level BPE")
    return family, prefix_space


def _token_id(value: Any, field_name: str, refuse: Any) -> int:
    """A post-processor's id: the kernels write ids as int32 (HF reads them as u32)."""
    if type(value) is not int or not 0 <= value < 1 << 31:
        refuse(field_name, value, "is not a token id (an integer 0 .. 2**31 - 1)")
    return value


def _template(post: Any, refuse: Any) -> tuple[list[int], list[int]]:
    """The special ids a post-processor adds before / after a single sequence: TemplateProcessing's, Roberta- and
    BertProcessing's (cls, the text, sep); in a Sequence, one of them (HF composes two oddly, or panics), and
    ByteLevel (offsets only)."""
    if post is None:
        return [], []
    steps = post.get("processors") if post.get("type") == "Sequence" else [post]
    if sum((step or {}).get("type") != "ByteLevel" for step in steps) > 1:
        refuse("post_processor.processors", [s.get("type") for s in steps], "has more than one processor that adds "
               "tokens (not supported)")
    prefix: list[int] = []
    suffix: list[int] = []
    for step in steps:
        kind = step.get("type")
        if kind == "ByteLevel":
            continue  # offsets only
        if kind in ("RobertaProcessing", "BertProcessing"):
            for key, side in (("cls", prefix), ("sep", suffix)):
                pair = step.get(key)
                if not (isinstance(pair, list) and len(pair) == 2):
                    refuse(f"post_processor.{key}", pair, "is not a [token, id] pair")
                side.append(_token_id(pair[1], f"post_processor.{key}[1]", refuse))
        elif kind == "TemplateProcessing":
            seen = False
            for item in step.get("single") or []:
                if "Sequence" in item:
                    if seen or item["Sequence"]["id"] != "A":
                        refuse("post_processor.single", step["single"], "is not supported (one sequence, $A)")
                    seen = True
                    continue
                sid = item.get("SpecialToken", {}).get("id")
                ids = (step.get("special_tokens") or {}).get(sid, {}).get("ids")
                if not isinstance(ids, list):
                    refuse("post_processor.special_tokens", sid, "is missing from the template's special_tokens")
                (suffix if seen else prefix).extend(_token_id(x, f"post_processor.special_tokens.{sid}.ids", refuse)
                                                    for x in ids)
            if not seen:
                refuse("post_processor.single", step.get("single"), "has no $A (not supported)")
        else:
            refuse("post_processor", post, "is not supported (TemplateProcessing, RobertaProcessing, BertProcessing, "
                   "ByteLevel)")
    return prefix, suffix  # (from the one step that adds tokens)
