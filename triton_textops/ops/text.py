"""Stage (a) of the tokenizer: UTF-8 input, strict UTF-8 check, BERT normalization and pre-tokenization.

One kernel (:func:`pretokenize`), one thread per text, reads each text's bytes once: it checks the
UTF-8, maps every code point through the normalization table, writes the normalized bytes, splits them
into BERT pre-tokens (whitespace splits, each punctuation character is its own token) and marks the
tokens covered by raw special tokens such as ``[CLS]``. Its output, :class:`PreTokens`, feeds both
WordPiece (:mod:`triton_textops.ops.wordpiece`) and the readability features.

Sizes are known before the launch, so no count pass is needed: a text of ``b`` input bytes yields at
most ``expand * b`` normalized bytes (``expand``, 3 for BERT uncased, is measured from the tables) and at
most ``b`` tokens (no code point normalizes to more than one pre-token: a property of the shipped tables,
checked by the test-suite; the kernel also checks both bounds as it writes and never overruns them). Each
text writes into its own region of those sizes; ``text_len`` and ``ntok`` say how much it used.

Normalization is a per-code-point table lookup. The tables are measured on the HuggingFace oracle by
``scripts/gen_unicode_tables.py`` and shipped as package data; they are never rebuilt from the running
Python's ``unicodedata``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from types import ModuleType
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops import kernels as K
from triton_textops.ops.xp import get_xp, target_of

try:
    from numba import cuda
except ImportError:  # pragma: no cover - numba without its CUDA target: GPU entry points never compiled
    cuda = None

WORD, SPACE, PUNCT = 0, 1, 2  # pre-tokenizer classes of a normalized code point
NOT_SPECIAL, ABSORBED = -1, -2  # PreTokens.special: no raw special token / covered by one, not its first
# rows of PreTokens.tok (int32, one column per token slot); HASH: 32-bit FNV-1a of the token's bytes
START, END, NCHARS, KIND, SPECIAL, HASH = range(6)
N_TOK_ROWS = 6
TEXT_LEN, NTOK, STATUS = range(3)  # rows of PreTokens.txt (int64, one column per text)
AMAP = 0x110000  # the normalization table's ASCII part starts here: normalized byte | class << 8, 0: removed
FULL = 1 << 62  # pretok_text's ``limit`` when every token is needed
MAX_BATCH_BYTES = 1 << 29  # token positions are int32: 512 MiB of text per call at most


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
    def from_texts(cls, texts: Any, xp: ModuleType = np, target: str | None = None) -> TextBatch:
        """Build a batch from a list of str/bytes, a NumPy object array of bytes (shape [n] or [n, 1]),
        or a ``(data uint8, offsets int n+1)`` pair already on the device. Bytes and offsets go to the
        device as ONE host-to-device copy. UTF-8 is checked by the stage-(a) kernel, which names the row.
        ``target`` ("cpu" / "cuda") defaults to the one of ``xp`` (in the CUDA simulator both are NumPy).
        """
        target = target or ("cpu" if xp is np else "cuda")
        if isinstance(texts, TextBatch):
            return texts
        if isinstance(texts, tuple) and len(texts) == 2:
            data, offsets = xp.asarray(texts[0]), xp.asarray(texts[1])
            if data.dtype != np.uint8 or data.ndim != 1:
                raise InputError("the byte buffer must be a 1-D uint8 array")
            if offsets.ndim != 1 or offsets.shape[0] < 1 or offsets.dtype.kind not in "iu":
                raise InputError("offsets must be a 1-D integer array of n+1 entries")
            offsets = offsets.astype(np.int64)
            # checked once on the host: the kernels trust offsets for their bounds
            host = offsets if isinstance(offsets, np.ndarray) else offsets.get()
            if host[0] != 0 or host[-1] != data.shape[0] or bool((np.diff(host) < 0).any()):
                raise InputError("offsets must start at 0, be non-decreasing and end at len(data)")
            if K.SIMULATOR:
                data, offsets = data.copy(), offsets.copy()  # the simulator writes kernel arguments back
            return cls(_read_only(data) if target == "cpu" else data, offsets, xp)
        data_h, offsets_h = pack_host(texts)
        return cls.upload(data_h, offsets_h, xp, target)

    @classmethod
    def upload(cls, data: np.ndarray, offsets: np.ndarray, xp: ModuleType, target: str = "cpu") -> TextBatch:
        """Host bytes + offsets for ``target``: on the GPU as ONE copy (offsets first, 8-byte aligned)."""
        if target == "cpu":
            return cls(_read_only(data), offsets, np)
        head = offsets.shape[0] * 8
        buf = np.empty(head + data.shape[0], dtype=np.uint8)
        buf[:head] = offsets.astype(np.int64, copy=False).view(np.uint8)
        buf[head:] = data
        dev = K.to_device(buf, "cuda", xp)
        return cls(dev[head:], dev[:head].view(np.int64), xp)


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of host bytes: numba compiles a kernel once per argument type, read-only or not,
    so every text buffer reaches the CPU kernels as the one type ``initialize`` compiled for."""
    if not a.flags.writeable:
        return a
    v = a.view()
    v.flags.writeable = False
    return v


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
    one = None  # a batch of one str or bytes (a list, or a request's [1] / [1, 1] object array): the fast path
    if type(texts) is list and len(texts) == 1:
        one = texts[0]
    elif isinstance(texts, np.ndarray) and texts.dtype == np.object_ and texts.size == 1 and texts.ndim in (1, 2):
        one = texts.reshape(-1)[0]
    if type(one) is str or type(one) is bytes:
        try:
            raw = one.encode("utf-8") if type(one) is str else one
        except UnicodeEncodeError:
            raw = None  # the general path names the row
        if raw is not None and len(raw) <= MAX_BATCH_BYTES:
            return np.frombuffer(raw, dtype=np.uint8), np.array([0, len(raw)], dtype=np.int64)
    rows = _as_row_list(texts)
    try:
        ascii_only = all(map(str.isascii, rows))  # TypeError: a row is not a str
    except TypeError:
        ascii_only = False
    if ascii_only:  # ASCII is its own UTF-8: one join, lengths in characters (232 -> 136 us, 512 paragraphs)
        enc: list = rows
        raw = "".join(rows).encode("ascii")
    else:
        try:  # the usual case: all str (one list comprehension)
            enc = [t.encode("utf-8") for t in rows] if all(type(t) is str for t in rows) else None
        except UnicodeEncodeError:
            enc = None  # the loop below names the row
        if enc is None:
            enc = _encode_rows(rows)
        raw = None
    offsets = np.zeros(len(enc) + 1, dtype=np.int64)
    if enc:
        np.cumsum(np.fromiter(map(len, enc), dtype=np.int64, count=len(enc)), out=offsets[1:])
    if offsets[-1] > MAX_BATCH_BYTES:
        raise InputError(f"a batch of {int(offsets[-1])} bytes exceeds the {MAX_BATCH_BYTES} bytes one call takes")
    return np.frombuffer(b"".join(enc) if raw is None else raw, dtype=np.uint8), offsets


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


