"""BERT normalization as tables: what every code point becomes (HF ``BertNormalizer``), measured, never derived.

The tables are measured on the HuggingFace oracle by ``scripts/gen_unicode_tables.py`` and shipped as package data;
they are never rebuilt from the running Python's ``unicodedata``. Per code point they give the normalized bytes,
the pre-tokenizer class of the code point (:data:`WORD`, :data:`SPACE`, :data:`PUNCT`), the canonical combining
class NFD orders marks by and whether it is a word character (``\\w``, what ``single_word`` added tokens test);
:class:`NormalizerTables` packs them into one int32 per code point for the pre-tokenization kernel
(:mod:`triton_textops.ops.wordpiece.pretokenize`), which applies them.

Every option set of ``BertNormalizer`` (``clean_text``, ``handle_chinese_chars``, ``strip_accents``, ``lowercase``;
:class:`NormOptions`) has its table. Four are stored whole, one per (lowercase, strip accents) pair with
``clean_text`` and ``handle_chinese_chars`` on (:data:`BASES`); the others are made from them by
:func:`derive_table` with two measured sets: the code points ``clean_text`` changes (removed, or made a space) and
those ``handle_chinese_chars`` pads with spaces, plus the few code points that the normalizer without
``clean_text`` does not keep as they are (U+2000 -> U+2002 under NFD). The generator checks every one of the 16
derived tables against the oracle on every code point.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.batch import TextBatch, _read_only
from triton_textops.ops.core.xp import get_xp, target_of

N_CP = 0x110000
WORD, SPACE, PUNCT = 0, 1, 2  # pre-tokenizer classes of a code point
AMAP = 0x110000  # the normalization table's ASCII part starts here: normalized byte | class << 8 | A_KEPT, 0: removed
A_CLASS_SHIFT, A_KEPT = 8, 1 << 7  # (A_KEPT: a NUL kept as it is, clean_text off, is not 0; bit 7, free in an
# ASCII byte, so that the class is the entry >> 8 with no mask: one operation less per byte in the hot loop)
# the packed per-code-point entry of the table (int32, see Normalizer): output length | class | pool offset + 1 |
# combining rank (canonical combining class as an order-preserving rank; 0: a starter, or a removed character
# that ends a combining run; RANK_TRANSPARENT: a removed character that does not) | word character (the sign bit)
LEN_MASK, CLASS_SHIFT, POOL_SHIFT, RANK_SHIFT = 15, 4, 6, 26
POOL_MASK, RANK_MASK = (1 << (RANK_SHIFT - POOL_SHIFT)) - 1, 31
RANK_TRANSPARENT = 31
WORD_CHAR_SHIFT = 31  # bit 31: ``\w`` (the entry is then negative)
SP_FLAGS = 256  # the special tables' first-byte flags are followed by one flag byte per special token
SP_SINGLE_WORD = 1  # that byte: HF's ``single_word`` (the match must not touch a word character)
# the four stored tables: (lowercase, strip accents) -> name (clean_text and handle_chinese_chars on)
BASES = {(True, True): "uncased", (False, False): "cased", (True, False): "lower_only", (False, True): "strip_only"}


@dataclass(frozen=True)
class NormOptions:
    """A ``BertNormalizer``'s options, ``strip_accents`` resolved as HF does (None: follow ``lowercase``)."""

    clean_text: bool = True
    handle_chinese_chars: bool = True
    strip_accents: bool = True
    lowercase: bool = True

    @classmethod
    def of(cls, lowercase: bool = True, strip_accents: bool | None = None, clean_text: bool = True,
           handle_chinese_chars: bool = True) -> NormOptions:
        """The options of ``BertNormalizer(clean_text, handle_chinese_chars, strip_accents, lowercase)``."""
        for name, v in (("lowercase", lowercase), ("clean_text", clean_text),
                        ("handle_chinese_chars", handle_chinese_chars)):
            if not isinstance(v, (bool, np.bool_)):
                raise InputError(f"{name} must be True or False, got {type(v).__name__} {v!r}")
        if strip_accents is not None and not isinstance(strip_accents, (bool, np.bool_)):
            raise InputError(f"strip_accents must be None, True or False, got {strip_accents!r}")
        strip = bool(lowercase) if strip_accents is None else bool(strip_accents)
        return cls(bool(clean_text), bool(handle_chinese_chars), strip, bool(lowercase))

    @property
    def base(self) -> str:
        """The stored table this one is made from."""
        return BASES[(self.lowercase, self.strip_accents)]


