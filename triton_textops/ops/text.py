"""Stage (a) of the tokenizer: UTF-8 input, BERT normalization and pre-tokenization.

Everything is vectorized over the whole batch and written once against ``xp`` (NumPy or CuPy), so the
CPU and GPU paths are the same algorithm and give the same arrays. The output, :class:`PreTokens`
(normalized bytes + token spans), feeds both WordPiece and the readability features: one pass over the
text serves both.

Normalization is a per-code-point table lookup. The tables are measured on the HuggingFace oracle by
``scripts/gen_unicode_tables.py`` and shipped as package data; they are never rebuilt from the running
Python's ``unicodedata``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources
from types import ModuleType
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.xp import bincount, device_constant, to_numpy

WORD, SPACE, PUNCT = 0, 1, 2  # pre-tokenizer classes of a normalized code point

_M64 = (1 << 64) - 1
HASH_BASE = 0x100000001B3  # odd, so it is invertible mod 2**64 (the prefix hashes need its inverse)
_MIX = 0xD6E8FEB86659FD93  # odd multiplier that spreads keys over hash-table slots


# --------------------------------------------------------------------------------------------- input


@dataclass
class TextBatch:
    """Raw UTF-8 bytes of ``n`` texts: ``data`` (uint8) and ``offsets`` (int64, n+1), on one device."""

    data: Any
    offsets: Any
    xp: ModuleType

    @property
    def n(self) -> int:
        return int(self.offsets.shape[0]) - 1

    @classmethod
    def from_texts(cls, texts: Any, xp: ModuleType = np, *, validate: bool = True) -> TextBatch:
        """Build a batch from a list of str/bytes, a NumPy object array of bytes (shape [n] or [n, 1]),
        or a ``(data uint8, offsets int n+1)`` pair already on the device.

        Raises :class:`InputError` naming the first row that is not valid UTF-8.
        """
        if isinstance(texts, tuple) and len(texts) == 2:
            data, offsets = xp.asarray(texts[0]), xp.asarray(texts[1])
            if data.dtype != xp.uint8 or data.ndim != 1:
                raise InputError("the byte buffer must be a 1-D uint8 array")
            if offsets.ndim != 1 or offsets.shape[0] < 1:
                raise InputError("offsets must be a 1-D integer array of n+1 entries")
            offsets = offsets.astype(xp.int64)
            if int(offsets[0]) != 0 or int(offsets[-1]) != data.shape[0] or bool((xp.diff(offsets) < 0).any()):
                raise InputError("offsets must start at 0, be non-decreasing and end at len(data)")
        else:
            rows = _as_row_list(texts)
            data_h, offsets_h = pack_host(rows)
            data, offsets = xp.asarray(data_h), xp.asarray(offsets_h)
            if all(type(t) is str for t in rows):
                validate = False  # encoded by Python, so valid UTF-8
        batch = cls(data, offsets, xp)
        if validate:
            bad = invalid_utf8_rows(batch)
            if bad.size:
                raise InputError(f"row {int(bad[0])}: text is not valid UTF-8", rows=bad)
        return batch


def _as_row_list(texts: Any) -> list:
    if isinstance(texts, (str, bytes)):
        raise InputError("texts must be a sequence of str or bytes, not a single string")
    if isinstance(texts, np.ndarray):
        if texts.ndim == 2 and texts.shape[1] == 1:
            texts = texts[:, 0]
        elif texts.ndim != 1:
            raise InputError(f"texts must have shape [n] or [n, 1], got {list(texts.shape)}")
        return texts.tolist()
    return list(texts)


def pack_host(texts: Any) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate texts (str encoded as UTF-8, bytes as-is) into one uint8 buffer plus int64 offsets."""
    rows = _as_row_list(texts)
    try:  # the usual case: all str (one list comprehension)
        enc = [t.encode("utf-8") for t in rows] if all(type(t) is str for t in rows) else None
    except UnicodeEncodeError:
        enc = None  # the loop below names the row
    if enc is None:
        enc = _encode_rows(rows)
    offsets = np.zeros(len(enc) + 1, dtype=np.int64)
    if enc:
        np.cumsum(np.fromiter(map(len, enc), dtype=np.int64, count=len(enc)), out=offsets[1:])
    return np.frombuffer(b"".join(enc), dtype=np.uint8), offsets


