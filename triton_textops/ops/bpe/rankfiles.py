"""Rank files with their own pattern and special tokens: a ``.tiktoken`` file given ``pattern=`` and
``special_tokens=``, the rank files of model families that fix both (:data:`LAYOUTS`: Meta's Llama-3 / 4
``tokenizer.model``, Whisper's), and Mistral's Tekken ``.json`` (exact to mistral-common's ``Tekkenizer``).

tiktoken encodes only what its pattern matches (the text between matches is dropped): as a Split, ``Removed``
with ``invert``. A pattern of the hand-written scanners (:data:`~triton_textops.ops.bpe.formats.FANCY_SCANNED`, whose
matches tile every text) keeps its scanner; any other runs on the compiled regex engine, read as fancy-regex.
Lines are read as tiktoken's ``load_tiktoken_bpe`` reads them (``base64.b64decode`` without validation: a token
written ``=`` is the empty token, which no text encodes to; its id decodes to nothing).
"""

from __future__ import annotations

import base64
import binascii
import os
import warnings

from triton_textops.errors import ConfigError
from triton_textops.ops.bpe import formats as F
from triton_textops.ops.core.files import check_text
from triton_textops.ops.core.hf_json import AddedToken
from triton_textops.ops.core.validate import check_tekken, read_json

# mistral-common 1.9.1's Tekkenizer.DEPRECATED_SPECIAL_TOKENS: the special tokens of Tekken files without a list
TEKKEN_OLD_SPECIALS = ("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                       "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]",
                       "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]")


def pattern_family(pattern: str) -> tuple[int, list[tuple[str, str, bool]]]:
    """(family, Split levels) of a tiktoken pattern: its scanner, else the regex engine."""
    family = F.FANCY_SCANNED.get(pattern)
    if family is not None:
        return family, []
    return F.REGEX, [(pattern, "Removed", True)]


def rank_lines(data: bytes, where: str) -> tuple[dict[bytes, int], list[int]]:
    """(token bytes -> rank, ranks of empty tokens) of a ``.tiktoken`` file's lines, as tiktoken reads them."""
    vocab: dict[bytes, int] = {}
    empty: list[int] = []
    for n, line in enumerate(data.splitlines(), 1):
        if not line:
            continue
        parts = line.split()
        try:
            tok, rank = parts
            b = base64.b64decode(tok)
            r = int(rank)
        except (ValueError, binascii.Error):
            raise ConfigError(f"{where}: line {n} is not 'base64(token) rank' as tiktoken reads it") from None
        if r < 0:
            raise ConfigError(f"{where}: line {n}: a negative rank {r}")
        if b:
            vocab[b] = r
        else:
            empty.append(r)
    return vocab, empty


def read_rank_file(path: str | os.PathLike, *, pattern: str, special_tokens: dict[str, int] | None = None,
                   nfc: bool = False) -> F.BPESpec:
    """A ``.tiktoken`` rank file with its own ``pattern`` (fancy-regex, as tiktoken) and special tokens
    (name -> id: matched only when allowed, as tiktoken's)."""
    data = F._read_bytes(path, "tiktoken rank file")
    check_text(data, path, "tiktoken rank file")
    vocab, empty = rank_lines(data, str(path))
    return _spec(vocab, empty, pattern, special_tokens or {}, str(path), nfc)


def _spec(vocab: dict[bytes, int], empty: list[int], pattern: str, specials: dict[str, int], where: str,
          nfc: bool) -> F.BPESpec:
    if not isinstance(pattern, str):
        raise ConfigError(f"{where}: pattern must be a str, got {type(pattern).__name__}")
    F._check_bytes(vocab, where)
    ranks = set(vocab.values()) | set(empty)
    for name, i in specials.items():
        if not isinstance(name, str) or not name or type(i) is not int or not 0 <= i < 1 << 31:
            raise ConfigError(f"{where}: special token {name!r}: {i!r} is not a name and an id 0 .. 2**31 - 1")
        if i in ranks:
            raise ConfigError(f"{where}: special token {name!r} has id {i}, a rank of the file")
    family, splits = pattern_family(pattern)
    spec = F.BPESpec(vocab, None, family, True, [AddedToken(t.encode(), i) for t, i in specials.items()], nfc=nfc,
                     source=where, splits=splits, flavor="fancy")
    spec.decode_bytes.update({r: b"" for r in empty})
    return spec


def is_tekken(doc: object) -> bool:
    """Whether a parsed JSON document is a Tekken file (``config.pattern`` and a ``vocab`` list of ranks)."""
    return isinstance(doc, dict) and isinstance(doc.get("config"), dict) and "pattern" in doc["config"] \
        and isinstance(doc.get("vocab"), list)