# ------------------------------------------------------------------------------------ device code


@K.device
def utf8_at(data, i, end):
    """(code point, byte length) of the UTF-8 sequence at ``data[i]`` (``i < end``); code point -1 when
    the bytes there are not strict UTF-8 (RFC 3629: no overlongs, surrogates or values past U+10FFFF)."""
    b0 = int(data[i])
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xC2 or b0 > 0xF4:
        return -1, 1
    need = 4
    lo = 0x80
    hi = 0xBF
    cp = b0 & 0x07
    if b0 < 0xE0:
        need = 2
        cp = b0 & 0x1F
    elif b0 < 0xF0:
        need = 3
        cp = b0 & 0x0F
        if b0 == 0xE0:
            lo = 0xA0
        elif b0 == 0xED:
            hi = 0x9F
    elif b0 == 0xF0:
        lo = 0x90
    elif b0 == 0xF4:
        hi = 0x8F
    if i + need > end:
        return -1, 1
    b1 = int(data[i + 1])
    if b1 < lo or b1 > hi:
        return -1, 1
    cp = (cp << 6) | (b1 & 0x3F)
    for j in range(2, need):
        bj = int(data[i + j])
        if (bj & 0xC0) != 0x80:
            return -1, 1
        cp = (cp << 6) | (bj & 0x3F)
    return cp, need


@K.device
def utf8_valid(data, lo, hi):
    """True when ``data[lo:hi]`` is strict UTF-8."""
    i = lo
    while i < hi:
        if data[i] < 0x80:
            i += 1
            continue
        cp, ln = utf8_at(data, i, hi)
        if cp < 0:
            return False
        i += ln
    return True