@functools.lru_cache(maxsize=1)
def _host_tables() -> dict[str, np.ndarray]:
    path = resources.files("triton_textops") / "data" / "unicode_tables.npz"
    with resources.as_file(path) as p, np.load(p) as z:
        return {k: z[k] for k in z.files}


def code_point_set(t: dict[str, np.ndarray], key: str) -> np.ndarray:
    """A measured set of code points (``clean_set``, ``cjk_set``, ``word_char``: packed bits) as a bool array."""
    return np.unpackbits(t[key], count=N_CP, bitorder="little").astype(bool)


def _utf8_lengths() -> np.ndarray:
    cp = np.arange(N_CP)
    return np.where(cp < 0x80, 1, np.where(cp < 0x800, 2, np.where(cp < 0x10000, 3, 4))).astype(np.int64)


def derive_table(t: dict[str, np.ndarray], opts: NormOptions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(output length, pool offset or -1 for "as it is", byte pool, combining class as the tables store it) of every
    code point under ``opts``, made from the stored table of its (lowercase, strip accents) pair:

    - ``handle_chinese_chars`` off: a code point of ``cjk_set`` loses the two spaces of its padded output;
    - ``clean_text`` off: a code point of ``clean_set`` is kept as it is (a starter), or becomes what
      ``{base}_noclean_*`` lists for it (the few that NFD changes).

    Pure NumPy on the host tables; the generator checks all 16 option sets against the oracle with it."""
    name = opts.base
    out_len = t[f"{name}_len"].astype(np.int64)
    out_off = t[f"{name}_off"].astype(np.int64)
    pool = t[f"{name}_pool"]
    ccc = t[f"{name}_ccc"].copy() if opts.strip_accents else np.zeros(N_CP, dtype=np.uint8)
    if not opts.handle_chinese_chars:
        cjk = code_point_set(t, "cjk_set")
        out_off[cjk] += 1  # " X " -> X
        out_len[cjk] -= 2
    if not opts.clean_text:
        cs = code_point_set(t, "clean_set")
        out_len[cs] = _utf8_lengths()[cs]
        out_off[cs] = -1
        ccc[cs] = 0
        cps = t[f"{name}_noclean_cp"].astype(np.int64)
        lens = t[f"{name}_noclean_len"].astype(np.int64)
        if cps.shape[0]:
            starts = np.zeros(cps.shape[0], dtype=np.int64)
            np.cumsum(lens[:-1], out=starts[1:])
            out_off[cps] = pool.shape[0] + starts
            out_len[cps] = lens
            pool = np.concatenate([pool, t[f"{name}_noclean_pool"]])
    return out_len, out_off, pool, ccc


class NormalizerTables:
    """The BERT normalizer's per-code-point table (output bytes, pre-tokenizer class, combining rank, word
    character) for one option set, packed for the kernels and on one device."""

    def __init__(self, lowercase: bool = True, device: str = "cpu", *, strip_accents: bool | None = None,
                 clean_text: bool = True, handle_chinese_chars: bool = True,
                 options: NormOptions | None = None) -> None:
        opts = options or NormOptions.of(lowercase, strip_accents, clean_text, handle_chinese_chars)
        t = _host_tables()
        self.options = opts
        self.lowercase = opts.lowercase
        self.device = device
        self.target = target_of(device)
        self.xp = get_xp(device)
        out_len, out_off, pool, ccc = derive_table(t, opts)
        cls = t["pretok_class"].astype(np.int64)
        self.expand = _expansion(out_len)
        if out_len.max() > LEN_MASK or out_off.max() + 1 > POOL_MASK:
            raise RuntimeError("unicode tables: output lengths or pool offsets too large for the packed table")
        # one int32 per code point: output length | pre-tokenizer class | pool offset + 1 | combining rank | \w
        info = (out_len | (cls << CLASS_SHIFT) | ((out_off + 1) << POOL_SHIFT)
                | (_combining_ranks(ccc, out_len) << RANK_SHIFT)
                | (code_point_set(t, "word_char").astype(np.int64) << WORD_CHAR_SHIFT))
        amap = np.zeros(128, dtype=np.int64)  # ASCII: normalized byte | its class << 8 | A_KEPT; 0: removed
        for b in range(128):
            if out_len[b] == 1:
                ob = b if out_off[b] < 0 else int(pool[out_off[b]])
                if not 0 <= ob < 0x80:
                    raise RuntimeError("unicode tables: ASCII must map to ASCII")
                amap[b] = ob | (int(cls[ob]) << A_CLASS_SHIFT) | A_KEPT
            elif out_len[b] > 1:
                raise RuntimeError("unicode tables: an ASCII code point maps to more than one byte")
        packed = np.concatenate([info, amap]).astype(np.uint32).view(np.int32)
        self._host = {"info": packed, "pool": _read_only(np.ascontiguousarray(pool))}
        self.tables = {k: K.to_device(v, self.target, self.xp) for k, v in self._host.items()}

    def makes_token(self, text: str) -> bool:
        """Whether ``text`` normalizes to at least one pre-token (a word or punctuation character), on the host: an
        added token that does not would leave no token to carry its id."""
        info, pool = self._host["info"], self._host["pool"]
        for ch in text:
            e = int(info[ord(ch)])
            n = e & LEN_MASK
            src = ((e >> POOL_SHIFT) & POOL_MASK) - 1
            out = ch if src < 0 else pool[src:src + n].tobytes().decode("utf-8", "replace")
            if n and any((int(info[ord(c)]) >> CLASS_SHIFT) & 3 != SPACE for c in out):
                return True
        return False

    def args(self, batch: TextBatch, specials: Any) -> tuple:
        """The pre-tokenizer kernel's inputs as its two groups: TEXT (data, offsets) and NORM (the table, its pool
        and the raw special tokens: first-byte flags then one flag byte per token, bytes, offsets, count).
        ``specials``: a list of raw strings, or :class:`Specials` (strings with HF's flags)."""
        specials = specials or ()
        sp = _special_tables(tuple(specials), tuple(getattr(specials, "flags", ())), self.target, self.device)
        return (batch.data, batch.offsets), (self.tables["info"], self.tables["pool"], *sp, len(specials))


class Specials(tuple):
    """Raw added tokens matched before normalization (the tuple: their bytes) and a flag byte per token
    (``flags``: :data:`SP_SINGLE_WORD`), in the order a kernel numbers them."""

    flags: tuple[int, ...]

    def __new__(cls, contents: Any, flags: Any = ()) -> Specials:
        self = super().__new__(cls, contents)
        self.flags = tuple(int(f) for f in flags) or (0,) * len(self)
        if len(self.flags) != len(self):
            raise ValueError("Specials: one flag per token")
        return self


def _combining_ranks(ccc: np.ndarray, out_len: np.ndarray) -> np.ndarray:
    """Per code point, the order-preserving rank (1, 2, ...) of its canonical combining class as the oracle's
    NFD sees it, 0 for a starter; for a removed code point (no output), 0 when it ends a combining run and
    RANK_TRANSPARENT when it does not (the tables' ``*_ccc``: 0 / 255 there). Ranks, not classes, so that the
    packed entry holds them in 5 bits."""
    ccc = ccc.astype(np.int64)
    kept = out_len > 0
    values = np.unique(ccc[kept & (ccc > 0)])
    if values.shape[0] >= RANK_TRANSPARENT or not np.isin(ccc[~kept], (0, 255)).all():
        raise RuntimeError("unicode tables: combining classes do not fit the packed table")
    rank = np.zeros(ccc.shape[0], dtype=np.int64)
    rank[kept] = np.searchsorted(values, ccc[kept]) + (ccc[kept] > 0)
    rank[~kept & (ccc == 255)] = RANK_TRANSPARENT
    return rank


def _expansion(out_len: np.ndarray) -> int:
    """The largest ratio (rounded up) of normalized to input UTF-8 bytes over all code points."""
    return max(1, int(np.ceil(out_len / _utf8_lengths()).max()))


@functools.lru_cache(maxsize=32)
def _special_tables(specials: tuple[bytes, ...], flags: tuple[int, ...], target: str, device: str
                    ) -> tuple[Any, Any, Any]:
    """(first-byte flags [256] then a flag byte per token, concatenated bytes, offsets) of the raw special strings,
    on the device (checked once per set of specials: this is cached)."""
    if not all(isinstance(s, bytes) and s for s in specials):
        raise InputError("specials must be non-empty bytes strings (raw special tokens such as b'[CLS]')")
    first = np.zeros(SP_FLAGS + len(specials), dtype=np.uint8)
    for s in specials:
        first[s[0]] = 1
    first[SP_FLAGS:] = flags or 0
    data = np.frombuffer(b"".join(specials) or b"\0", dtype=np.uint8).copy()
    off = np.zeros(len(specials) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(s) for s in specials])
    xp = get_xp(device)
    return tuple(K.to_device(a, target, xp) for a in (first, data, off))