def read_tekken(path: str | os.PathLike) -> F.BPESpec:
    """A Tekken file as mistral-common's ``Tekkenizer.from_file`` reads it: the first ``default_vocab_size -
    default_num_special_tokens`` ranks, ids shifted past the special tokens (the file's ``special_tokens``, or
    mistral-common's list for files of version <= v7, filled up with ``<SPECIAL_i>``); text never matches a
    special token (``Tekkenizer.encode``)."""
    where = str(path)
    doc = read_json(path, "Tekken file")
    if not is_tekken(doc):
        raise ConfigError(f"{where}: not a Tekken file (no config.pattern and vocab list)")
    check_tekken(doc, where)
    cfg = doc["config"]
    try:
        n_special = int(cfg["default_num_special_tokens"])
        size = int(cfg["default_vocab_size"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"{where}: config lacks default_vocab_size / default_num_special_tokens") from None
    inner = size - n_special
    entries = doc["vocab"]
    if not 256 <= inner <= len(entries):
        raise ConfigError(f"{where}: default_vocab_size - default_num_special_tokens = {inner}, the file has "
                          f"{len(entries)} ranks")
    vocab: dict[bytes, int] = {}
    for k, e in enumerate(entries[:inner]):
        if not isinstance(e, dict) or e.get("rank") != k:
            raise ConfigError(f"{where}: vocab[{k}] is not the entry of rank {k}")
        vocab[base64.b64decode(e["token_bytes"])] = k + n_special
    specials = doc.get("special_tokens")
    if specials is None:  # (files of version <= v7)
        specials = [{"token_str": t} for t in TEKKEN_OLD_SPECIALS]
    names = [str(s["token_str"]) for s in specials] + [f"<SPECIAL_{i}>" for i in range(len(specials), n_special)]
    if len(names) != n_special or len(set(names)) != n_special:
        raise ConfigError(f"{where}: {len(specials)} special tokens for default_num_special_tokens {n_special}")
    spec = _spec(vocab, [], cfg["pattern"], {}, where, False)
    spec.added = [AddedToken(t.encode(), i) for i, t in enumerate(names)]
    spec.source = f"{where} (Tekken {cfg.get('version')})"
    return spec


# ------------------------------------------------------------------------------------------- layouts
# rank files whose model family fixes the pattern and lays its special tokens out after the ranks (ids
# len(ranks) + i, as the family's own loader numbers them): name -> (pattern, special names, ranks of its file)
LLAMA3_SPECIALS = ("<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                   "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>",
                   "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>", "<|image|>") + tuple(
    f"<|reserved_special_token_{2 + i}|>" for i in range(256 - 12))  # llama-models' models/llama3/tokenizer.py


def _reserved(name: str, count: int, start: int) -> tuple[str, ...]:
    return tuple(f"<|{name}_reserved_special_token_{i}|>" for i in range(start, start + count))


_LLAMA4_NAMED = (("<|begin_of_text|>", "<|end_of_text|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>")
                 + ("<|header_start|>", "<|header_end|>", "<|eom|>", "<|eot|>", "<|step|>")
                 + _reserved("text_post_train", 6, 0) + ("<|python_start|>", "<|python_end|>", "<|finetune_right_pad|>")
                 + _reserved("text_post_train", 61, 8)
                 + ("<|image_start|>", "<|image_end|>") + _reserved("vision", 2, 0)
                 + ("<|tile_x_separator|>", "<|tile_y_separator|>") + _reserved("vision", 4, 2)
                 + ("<|image|>",) + _reserved("vision", 1, 6) + ("<|patch|>",) + _reserved("vision", 1041, 7)
                 + _reserved("reasoning", 8, 0) + ("<|reasoning_thinking_start|>", "<|reasoning_thinking_end|>"))
LLAMA4_SPECIALS = _LLAMA4_NAMED + tuple(f"<|reserved_special_token_{i}|>" for i in range(2048 - len(_LLAMA4_NAMED)))
# (llama-models' models/llama4/tokenizer.py: BASIC + LLAMA4 special tokens, reserved ones up to 2048)

# openai-whisper 20250625's whisper/tokenizer.py LANGUAGES (its order: the ids of the language tokens)
WHISPER_LANGUAGES = ("en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv", "it",
                     "id", "hi", "fi", "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no", "th", "ur",
                     "hr", "bg", "lt", "la", "mi", "ml", "cy", "sk", "te", "fa", "lv", "bn", "sr", "az", "sl", "kn",
                     "et", "mk", "br", "eu", "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw", "gl", "mr", "pa", "si",
                     "km", "sn", "yo", "so", "af", "oc", "ka", "be", "tg", "sd", "gu", "am", "yi", "lo", "uz", "fo",
                     "ht", "ps", "tk", "nn", "mt", "sa", "lb", "my", "bo", "tl", "mg", "as", "tt", "haw", "ln", "ha",
                     "ba", "jw", "su", "yue")


def whisper_specials(num_languages: int) -> tuple[str, ...]:
    """Whisper's special tokens (``whisper/tokenizer.py`` ``get_encoding``), the first ``num_languages``
    languages'."""
    return ("<|endoftext|>", "<|startoftranscript|>", *[f"<|{x}|>" for x in WHISPER_LANGUAGES[:num_languages]],
            "<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
            "<|notimestamps|>", *[f"<|{i * 0.02:.2f}|>" for i in range(1501)])


LAYOUTS: dict[str, tuple[str, tuple[str, ...], int]] = {
    "llama3": (F.CL100K_PATTERN, LLAMA3_SPECIALS, 128000),  # Llama 3 / 3.1 / 3.2 / 3.3 tokenizer.model
    "llama4": (F._O200K, LLAMA4_SPECIALS, 200000),  # Llama 4 tokenizer.model
    "whisper": (F.GPT2_PATTERN, whisper_specials(99), 50256),  # gpt2.tiktoken (English-only models)
    "whisper-multilingual": (F.GPT2_PATTERN, whisper_specials(99), 50257),  # multilingual.tiktoken
    "whisper-large-v3": (F.GPT2_PATTERN, whisper_specials(100), 50257),  # (large-v3, turbo: 100 languages)
}


def read_layout(path: str | os.PathLike, name: str) -> F.BPESpec:
    """A rank file of a :data:`LAYOUTS` family: its pattern, its specials numbered from the file's number of
    ranks (as the family's loader numbers them); a file of another size than the family's is warned about."""
    pattern, names, expected = LAYOUTS[name]
    data = F._read_bytes(path, "tiktoken rank file")
    check_text(data, path, "tiktoken rank file")
    vocab, empty = rank_lines(data, str(path))
    n = len(vocab) + (1 if empty else 0)  # (the size of the loader's dict: one empty token at most)
    if n != expected:
        warnings.warn(f"{path}: {n} ranks, but a {name} file has {expected}: its special tokens are numbered from "
                      f"{n}; if it is a file of its own, load it with pattern= and special_tokens=", stacklevel=3)
    spec = _spec(vocab, empty, pattern, {t: n + i for i, t in enumerate(names)}, str(path), False)
    spec.source = f"{path} ({name})"
    return spec


def read_encoding(path: str | os.PathLike, encoding: str) -> F.BPESpec:
    """A rank file read as the named encoding: a tiktoken one (:data:`formats.ENCODINGS`) or a family layout
    (:data:`LAYOUTS`), the one place that tells the two kinds of name apart."""
    if encoding in LAYOUTS:
        return read_layout(path, encoding)
    if encoding not in F.ENCODINGS:
        raise ConfigError(f"encoding must be one of {', '.join([*F.ENCODINGS, *LAYOUTS])}, got {encoding!r}")
    return F.read_tiktoken(path, encoding)


def is_js_tiktoken(doc: object) -> bool:
    """Whether a parsed JSON document is a JS-tiktoken rank file (``pat_str``, ``special_tokens``, and
    ``bpe_ranks`` a string), as js-tiktoken's ``ranks/*.json`` and Anthropic's ``@anthropic-ai/tokenizer``'s
    ``claude.json`` are."""
    return isinstance(doc, dict) and isinstance(doc.get("bpe_ranks"), str) and "pat_str" in doc \
        and "special_tokens" in doc


def read_js_tiktoken(path: str | os.PathLike) -> F.BPESpec:
    """A JS-tiktoken rank file as js-tiktoken's ``Tiktoken`` reads it and ``@anthropic-ai/tokenizer`` applies
    it: ``bpe_ranks`` lines ``name offset tok tok ...`` (each ``tok`` base64, ranked ``offset``, ``offset + 1``, ...;
    a later line's rank of the same token wins), ``pat_str`` (read as fancy-regex, as tiktoken's rank files),
    ``special_tokens``; the text NFKC-normalized first (this package's NFKC, measured on HF's: the package uses
    the JS engine's ``String.prototype.normalize``) and every special token matched in it (the package's
    ``countTokens`` encodes with ``"all"``)."""
    from triton_textops.ops.core.unorm import FORMS  # noqa: PLC0415
    from triton_textops.ops.sentencepiece.normalize import OP_FORM, Program  # noqa: PLC0415

    where = str(path)
    doc = read_json(path, "JS-tiktoken rank file")
    if not is_js_tiktoken(doc):
        raise ConfigError(f"{where}: not a JS-tiktoken rank file (pat_str, special_tokens, bpe_ranks a string)")
    specials = doc["special_tokens"]
    if not isinstance(specials, dict):
        raise ConfigError(f"{where}: special_tokens must be an object of name -> id")
    vocab: dict[bytes, int] = {}
    for n, line in enumerate(doc["bpe_ranks"].split("\n")):
        if not line:
            continue
        fields = line.split(" ")
        try:
            offset = int(fields[1])
            toks = [base64.b64decode(t, validate=True) for t in fields[2:]]
        except (IndexError, ValueError, binascii.Error):
            raise ConfigError(f"{where}: bpe_ranks line {n + 1} is not 'name offset base64 ...': {line[:60]!r}") \
                from None
        for i, tok in enumerate(toks):
            if not tok:
                raise ConfigError(f"{where}: bpe_ranks line {n + 1} has an empty token")
            vocab[tok] = offset + i
    spec = _spec(vocab, [], doc["pat_str"], specials, where, False)
    spec.added = [AddedToken(a.content, a.id, True, True) for a in spec.added]  # matched after NFKC
    spec.match_added = True
    spec.normalizer = Program([(OP_FORM, b"", b"", FORMS.index("nfkc"))])
    return spec