@K.device
def special_at(data, i, end, sp_bytes, sp_off, n_sp):
    """Index of the longest raw special token starting at ``data[i]`` (HF's leftmost-longest match), or -1."""
    best = -1
    best_len = 0
    for s in range(n_sp):
        ln = sp_off[s + 1] - sp_off[s]
        if ln <= best_len or i + ln > end:
            continue
        ok = True
        for j in range(ln):
            if data[i + j] != sp_bytes[sp_off[s] + j]:
                ok = False
                break
        if ok:
            best = s
            best_len = ln
    return best


@K.device(inline=True)
def fail_text(txt, t, status):
    """Mark text ``t`` bad (1: invalid UTF-8, 2: a size bound exceeded) with no tokens."""
    txt[STATUS, t] = status
    txt[TEXT_LEN, t] = 0
    txt[NTOK, t] = 0


@K.device(inline=True)
def as_int32(h):
    """A 32-bit hash as the int32 a token row stores."""
    return h - 0x100000000 if h >= 0x80000000 else h


@K.device(inline=True)
def open_token(tok, k, o, kind, mark):
    """Start token ``k`` at normalized position ``o``: ``kind`` 0 word / 1 punctuation, ``mark`` its special
    token (or NOT_SPECIAL / ABSORBED)."""
    tok[START, k] = o
    tok[KIND, k] = kind
    tok[SPECIAL, k] = mark


@K.device(inline=True)
def close_token(tok, k, o, n, h):
    """End token ``k`` at normalized position ``o``: ``n`` characters, FNV-1a hash ``h``."""
    tok[END, k] = o
    tok[NCHARS, k] = n
    tok[HASH, k] = as_int32(h)