def _encode_rows(rows: list) -> list[bytes]:
    enc: list[bytes] = []
    for i, t in enumerate(rows):
        if isinstance(t, bytes):
            enc.append(t)
        elif isinstance(t, str):
            try:
                enc.append(t.encode("utf-8"))
            except UnicodeEncodeError as e:
                raise InputError(f"row {i}: text is not valid UTF-8 ({e.reason})", rows=np.array([i])) from None
        elif isinstance(t, (bytearray, memoryview, np.bytes_)):
            enc.append(bytes(t))
        else:
            raise InputError(f"row {i}: expected str or bytes, got {type(t).__name__}", rows=np.array([i]))
    return enc


def segment_of(offsets: Any, positions: Any, xp: ModuleType) -> Any:
    """Index of the segment ``[offsets[i], offsets[i+1])`` holding each position (empty segments skipped)."""
    return xp.searchsorted(offsets, positions, side="right") - 1


def invalid_utf8_rows(batch: TextBatch) -> np.ndarray:
    """Sorted indices (host int64 array) of the rows that are not strict UTF-8 (RFC 3629).

    Only the non-ASCII bytes are examined, so mostly-ASCII text costs one pass."""
    xp, b, offs = batch.xp, batch.data, batch.offsets
    n = b.shape[0]
    hi = (b >= 0x80).nonzero()[0]
    if hi.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    bh = b[hi].astype(xp.int32)
    is_lead = bh >= 0xC0
    lead = hi[is_lead]
    b0 = bh[is_lead]
    need = xp.where(b0 < 0xE0, 2, xp.where(b0 < 0xF0, 3, 4))
    bad_lead = (b0 < 0xC2) | (b0 > 0xF4)
    row_end = offs[segment_of(offs, lead, xp) + 1]
    bad = bad_lead | (lead + need > row_end)
    b1 = b[xp.minimum(lead + 1, n - 1)].astype(xp.int32)
    lo = xp.where(b0 == 0xE0, 0xA0, xp.where(b0 == 0xF0, 0x90, 0x80))
    hi_ = xp.where(b0 == 0xED, 0x9F, xp.where(b0 == 0xF4, 0x8F, 0xBF))
    bad |= (b1 < lo) | (b1 > hi_)
    for k in (2, 3):
        bk = b[xp.minimum(lead + k, n - 1)]
        bad |= (need > k) & ((bk & 0xC0) != 0x80)
    # continuation bytes that no valid lead claims (stray, or at the start of a row)
    claimed = xp.zeros(n + 3, dtype=bool)
    ok_lead, ok_need = lead[~bad], need[~bad]
    for k in (1, 2, 3):
        claimed[ok_lead[ok_need > k] + k] = True
    cont = hi[~is_lead]
    stray = cont[~claimed[cont]]
    all_bad = xp.concatenate([lead[bad], stray])
    if all_bad.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(to_numpy(segment_of(offs, all_bad, xp))).astype(np.int64)


def bytes8(xp: ModuleType, data: Any) -> Any:
    """For every byte position ``i`` of ``data`` (and one past the end): bytes ``i .. i+7`` as a
    little-endian uint64, zeros past the end. Any span's first 8 bytes are then one gather.

    NumPy: a zero-copy view with a 1-byte stride over the zero-padded bytes; CuPy: the same values
    computed with 8 shifts (a GPU has no unaligned 8-byte view)."""
    n = int(data.shape[0])
    padded = xp.zeros(n + 8, dtype=np.uint8)
    padded[:n] = data
    if xp is np:
        return np.ndarray((n + 1,), dtype="<u8", buffer=padded, strides=(1,))
    out = padded[: n + 1].astype(np.uint64)
    for k in range(1, 8):
        out |= padded[k : k + n + 1].astype(np.uint64) << np.uint64(8 * k)
    return out


_MASK8 = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [_M64], dtype=np.uint64)  # low k bytes set