@K.device
def pretok_text(t, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt, limit):
    """Stage (a) for text ``t``: UTF-8 check, normalization, pre-tokens, raw special tokens.

    ``limit``: stop before the token that would be the ``limit + 1``-th one not absorbed by a raw special
    token (each such token gives at least one WordPiece piece, so rows of ``limit`` pieces need no more);
    the rest of the text is then only checked to be UTF-8. A text's tokens are all there when it has at
    most ``limit`` of them (callers that need every token pass ``FULL``)."""
    i = offs[t]
    stop = offs[t + 1]
    o = offs[t] * expand
    o_cap = offs[t + 1] * expand
    k = offs[t]  # tokens of text t live at [offs[t], offs[t] + txt[NTOK, t])
    k_cap = offs[t + 1]
    cur = -1  # the word token being read, its characters so far and the FNV-1a hash of its bytes so far
    cur_n = 0
    th = 0
    sp_end = -1  # raw position where the current special match ends
    sp_idx = -1  # its index while its first token is still to come
    used = 0  # tokens started that a raw special token does not absorb
    early = False  # stopped at ``limit``
    while i < stop:
        b = int(data[i])
        if n_sp > 0 and i >= sp_end and sp_first[b] != 0:
            m = special_at(data, i, stop, sp_bytes, sp_off, n_sp)
            if m >= 0:
                sp_end = i + sp_off[m + 1] - sp_off[m]
                sp_idx = m
        if b < 0x80 and i >= sp_end:  # ASCII outside a raw special token: one table entry, no token marks
            a = int(info[AMAP + b])  # normalized byte | class << 8 (0: removed)
            i += 1
            if a >> 8 == WORD:
                if a == 0:
                    continue
                if cur < 0:  # a word starts here
                    if used >= limit:
                        early = True
                        break
                    used += 1
                    if k >= k_cap:  # cannot happen with the measured bounds; never overrun
                        fail_text(txt, t, 2)
                        return
                    open_token(tok, k, o, 0, NOT_SPECIAL)
                    cur = k
                    cur_n = 0
                    th = 0x811C9DC5
                    k += 1
                while True:  # the hot loop: this byte and the word's next ASCII bytes
                    if a != 0:
                        if o >= o_cap:
                            fail_text(txt, t, 2)
                            return
                        out[o] = a & 0xFF
                        th = ((th ^ (a & 0xFF)) * 0x01000193) & 0xFFFFFFFF
                        o += 1
                        cur_n += 1
                    if i >= stop:
                        break
                    b = int(data[i])
                    if b >= 0x80 or sp_first[b] != 0:
                        break
                    a = int(info[AMAP + b])
                    if a >> 8 != WORD:
                        break
                    i += 1
                continue
            # a space or a punctuation character: it ends the word; punctuation is a token of its own
            if o >= o_cap or k >= k_cap:
                fail_text(txt, t, 2)
                return
            if cur >= 0:
                close_token(tok, cur, o, cur_n, th)
                cur = -1
            if a >> 8 == PUNCT:
                if used >= limit:
                    early = True
                    break
                used += 1
            ob = a & 0xFF
            out[o] = ob
            o += 1
            if a >> 8 == PUNCT:
                open_token(tok, k, o - 1, 1, NOT_SPECIAL)
                close_token(tok, k, o, 1, ((0x811C9DC5 ^ ob) * 0x01000193) & 0xFFFFFFFF)
                k += 1
            continue
        mark = NOT_SPECIAL
        if i < sp_end:
            mark = ABSORBED if sp_idx < 0 else sp_idx
        if b < 0x80:  # ASCII inside a raw special token
            a = int(info[AMAP + b])
            i += 1
            if a == 0:
                continue
            ln = 1
            nb = 1
            src = -2
            ob = a & 0xFF
            cls = a >> 8
        else:
            cp, ln = utf8_at(data, i, stop)
            if cp < 0:
                fail_text(txt, t, 1)
                return
            inf = int(info[cp])
            ob = 0
            nb = inf & 0xFF
            src = (inf >> 10) - 1  # replacement bytes in pool, or -1: the character is kept as it is
            cls = (inf >> 8) & 3
            i += ln
        # the normalized characters of this input character: its own bytes, one ASCII byte, or the pool's
        p = 0
        while p < nb:
            c_len = nb
            if src == -2:
                c_len = 1
            elif src >= 0:
                c_cp, c_len = utf8_at(pool, src + p, src + nb)
                cls = (int(info[c_cp]) >> 8) & 3
            if o + c_len > o_cap or k >= k_cap:  # cannot happen with the measured bounds; never overrun
                fail_text(txt, t, 2)
                return
            if cls != WORD and cur >= 0:  # a space or a punctuation character ends the word
                close_token(tok, cur, o, cur_n, th)
                cur = -1
            if cls == PUNCT or (cls == WORD and cur < 0):  # a token starts here
                if mark != ABSORBED:
                    if used >= limit:
                        early = True
                        break
                    used += 1
                open_token(tok, k, o, 1 if cls == PUNCT else 0, mark)
                th = 0x811C9DC5
                if cls != PUNCT:
                    cur = k
                    cur_n = 0
                k += 1
                if mark >= 0:  # the special token's first token is placed: the rest are absorbed
                    sp_idx = -1
                    mark = ABSORBED
            cur_n += 1
            for j in range(c_len):
                if src == -2:
                    c = ob
                elif src < 0:
                    c = int(data[i - ln + j])
                else:
                    c = int(pool[src + p + j])
                out[o + j] = c
                th = ((th ^ c) * 0x01000193) & 0xFFFFFFFF
            if cls == PUNCT:
                close_token(tok, k - 1, o + c_len, 1, th)
            o += c_len
            p += c_len
        if early:
            break
    if early and not utf8_valid(data, i, stop):  # what the tokens did not need must still be UTF-8
        fail_text(txt, t, 1)
        return
    if cur >= 0:
        close_token(tok, cur, o, cur_n, th)
    txt[TEXT_LEN, t] = o - offs[t] * expand
    txt[NTOK, t] = k - offs[t]
    txt[STATUS, t] = 0


def _pretok_cpu(share, shares, n, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt):
    for t in range(share, n, shares):
        pretok_text(t, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt, FULL)


def _pretok_gpu(n, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        pretok_text(t, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt, FULL)


PRETOKENIZE = (K.cpu(_pretok_cpu), K.gpu(_pretok_gpu))


def _utf8_rows_cpu(share, shares, n, data, offs, bad):
    for t in range(share, n, shares):
        bad[t] = 0 if utf8_valid(data, offs[t], offs[t + 1]) else 1


UTF8_ROWS = K.cpu(_utf8_rows_cpu)


def invalid_utf8_rows(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sorted indices of the host rows ``data[offsets[i]:offsets[i+1]]`` that are not strict UTF-8 (the
    stage-(a) kernel's check, for callers that reject bad rows before batching)."""
    n = offsets.shape[0] - 1
    bad = np.zeros(n, dtype=np.uint8)
    if n and data.shape[0] and int(data.max()) >= 0x80:  # all-ASCII bytes are valid UTF-8: no launch
        K.COUNTS["launch"] += 1
        K.run_cpu(UTF8_ROWS, n, _read_only(data), offsets.astype(np.int64, copy=False), bad)
    return bad.nonzero()[0].astype(np.int64)


# ------------------------------------------------------------------------------------ normalization


@functools.lru_cache(maxsize=1)
def _host_tables() -> dict[str, np.ndarray]:
    path = resources.files("triton_textops") / "data" / "unicode_tables.npz"
    with resources.as_file(path) as p, np.load(p) as z:
        return {k: z[k] for k in z.files}


@dataclass
class PreTokens:
    """Normalized text and its BERT pre-tokens for ``n`` texts (arrays of ``xp``, on the batch's device).

    Text ``t`` owns the normalized bytes ``data[expand * offs[t] : expand * offs[t] + text_len[t]]`` and the tokens
    ``offs[t] .. offs[t] + ntok[t] - 1`` (``offs``: the input offsets; regions are sized by the bounds in
    the module docstring). Per token (``tok``, int32 rows) and per text (``txt``, int64 rows): A token's ``start``/``end`` index ``data``; ``kind`` is 1 for a one-character
    punctuation token, 0 for a word; ``special`` is the index of the raw special token whose first token
    it is, ``-2`` for the other tokens such a match covers, ``-1`` otherwise. ``status`` is 0 for a valid
    text, 1 for invalid UTF-8."""

    xp: ModuleType
    target: str
    n: int
    data: Any
    expand: int
    offs: Any
    tok: Any
    txt: Any
    lowercase: bool = True

    start = property(lambda self: self.tok[START])
    end = property(lambda self: self.tok[END])
    nchars = property(lambda self: self.tok[NCHARS])
    kind = property(lambda self: self.tok[KIND])
    special = property(lambda self: self.tok[SPECIAL])
    text_len = property(lambda self: self.txt[TEXT_LEN])
    ntok = property(lambda self: self.txt[NTOK])
    status = property(lambda self: self.txt[STATUS])

    def check(self) -> None:
        """Raise :class:`InputError` naming the first invalid row (copies the status to the host once)."""
        st = K.to_host(self.status, self.target)
        raise_bad_rows(st)

    def token_index(self) -> np.ndarray:
        """Host indices of every token in use, text by text (the regions' used parts, in order)."""
        offs = K.to_host(self.offs, self.target)[:-1]
        cnt = K.to_host(self.ntok, self.target)
        ends = np.cumsum(cnt)
        return np.repeat(offs - (ends - cnt), cnt) + np.arange(int(ends[-1]) if cnt.shape[0] else 0)

    def word_bytes(self) -> list[bytes]:
        """Normalized bytes of every word token (not punctuation), text by text: what fitting counts."""
        idx = self.token_index()
        kind = K.to_host(self.kind, self.target)[idx]
        keep = idx[kind == 0]
        raw = K.to_host(self.data, self.target).tobytes()
        start, end = K.to_host(self.start, self.target), K.to_host(self.end, self.target)
        return [raw[s:e] for s, e in zip(start[keep].tolist(), end[keep].tolist())]

    def tokens(self, t: int) -> list[bytes]:
        """Normalized bytes of text ``t``'s tokens (a host-side aid for tests and debugging)."""
        h = {f: K.to_host(getattr(self, f), self.target) for f in ("data", "offs", "ntok", "start", "end")}
        lo = int(h["offs"][t])
        return [h["data"][h["start"][k] : h["end"][k]].tobytes() for k in range(lo, lo + int(h["ntok"][t]))]


def raise_bad_rows(status: np.ndarray) -> None:
    """Raise :class:`InputError` for the rows whose stage-(a) status is not 0."""
    if not np.count_nonzero(status):  # (a quarter of the time of status.any() for a batch of one)
        return
    bad = status.nonzero()[0]
    if bad.shape[0]:
        r = int(bad[0])
        why = "text is not valid UTF-8" if status[r] == 1 else "internal size bound exceeded"
        raise InputError(f"row {r}: {why}", rows=bad.astype(np.int64))


class Normalizer:
    """BERT normalizer + pre-tokenizer tables for one casing, on one device."""

    def __init__(self, lowercase: bool, device: str = "cpu") -> None:
        t = _host_tables()
        key = "uncased" if lowercase else "cased"
        self.lowercase = lowercase
        self.device = device
        self.target = target_of(device)
        self.xp = get_xp(device)
        out_len = t[f"{key}_len"].astype(np.int64)
        out_off = t[f"{key}_off"].astype(np.int64)
        pool = t[f"{key}_pool"]
        cls = t["pretok_class"].astype(np.int64)
        self.expand = _expansion(out_len)
        # one int32 per code point: output length | pre-tokenizer class << 8 | (pool offset + 1) << 10
        info = out_len | (cls << 8) | ((out_off + 1) << 10)
        if info.max() >= 1 << 31:
            raise RuntimeError("unicode tables: pool offsets too large for the packed table")
        amap = np.zeros(128, dtype=np.int32)  # ASCII: normalized byte | its class << 8; 0: removed
        for b in range(128):
            if out_len[b] == 1:
                ob = b if out_off[b] < 0 else int(pool[out_off[b]])
                if not 0 < ob < 0x80:
                    raise RuntimeError("unicode tables: ASCII must map to ASCII")
                amap[b] = ob | (int(cls[ob]) << 8)
            elif out_len[b] > 1:
                raise RuntimeError("unicode tables: an ASCII code point maps to more than one byte")
        self._host = {"info": np.concatenate([info.astype(np.int32), amap]), "pool": _read_only(np.ascontiguousarray(pool))}
        self.tables = {k: K.to_device(v, self.target, self.xp) for k, v in self._host.items()}

    @classmethod
    def get(cls, lowercase: bool = True, device: str = "cpu") -> Normalizer:
        """Cached instance per (casing, device)."""
        return _normalizer(lowercase, device)

    def pretokenize(self, batch: TextBatch, specials: list[bytes] | None = None) -> PreTokens:
        """Stage (a) of a batch in one kernel launch; ``specials`` are raw strings matched before
        normalization (HF's added special tokens such as ``[CLS]``). Never raises for bad rows:
        ``PreTokens.status`` says which rows are not UTF-8 (:meth:`PreTokens.check`)."""
        xp, target = self.xp, self.target
        n = batch.n
        nb = int(batch.data.shape[0])
        out = xp.empty(self.expand * nb, dtype=np.uint8)
        tok = xp.empty((N_TOK_ROWS, nb), dtype=np.int32)
        txt = xp.empty((3, n), dtype=np.int64)
        if n:
            K.launch(target, PRETOKENIZE, n, *self.args(batch, specials), out, self.expand, tok, txt)
        return PreTokens(xp=xp, target=target, n=n, data=out, expand=self.expand, offs=batch.offsets,
                         tok=tok, txt=txt, lowercase=self.lowercase)

    def args(self, batch: TextBatch, specials: list[bytes] | None) -> tuple:
        """The stage-(a) kernel's inputs: text, tables, raw special tokens."""
        sp = _special_tables(tuple(specials or ()), self.target, self.device)
        return (batch.data, batch.offsets, self.tables["info"], self.tables["pool"], *sp, len(specials or ()))


def _expansion(out_len: np.ndarray) -> int:
    """The largest ratio (rounded up) of normalized to input UTF-8 bytes over all code points."""
    cp = np.arange(out_len.shape[0])
    in_len = np.where(cp < 0x80, 1, np.where(cp < 0x800, 2, np.where(cp < 0x10000, 3, 4)))
    return max(1, int(np.ceil(out_len / in_len).max()))


@functools.lru_cache(maxsize=32)
def _special_tables(specials: tuple[bytes, ...], target: str, device: str) -> tuple[Any, Any, Any]:
    """(first-byte flags [256], concatenated bytes, offsets) of the raw special strings, on the device."""
    first = np.zeros(256, dtype=np.uint8)
    for s in specials:
        first[s[0]] = 1
    data = np.frombuffer(b"".join(specials) or b"\0", dtype=np.uint8).copy()
    off = np.zeros(len(specials) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(s) for s in specials])
    xp = get_xp(device)
    return tuple(K.to_device(a, target, xp) for a in (first, data, off))


@functools.lru_cache(maxsize=16)
def _normalizer(lowercase: bool, device: str) -> Normalizer:
    return Normalizer(lowercase, device)