def load8(xp: ModuleType, b8: Any, start: Any, length: Any) -> Any:
    """First ``min(length, 8)`` bytes of each span, little-endian in a uint64 (zeros after).

    ``b8`` is :func:`bytes8` of the bytes. Normalized text never holds a NUL byte, so for spans of at
    most 8 bytes this value alone identifies the bytes.
    """
    return b8[start] & device_constant(xp, "mask8", lambda: _MASK8)[xp.minimum(length, 8)]


def decode_at(data: Any, lead: Any, xp: ModuleType) -> Any:
    """Code points (int32) of the UTF-8 sequences starting at positions ``lead`` (input already valid)."""
    n = data.shape[0]
    b0 = data[lead].astype(xp.int32)

    def cont(k: int) -> Any:
        return data[xp.minimum(lead + k, n - 1)].astype(xp.int32) & 0x3F

    b1, b2, b3 = cont(1), cont(2), cont(3)
    cp2 = ((b0 & 0x1F) << 6) | b1
    cp3 = ((b0 & 0x0F) << 12) | (b1 << 6) | b2
    cp4 = ((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3
    return xp.where(b0 < 0x80, b0, xp.where(b0 < 0xE0, cp2, xp.where(b0 < 0xF0, cp3, cp4)))


# ------------------------------------------------------------------------------------ normalization


@functools.lru_cache(maxsize=1)
def _host_tables() -> dict[str, np.ndarray]:
    path = resources.files("triton_textops") / "data" / "unicode_tables.npz"
    with resources.as_file(path) as p, np.load(p) as z:
        return {k: z[k] for k in z.files}


@dataclass
class PreTokens:
    """Normalized text and its BERT pre-tokens, for a batch of ``n`` texts (arrays of ``xp``)."""

    xp: ModuleType
    n: int
    data: Any  # uint8: normalized UTF-8 bytes of all texts, concatenated
    text_offsets: Any  # int64 (n+1): byte range of each text in ``data``
    start: Any  # int64 per token: first byte in ``data``
    end: Any  # int64 per token: one past the last byte
    nchars: Any  # int64 per token: number of code points
    text: Any  # int64 per token: index of its text
    tok_offsets: Any  # int64 (n+1): token range of each text
    is_punct: Any  # bool per token: a one-character punctuation token
    special: Any = None  # int64 per token: index of a raw special token (-1 none, -2 absorbed); None: none in the batch
    lowercase: bool = True  # the casing the text was normalized with
    _prefix: dict = field(default_factory=dict, repr=False)

    def bytes8(self) -> Any:
        """:func:`bytes8` of ``data`` (the 8 bytes at every position), computed once."""
        if "bytes8" not in self._prefix:
            self._prefix["bytes8"] = bytes8(self.xp, self.data)
        return self._prefix["bytes8"]

    def prefix_hash(self) -> tuple[Any, Any]:
        """(P, powB) prefix arrays of the polynomial span hash over ``data`` (computed once, cached)."""
        if "hash" not in self._prefix:
            self._prefix["hash"] = _prefix_arrays(self.data, HASH_BASE, self.xp)
        return self._prefix["hash"]


class Normalizer:
    """BERT normalizer + pre-tokenizer for one casing on one array module."""

    def __init__(self, lowercase: bool, xp: ModuleType = np) -> None:
        t = _host_tables()
        key = "uncased" if lowercase else "cased"
        self.lowercase = lowercase
        self.xp = xp
        self.out_len = xp.asarray(t[f"{key}_len"].astype(np.int64))
        self.out_off = xp.asarray(t[f"{key}_off"].astype(np.int64))
        self.pool = xp.asarray(t[f"{key}_pool"])
        self.pclass = xp.asarray(t["pretok_class"])
        # ASCII fast path: every ASCII code point maps to at most one ASCII byte (checked here)
        a_len, a_off = t[f"{key}_len"][:128], t[f"{key}_off"][:128]
        a_byte = np.arange(128, dtype=np.uint8)
        repl = a_off >= 0
        a_byte[repl & (a_len == 1)] = t[f"{key}_pool"][a_off[repl & (a_len == 1)]]
        if a_len.max() > 1 or (a_byte >= 0x80).any():
            raise RuntimeError("unicode tables: an ASCII code point maps to more than one ASCII byte")
        # 256-entry byte tables: ASCII bytes mapped; bytes >= 0x80 kept (handled per character)
        self.len256 = xp.asarray(np.concatenate([a_len, np.ones(128, dtype=np.uint8)]))
        self.byte256 = xp.asarray(np.concatenate([a_byte, np.arange(128, 256, dtype=np.uint8)]))
        self.class256 = xp.asarray(np.concatenate([t["pretok_class"][:128], np.zeros(128, dtype=np.uint8)]))

    @classmethod
    def get(cls, lowercase: bool = True, xp: ModuleType = np) -> Normalizer:
        """Cached instance per (casing, array module, current CUDA device)."""
        dev = -1
        if xp is not np:
            dev = xp.cuda.runtime.getDevice()
        return _normalizer(lowercase, xp, dev)

    def normalize(self, batch: TextBatch) -> tuple[Any, Any, Any]:
        """Normalized bytes, their per-text offsets (n+1), and for every input byte the output position
        of its character (n_bytes+1 entries; what raw positions map to).

        ASCII bytes go through a 256-entry slice of the table; only the (sparse) non-ASCII characters
        are decoded. When no character changes its byte length (the usual case for prose) output
        positions equal input positions and the text is mapped in place, with no prefix sum or scatter."""
        xp = self.xp
        data, offs = batch.data, batch.offsets
        nb = data.shape[0]
        blen = self.len256.take(data)  # ASCII: 0 (removed) or 1; bytes >= 0x80: 1 (placeholder)
        lead = (data >= 0xC0).nonzero()[0]  # non-ASCII characters (input is valid UTF-8)
        if lead.shape[0]:
            cps = decode_at(data, lead, xp)
            ln = self.out_len[cps]
            b0 = data[lead]
            same_len = bool((ln == xp.where(b0 < 0xE0, 2, xp.where(b0 < 0xF0, 3, 4))).all())
        else:  # ASCII only: nothing to decode
            cps = ln = lead
            same_len = True
        if nb == 0 or (same_len and bool(blen.all())):
            out = self.byte256.take(data)  # take: NumPy gathers by uint8 index ~2x faster than []
            out_pos = xp.arange(nb + 1, dtype=xp.int64)
            if lead.shape[0]:
                self._write_replacements(out, out_pos, data, lead, cps, ln, only_replaced=True)
            return out, offs, out_pos
        blen = xp.where(data < 0x80, blen, 0).astype(xp.int64)
        keep = blen.nonzero()[0]
        blen[lead] = ln
        out_end = xp.cumsum(blen)
        total = int(out_end[-1])
        out_pos = xp.empty(nb + 1, dtype=xp.int64)
        out_pos[:nb] = out_end - blen
        out_pos[nb] = total
        out = xp.empty(total, dtype=xp.uint8)
        out[out_pos[keep]] = self.byte256[data[keep]]
        self._write_replacements(out, out_pos, data, lead, cps, ln, only_replaced=False)
        return out, out_pos[offs], out_pos

    def _write_replacements(
        self, out: Any, out_pos: Any, data: Any, lead: Any, cps: Any, ln: Any, *, only_replaced: bool
    ) -> None:
        """Write the output bytes of the non-ASCII characters at ``lead`` (their own bytes, or their
        replacement from the pool); with ``only_replaced`` the identity ones are already in place."""
        xp = self.xp
        o = self.out_off[cps]
        if only_replaced:
            sel = (o >= 0).nonzero()[0]
            lead, o, ln = lead[sel], o[sel], ln[sel]
        if lead.shape[0] == 0:
            return
        width = int(ln.max())
        if width == 0:
            return
        j = xp.arange(width, dtype=xp.int64)
        inside = j[None, :] < ln[:, None]
        ident = (o < 0)[:, None]
        src_in = xp.where(inside & ident, lead[:, None] + j[None, :], 0)
        src_pool = xp.where(inside & ~ident, o[:, None] + j[None, :], 0)
        val = xp.where(ident, data[src_in], self.pool[src_pool])
        dst = out_pos[lead][:, None] + j[None, :]
        out[dst[inside]] = val[inside]

    def pretokenize(self, batch: TextBatch, specials: list[bytes] | None = None) -> PreTokens:
        """Normalize and pre-tokenize a batch; ``specials`` are raw strings matched before normalization
        (HF added special tokens such as ``[CLS]``), reported per token in ``PreTokens.special``.

        Works on bytes: a continuation byte carries the class of its character, so a token starts at a
        lead byte and ends at a character's last byte."""
        xp = self.xp
        out, text_offsets, out_pos = self.normalize(batch)
        total = out.shape[0]
        cls = self.class256.take(out)  # ASCII classes; non-ASCII bytes patched below
        hi = (out >= 0x80).nonzero()[0]
        ascii_only = hi.shape[0] == 0
        if not ascii_only:
            is_lead_hi = out[hi] >= 0xC0
            lead_hi = hi[is_lead_hi]
            lead_cls = self.pclass[decode_at(out, lead_hi, xp)]
            cls[hi] = lead_cls[xp.cumsum(is_lead_hi) - 1]
        brk = xp.ones(total + 2, dtype=bool)  # brk[i + 1]: byte i is no word byte; the ends break too
        brk[1:-1] = cls != WORD
        prev_break, next_break = brk[:-2], brk[2:]
        if batch.n > 1:  # where two texts meet, one token ends and the next starts
            boundary = xp.zeros(total + 1, dtype=bool)
            boundary[text_offsets] = True
            prev_break, next_break = prev_break | boundary[:total], next_break | boundary[1:]
        not_space = cls != SPACE
        is_p = cls == PUNCT
        start_mask = not_space & (is_p | prev_break)
        end_mask = not_space & (is_p | next_break)
        if ascii_only:  # every byte is a character
            first, last = start_mask.nonzero()[0], end_mask.nonzero()[0]
            nchars = last - first + 1
        else:
            is_lead = (out & 0xC0) != 0x80
            char_end = xp.ones(total, dtype=bool)
            char_end[:-1] = is_lead[1:]
            first = (is_lead & start_mask).nonzero()[0]
            last = (char_end & end_mask).nonzero()[0]
            nlead = xp.cumsum(is_lead, dtype=xp.int64)
            nchars = nlead[last] - nlead[first] + 1
        # each text's first token, then each token's text: a marker per text start, summed (cheaper
        # than a binary search per token)
        tok_offsets = xp.searchsorted(first, text_offsets, side="left")
        tok_text = xp.cumsum(bincount(xp, tok_offsets[1:-1], first.shape[0] + 1))[: first.shape[0]]
        pre = PreTokens(
            xp=xp,
            n=batch.n,
            data=out,
            text_offsets=text_offsets,
            start=first,
            end=last + 1,
            nchars=nchars,
            text=tok_text,
            tok_offsets=tok_offsets,
            is_punct=is_p[first],
            lowercase=self.lowercase,
        )
        if specials:
            pre.special = self._mark_specials(batch, pre, specials, out_pos)
        return pre

    def _mark_specials(self, batch: TextBatch, pre: PreTokens, specials: list[bytes], out_pos: Any) -> Any:
        """Tokens covered by a raw occurrence of a special string: the first gets its index, the rest -2
        (-1: not covered); None when the batch holds no special string."""
        xp = self.xp
        data, offs = batch.data, batch.offsets
        n_in = data.shape[0]
        ntok = pre.start.shape[0]
        firsts = _first_bytes(tuple(specials))
        starts_one = data == firsts[0][0]  # a handful of first bytes ("[" for BERT): cheaper than isin
        for f in firsts[1:]:
            starts_one |= data == f[0]
        cand = starts_one.nonzero()[0]
        if cand.size == 0 or ntok == 0:
            return None
        special = xp.full(ntok, -1, dtype=xp.int64)
        row_end = offs[segment_of(offs, cand, xp) + 1]
        which = xp.full(cand.shape, -1, dtype=xp.int64)
        length = xp.zeros(cand.shape, dtype=xp.int64)
        # leftmost-longest: try longer strings first so a longer match wins at the same position
        for j in sorted(range(len(specials)), key=lambda i: -len(specials[i])):
            s = specials[j]
            ok = (which < 0) & (cand + len(s) <= row_end)
            for k, byte in enumerate(s):
                ok &= data[xp.minimum(cand + k, n_in - 1)] == byte
            which = xp.where(ok, j, which)
            length = xp.where(ok, len(s), length)
        hit = (which >= 0).nonzero()[0]
        if hit.size == 0:
            return None
        pos, which, length = cand[hit], which[hit], length[hit]
        # drop matches overlapping an earlier match (leftmost wins)
        keep = xp.asarray(_non_overlapping(to_numpy(pos), to_numpy(length)))
        pos, which, length = pos[keep], which[keep], length[keep]
        o_s, o_e = out_pos[pos], out_pos[pos + length]
        t_first = xp.searchsorted(pre.start, o_s, side="left")
        t_last = xp.searchsorted(pre.start, o_e, side="left")
        has = t_first < t_last
        t_first, t_last, which = t_first[has], t_last[has], which[has]
        plus = xp.zeros(ntok + 1, dtype=xp.int64)
        minus = xp.zeros(ntok + 1, dtype=xp.int64)
        plus[t_first + 1] = 1
        minus[t_last] = 1
        absorbed = xp.cumsum(plus - minus)[:ntok] > 0
        special[absorbed] = -2
        special[t_first] = which
        return special


@functools.lru_cache(maxsize=8)
def _first_bytes(specials: tuple[bytes, ...]) -> list[bytes]:
    return sorted({s[:1] for s in specials})


def _non_overlapping(pos: np.ndarray, length: np.ndarray) -> np.ndarray:
    keep = np.ones(pos.shape[0], dtype=bool)
    end = -1
    for i in range(pos.shape[0]):  # matches are rare (only at special-string first bytes)
        if pos[i] < end:
            keep[i] = False
        else:
            end = pos[i] + length[i]
    return keep


@functools.lru_cache(maxsize=16)
def _normalizer(lowercase: bool, xp: ModuleType, device: int) -> Normalizer:
    return Normalizer(lowercase, xp)


# ------------------------------------------------------------------------------------------ hashing


def hash_bytes(s: bytes) -> int:
    """The polynomial hash of ``s`` (mod 2**64) that the vectorized span hashes reproduce."""
    h = 0
    for c in s:
        h = (h * HASH_BASE + c) & _M64
    return h


_POW_CACHE: dict[tuple, tuple[Any, Any]] = {}


def _powers(base: int, n: int, xp: ModuleType) -> tuple[Any, Any]:
    """(base^k, base^-k) mod 2**64 for k <= n, cached per module/device and grown by doubling."""
    dev = xp.cuda.runtime.getDevice() if xp is not np else -1
    key = (xp.__name__, dev, base)
    have = _POW_CACHE.get(key)
    if have is None or have[0].shape[0] <= n:
        size = max(n + 1, 2 * (have[0].shape[0] if have else 0), 1 << 16)
        out = []
        for b in (base, pow(base, -1, 1 << 64)):
            pw = np.full(size, np.uint64(b), dtype=np.uint64)  # built on the host: exact uint64 wrap-around
            pw[0] = 1
            out.append(xp.asarray(np.cumprod(pw, dtype=np.uint64)))
        have = _POW_CACHE[key] = (out[0], out[1])
    return have


def _prefix_arrays(data: Any, base: int, xp: ModuleType) -> tuple[Any, Any]:
    """P[m] = sum_{k<m} b_k * base^-k and powB[k] = base^k, all mod 2**64 (uint64 wraps)."""
    n = data.shape[0]
    pw, pinv = _powers(base, n, xp)
    p = xp.zeros(n + 1, dtype=xp.uint64)
    p[1:] = xp.cumsum(data * pinv[:n], dtype=xp.uint64)
    return p, pw


def span_hash(pre: PreTokens, start: Any, end: Any) -> Any:
    """Hash of each byte span ``data[start:end]`` (non-empty spans), equal to :func:`hash_bytes`."""
    p, pw = pre.prefix_hash()
    return (p[end] - p[start]) * pw[end - 1]


_KEY, _VAL, _LEN, _HEAD, _PLEN, _PHEAD, _ENT = range(7)  # columns of a ByteTable slot record (8 int64)


class ByteTable:
    """Exact lookup of byte strings by span: a cuckoo hash table (two fixed probes) whose hits are verified
    on the bytes (8 at a time), so a hash collision can never produce a wrong answer.

    Each slot is one 64-byte record (key, value, length and first 8 bytes of the string, the same for the
    string without ``prefix``, entry index), so a probe costs one cache line: at a batch of one the
    lookups are bound by memory latency, not arithmetic. Queries may carry ``prefix`` (WordPiece's
    ``##``): their spans are then compared with the strings minus the prefix."""

    def __init__(
        self, strings: list[bytes], xp: ModuleType = np, values: list[int] | None = None, *, prefix: bytes = b""
    ) -> None:
        n = len(strings)
        vals = np.asarray(list(range(n)) if values is None else values, dtype=np.int64)
        self.xp = xp
        self.strings = list(strings)
        self.max_len = max((len(s) for s in strings), default=0)
        keys = [hash_bytes(s) for s in strings]
        if len(set(keys)) != len(keys):
            dup = len(keys) - len(set(keys))
            raise ValueError(f"ByteTable: {dup} duplicate strings (or a 64-bit collision) in the input")
        bits = max(3, (max(n, 1) * 2 - 1).bit_length())
        while (slots := _build_cuckoo(keys, bits)) is None:
            bits += 1
        self.bits = bits
        # entries 0..n-1: the strings; n..2n-1: the strings without the prefix (length -1 when they lack it)
        starts_p = [st.startswith(prefix) for st in strings]
        entries = self.strings + [st[len(prefix) :] if ok else b"" for st, ok in zip(strings, starts_p)]
        lens = np.array([len(st) for st in entries], dtype=np.int64)
        lens[n:][~np.array(starts_p, dtype=bool)] = -1
        starts = np.zeros(2 * n + 1, dtype=np.int64)
        np.cumsum(lens.clip(0), out=starts[1:])
        b8 = bytes8(np, np.frombuffer(b"".join(entries), dtype=np.uint8))
        width = max(1, (self.max_len + 7) // 8)
        cols = [
            load8(np, b8, np.minimum(starts[:-1] + 8 * k, starts[-1]), np.clip(lens - 8 * k, 0, 8)).view(np.int64)
            for k in range(width)
        ]
        slot_key, slot_idx = slots
        rec = np.zeros((1 << bits, 8), dtype=np.int64)
        rec[:, _KEY] = slot_key.view(np.int64)
        rec[:, [_VAL, _LEN, _PLEN]] = -1
        full = (slot_idx >= 0).nonzero()[0]
        i = slot_idx[full]
        rec[full, _VAL] = vals[i]
        rec[full, _LEN], rec[full, _HEAD] = lens[i], cols[0][i]
        rec[full, _PLEN], rec[full, _PHEAD] = lens[n + i], cols[0][n + i]
        rec[full, _ENT] = i
        self.rec = _aligned_rows(xp, rec)
        self._col = [self.rec[:, c] for c in range(8)]
        # the keys again, packed (512 KB for BERT's vocabulary: L2-resident), so that a probe that
        # misses (most of WordPiece's candidate spans) never touches a record
        self.slot_key = xp.ascontiguousarray(self._col[_KEY]).view(np.uint64)
        self._probe = (np.uint64(_CUCKOO_MIX[0]), np.uint64(_CUCKOO_MIX[1]), np.uint64(64 - bits))
        self.cols = [xp.asarray(c) for c in cols]  # bytes 8k.. of every entry, for the longer strings

    def find(self, keys: Any, data: Any, start: Any, length: Any, with_prefix: Any = None, *, b8: Any = None) -> Any:
        """Value of the string equal to ``data[start:start+length]`` for each query (``prefix`` + those
        bytes where ``with_prefix``: None = no query, True = every query, or a bool per query), else -1.
        ``keys`` are the queries' :func:`hash_bytes` of the full string; ``b8`` is :func:`bytes8` of
        ``data`` (computed when omitted)."""
        xp = self.xp
        nq = keys.shape[0]
        if nq == 0 or not self.strings:
            return xp.full(nq, -1, dtype=xp.int64)
        if b8 is None:
            b8 = bytes8(xp, data)
        ln = length if hasattr(length, "shape") and length.shape else xp.full(nq, int(length), dtype=xp.int64)
        mix1, mix2, shift = self._probe
        s1 = ((keys * mix1) >> shift).view(np.int64)
        s2 = ((keys * mix2) >> shift).view(np.int64)
        m1 = self.slot_key[s1] == keys
        m2 = self.slot_key[s2] == keys  # an empty slot holds a key no string has
        # the matching probe's record; a miss reads slot 0's (cached) record instead of a cold line,
        # whose bytes cannot equal the query's (that string's key would have matched one of the probes)
        slot = xp.where(m1, s1, s2 * m2)
        col = self._col  # per-field views of the records: each gather reads the line the key probe loaded
        if with_prefix is None:
            want_len, want_head = col[_LEN][slot], col[_HEAD][slot]
        elif with_prefix is True:
            want_len, want_head = col[_PLEN][slot], col[_PHEAD][slot]
        else:
            want_len = xp.where(with_prefix, col[_PLEN][slot], col[_LEN][slot])
            want_head = xp.where(with_prefix, col[_PHEAD][slot], col[_HEAD][slot])
        # same length, so equal bytes <=> equal zero-padded 8-byte words; the words past the first only
        # for the (few) candidates still equal and longer than 8k bytes
        ok = (want_len == ln) & (load8(xp, b8, start, ln).view(np.int64) == want_head)
        for j in range(1, len(self.cols)):
            more = (ok & (ln > 8 * j)).nonzero()[0]
            if more.shape[0] == 0:
                break
            ent = col[_ENT][slot[more]]
            if with_prefix is True:
                ent = ent + len(self.strings)
            elif with_prefix is not None:
                ent = ent + with_prefix[more] * len(self.strings)
            got = load8(xp, b8, start[more] + 8 * j, ln[more] - 8 * j).view(np.int64)
            ok[more] = got == self.cols[j][ent]
        return xp.where(ok, col[_VAL][slot], -1)

    def lookup(self, pre: PreTokens, start: Any = None, end: Any = None) -> Any:
        """Value of each span of ``pre.data`` (default: every pre-token) in the table, or -1."""
        xp = self.xp
        start = pre.start if start is None else start
        end = pre.end if end is None else end
        res = xp.full(start.shape[0], -1, dtype=xp.int64)
        ok = ((end > start) & (end - start <= self.max_len)).nonzero()[0]
        if ok.size:
            s, e = start[ok], end[ok]
            res[ok] = self.find(span_hash(pre, s, e), pre.data, s, e - s, b8=pre.bytes8())
        return res


def _aligned_rows(xp: ModuleType, rec: np.ndarray) -> Any:
    """``rec`` (rows of 64 bytes) on the device, each row inside one cache line (NumPy aligns to 16)."""
    if xp is not np:
        return xp.asarray(rec)  # device allocations are 256-byte aligned
    buf = np.empty(rec.size + 8, dtype=np.int64)
    skip = (-buf.ctypes.data % 64) // 8
    out = buf[skip : skip + rec.size].reshape(rec.shape)
    out[...] = rec
    return out


_CUCKOO_MIX = (_MIX, 0x9FB21C651E98DF25)  # the two slot functions of the cuckoo table


def _build_cuckoo(keys: list[int], bits: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Cuckoo hash table (two slot functions) of distinct uint64 keys, or None when it does not fit."""
    size = 1 << bits
    slot_key = np.zeros(size, dtype=np.uint64)
    slot_idx = np.full(size, -1, dtype=np.int64)
    karr = np.asarray(keys, dtype=np.uint64)
    homes = [((karr * np.uint64(m)) >> np.uint64(64 - bits)).astype(np.int64) for m in _CUCKOO_MIX]
    for i in range(len(keys)):
        item, side = i, 0
        for _ in range(64):
            slot = int(homes[side][item])
            if slot_idx[slot] < 0:
                slot_key[slot], slot_idx[slot] = karr[item], item
                break
            other = int(slot_idx[slot])  # evict it to its other slot
            slot_key[slot], slot_idx[slot] = karr[item], item
            item = other
            side = 1 if int(homes[0][item]) == slot else 0
        else:
            return None
    taken = set(keys)
    empty = 0
    while empty in taken:  # a key no string has marks the empty slots: a probe needs no emptiness test
        empty += 1
    slot_key[slot_idx < 0] = np.uint64(empty)
    return slot_key, slot_idx
