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
text writes into its own region of those sizes; ``text_len`` and ``ntok`` say how much it used. Token
positions are relative to their text's region (32-bit each, so a batch has no size limit), and the kernel
checks each text's span in the caller's offsets before it reads it (a bad one is an InputError naming the
row, never an access outside the arrays).

Normalization is a per-code-point table lookup. The tables are measured on the HuggingFace oracle by
``scripts/gen_unicode_tables.py`` and shipped as package data; they are never rebuilt from the running
Python's ``unicodedata``. The one thing a per-code-point table cannot do, NFD's canonical ordering of the
combining marks that survive uncased normalization (``x U+302E U+1B44`` -> ``x U+1B44 U+302E``), the kernel
does from the measured combining classes: a run of marks is sorted once when it ends (:func:`settle_run`).
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
from triton_textops.ops.args import check_int
from triton_textops.ops.xp import get_xp, target_of

try:
    from numba import cuda
except ImportError:  # pragma: no cover - numba without its CUDA target: GPU entry points never compiled
    cuda = None

WORD, SPACE, PUNCT = 0, 1, 2  # pre-tokenizer classes of a normalized code point
NOT_SPECIAL, ABSORBED = -1, -2  # PreTokens.special: no raw special token / covered by one, not its first
# rows of PreTokens.tok (TOK_DTYPE, one column per token slot); HASH: 32-bit FNV-1a of the token's bytes
START, END, NCHARS, KIND, SPECIAL, HASH = range(6)
N_TOK_ROWS = 6
TEXT_LEN, NTOK, STATUS = range(3)  # rows of PreTokens.txt (int64, one column per text)
# PreTokens.status of a text: why it has no tokens (0: fine). Each is an InputError naming the row.
OK, BAD_UTF8, SIZE_BOUND, BAD_SPAN, BAD_PRETOKENS, TOO_LONG = range(6)
AMAP = 0x110000  # the normalization table's ASCII part starts here: normalized byte | class << 8, 0: removed
# the packed per-code-point entry of the table (int32, see Normalizer): output length | class | pool offset + 1 |
# combining rank (canonical combining class as an order-preserving rank; 0: a starter, or a removed character
# that ends a combining run; RANK_TRANSPARENT: a removed character that does not)
LEN_MASK, CLASS_SHIFT, POOL_SHIFT, RANK_SHIFT = 15, 4, 6, 26
POOL_MASK, RANK_MASK = (1 << (RANK_SHIFT - POOL_SHIFT)) - 1, 31
RANK_TRANSPARENT = 31
UNSORTED = 32  # pretok_text's run state: a mark followed one of a higher rank
FULL = 1 << 62  # pretok_text's ``limit`` when every token is needed
# token rows are int32 (24 bytes of scratch per input byte). A token's start/end is its position in its own
# text's normalized region, stored as an unsigned 32-bit value (:func:`pos_at`): a batch has no size limit
# (absolute int32 positions overflowed past ~716 MB) and a text may normalize to MAX_TEXT_POS bytes (~1.4 GB
# of input; a longer one is refused, status TOO_LONG)
TOK_DTYPE = np.int32
MAX_TEXT_POS = 0xFFFFFFFF


# --------------------------------------------------------------------------------------------- input


@dataclass
class TextBatch:
    """Raw UTF-8 bytes of ``n`` texts: ``data`` (uint8, 1-D) and ``offsets`` (int64, n+1), on one device.

    Text ``i`` is ``data[offsets[i]:offsets[i+1]]``. Its structure (arrays, dtypes, dims, one device) is
    checked when a batch is made; the offsets' values are checked by the stage-(a) kernel for each text as
    it reads it (non-decreasing, inside ``data``), at no extra copy: a bad span is an :class:`InputError`
    naming the row, never an access outside the arrays."""

    data: Any
    offsets: Any
    xp: ModuleType

    def __post_init__(self) -> None:
        data, offsets = self.data, self.offsets
        on_host = self.xp is np
        for name, a in (("data", data), ("offsets", offsets)):
            if not hasattr(a, "dtype") or not hasattr(a, "ndim") or isinstance(a, np.ndarray) != on_host:
                where = "NumPy arrays" if on_host else "arrays of the batch's device"
                raise InputError(f"TextBatch.{name} must be one of {where}, got {type(a).__name__}")
        if data.dtype != np.uint8 or data.ndim != 1:
            raise InputError(f"TextBatch.data must be a 1-D uint8 array, got {data.ndim}-D {data.dtype}")
        if offsets.ndim != 1 or offsets.shape[0] < 1 or offsets.dtype.kind not in "iu":
            raise InputError(f"TextBatch.offsets must be a 1-D integer array of n+1 entries, got "
                             f"{offsets.ndim}-D {offsets.dtype} of shape {tuple(offsets.shape)}")
        if offsets.dtype != np.int64 or not offsets.flags.c_contiguous:
            self.offsets = self.xp.ascontiguousarray(offsets, dtype=np.int64)  # (uint64 >= 2**63: negative, refused)
        if not data.flags.c_contiguous:
            self.data = self.xp.ascontiguousarray(data)

    @property
    def n(self) -> int:
        return int(self.offsets.shape[0]) - 1

    @classmethod
    def from_texts(cls, texts: Any, xp: ModuleType = np, target: str | None = None) -> TextBatch:
        """Build a batch from a list of str/bytes, a NumPy object array of bytes (shape [n] or [n, 1]),
        a ``(data uint8, offsets int n+1)`` pair of arrays, or a :class:`TextBatch`, for the kernels of
        ``target`` ("cpu" / "cuda"; default: that of ``xp``; in the CUDA simulator both are NumPy). Host
        bytes go to the device as ONE copy. UTF-8 and the offsets' values are checked by the stage-(a) kernel,
        which names the row."""
        target = target or ("cpu" if xp is np else "cuda")
        if isinstance(texts, TextBatch):
            return cls._placed(texts.data, texts.offsets, xp, target)
        if _is_buffer_pair(texts):
            data, offsets = texts
            if isinstance(offsets, (list, tuple)):  # offsets written out: on the buffer's device
                offsets = np.asarray(offsets) if isinstance(data, np.ndarray) else xp.asarray(offsets)
            if isinstance(data, np.ndarray) != isinstance(offsets, np.ndarray):
                raise InputError("the byte buffer and its offsets must be on the same device")
            return cls._placed(data, offsets, xp, target)
        data_h, offsets_h = pack_host(texts)
        return cls._upload(data_h, offsets_h, xp, target)

    @classmethod
    def _placed(cls, data: Any, offsets: Any, xp: ModuleType, target: str) -> TextBatch:
        """A caller's buffer and offsets, checked (:meth:`__post_init__`) and on ``target``'s device as the
        kernels take them: read-only NumPy on the CPU, writable copies in the simulator (it writes kernel
        arguments back), device arrays on a GPU (host ones uploaded as one copy)."""
        on_host = isinstance(data, np.ndarray)
        batch = cls(data, offsets, np if on_host else xp)
        if target == "cpu":
            if not on_host:
                return cls(_read_only(batch.data.get()), batch.offsets.get(), np)
            return cls(_read_only(batch.data), batch.offsets, np)
        if K.SIMULATOR:
            return cls(batch.data.copy(), batch.offsets.copy(), xp)
        if on_host and xp is not np:
            return cls._upload(batch.data, batch.offsets, xp, target)
        return batch

    @classmethod
    def upload(cls, data: np.ndarray, offsets: np.ndarray, xp: ModuleType, target: str = "cpu") -> TextBatch:
        """Host bytes + offsets for ``target``: on the GPU as ONE copy (offsets first, 8-byte aligned)."""
        host = cls(data, offsets, np)  # checked
        return cls._upload(host.data, host.offsets, xp, target)

    @classmethod
    def _upload(cls, data: np.ndarray, offsets: np.ndarray, xp: ModuleType, target: str) -> TextBatch:
        """:meth:`upload` of arrays made as the kernels take them (:func:`pack_host`'s, or checked)."""
        if target == "cpu":
            return cls._made(_read_only(data), offsets.astype(np.int64, copy=False), np)
        head = offsets.shape[0] * 8
        buf = np.empty(head + data.shape[0], dtype=np.uint8)
        buf[:head] = offsets.astype(np.int64, copy=False).view(np.uint8)
        buf[head:] = data
        dev = K.to_device(buf, "cuda", xp)
        return cls._made(dev[head:], dev[:head].view(np.int64), xp)

    @classmethod
    def _made(cls, data: Any, offsets: Any, xp: ModuleType) -> TextBatch:
        """A batch of arrays made here as the kernels take them (1-D contiguous uint8 and int64): the structure
        needs no check (a batch of one text is ~1 us faster); the kernels still check the spans."""
        batch = cls.__new__(cls)
        batch.data, batch.offsets, batch.xp = data, offsets, xp
        return batch


def count_texts(texts: Any) -> int:
    """How many texts ``texts`` holds, in any form :meth:`TextBatch.from_texts` takes (nothing is packed)."""
    if isinstance(texts, TextBatch):
        return texts.n
    if _is_buffer_pair(texts):
        return len(texts[1]) - 1
    if isinstance(texts, np.ndarray):
        return int(texts.shape[0]) if texts.ndim else 1
    return len(texts) if hasattr(texts, "__len__") else 0


def runs_on_cpu(target: str, texts: Any, gpu_min_batch: Any) -> bool:
    """The GPU placement rule: a batch for ``target`` "cuda" runs on the CPU kernels when it has fewer than
    ``gpu_min_batch`` texts (None: :data:`~triton_textops.ops.kernels.GPU_MIN_BATCH`, which says why)."""
    gpu_min_batch = check_int("gpu_min_batch", K.GPU_MIN_BATCH if gpu_min_batch is None else gpu_min_batch, 0)
    return target != "cpu" and count_texts(texts) < gpu_min_batch


def _is_buffer_pair(texts: Any) -> bool:
    """``(data, offsets)``: a byte array (NumPy or device) and its offsets (an array, or a list of ints), not a
    tuple of two texts."""
    if not (isinstance(texts, tuple) and len(texts) == 2):
        return False
    data, offsets = texts
    return ((isinstance(data, np.ndarray) or hasattr(data, "__cuda_array_interface__"))
            and (isinstance(offsets, (np.ndarray, list, tuple)) or hasattr(offsets, "__cuda_array_interface__")))


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
        if raw is not None:
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
        if i + 8 <= hi:  # ASCII eight bytes at a time (unsigned indices: no negative-index wrap per load)
            u = np.uint64(i)
            if (data[u] | data[u + np.uint64(1)] | data[u + np.uint64(2)] | data[u + np.uint64(3)]
                    | data[u + np.uint64(4)] | data[u + np.uint64(5)] | data[u + np.uint64(6)]
                    | data[u + np.uint64(7)]) < 0x80:
                i += 8
                continue
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
    """A value in ``0 .. 2**32 - 1`` (a hash, a position) as the int32 a token row stores."""
    return h - 0x100000000 if h >= 0x80000000 else h


@K.device(inline=True)
def pos_at(tok, row, k):
    """Token ``k``'s START or END (``row``): its position in its text's normalized region, which the int32 row
    stores as an unsigned 32-bit value."""
    return int(tok[row, k]) & 0xFFFFFFFF


@K.device(inline=True)
def open_token(tok, k, o, kind, mark):
    """Start token ``k`` at normalized position ``o``: ``kind`` 0 word / 1 punctuation, ``mark`` its special
    token (or NOT_SPECIAL / ABSORBED)."""
    tok[START, k] = as_int32(o)
    tok[KIND, k] = kind
    tok[SPECIAL, k] = mark


@K.device(inline=True)
def close_token(tok, k, o, n, h):
    """End token ``k`` at normalized position ``o``: ``n`` characters, FNV-1a hash ``h``."""
    tok[END, k] = as_int32(o)
    tok[NCHARS, k] = n
    tok[HASH, k] = as_int32(h)


@K.device
def settle_run(run, out, lo, hi, h, th, info, tok, k, k_cap, txt, t):
    """End the combining run ``out[lo:hi]`` (``run``: its highest rank, | UNSORTED when a mark followed one of
    a higher rank). An unsorted run is sorted stably by rank, as NFD's canonical ordering does, and the
    token's hash is recomputed from ``h`` (its value before the run) over the sorted bytes. Returns the
    token's hash (``th`` when nothing moved), or -1 when the scratch is too small (the text is then marked
    SIZE_BOUND).

    Linear in the run (one pass per rank present, at most 30), never quadratic: the run's bytes are first
    copied to the free token columns ``k .. k_cap - 1`` of ``tok`` (6 entries per column). A text has
    one token column per input byte and each token took at least one input byte, none of the run's but the
    first, so at least (the run's input bytes - 1) columns are free; the run's bytes are at most ``expand``
    (3) times its input bytes, and a run to sort has two marks of two bytes or more. Checked anyway: a run
    that does not fit fails the text, it never overruns.
    """
    if run & UNSORTED == 0:
        return th
    ln = hi - lo
    if ln > N_TOK_ROWS * (k_cap - k):
        fail_text(txt, t, SIZE_BOUND)
        return -1
    for j in range(ln):
        tok[j % N_TOK_ROWS, k + j // N_TOK_ROWS] = out[lo + j]
    w = lo
    for r in range(1, (run & RANK_MASK) + 1):
        j = 0
        while j < ln:
            b0 = int(tok[j % N_TOK_ROWS, k + j // N_TOK_ROWS])
            n = 1
            cp = b0
            if b0 >= 0xF0:
                n = 4
                cp = b0 & 0x07
            elif b0 >= 0xE0:
                n = 3
                cp = b0 & 0x0F
            elif b0 >= 0xC0:
                n = 2
                cp = b0 & 0x1F
            for q in range(1, n):
                cp = (cp << 6) | (int(tok[(j + q) % N_TOK_ROWS, k + (j + q) // N_TOK_ROWS]) & 0x3F)
            if (int(info[cp]) >> RANK_SHIFT) & RANK_MASK == r:
                for q in range(n):
                    c = int(tok[(j + q) % N_TOK_ROWS, k + (j + q) // N_TOK_ROWS])
                    out[w] = c
                    h = ((h ^ c) * 0x01000193) & 0xFFFFFFFF
                    w += 1
            j += n
    return h


@K.device
def pretok_text(t, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt, limit):
    """Stage (a) for text ``t``: UTF-8 check, normalization, pre-tokens, raw special tokens.

    The text's span ``offs[t] .. offs[t+1]`` is checked first (non-decreasing, inside ``data`` and the
    scratch regions; else status BAD_SPAN), so offsets from a caller never lead to an access outside the
    arrays. Token positions are relative to the text's normalized region (:func:`pos_at`).

    Combining marks that survive the uncased normalization are put in canonical order, as HF's NFD does: a
    mark of a lower combining rank than the run before it marks the run unsorted, and :func:`settle_run` sorts
    the run when it ends (a starter, a removed character that ends runs, or the end of the text).

    ``limit``: stop before the token that would be the ``limit + 1``-th one not absorbed by a raw special
    token (each such token gives at least one WordPiece piece, so rows of ``limit`` pieces need no more);
    the rest of the text is then only checked to be UTF-8. A text's tokens are all there when it has at
    most ``limit`` of them (callers that need every token pass ``FULL``)."""
    i = offs[t]
    stop = offs[t + 1]
    if i < 0 or stop < i or stop > data.shape[0] or stop > tok.shape[1] or stop * expand > out.shape[0]:
        fail_text(txt, t, BAD_SPAN)
        return
    if (stop - i) * expand > MAX_TEXT_POS:
        fail_text(txt, t, TOO_LONG)
        return
    base = i * expand  # the text's normalized region starts here; tokens store positions relative to it
    o = base
    o_cap = stop * expand
    k = i  # tokens of text t live at [offs[t], offs[t] + txt[NTOK, t])
    k_cap = stop
    cur = -1  # the word token being read, its characters so far and the FNV-1a hash of its bytes so far
    cur_n = 0
    th = 0
    sp_end = -1  # raw position where the current special match ends
    sp_idx = -1  # its index while its first token is still to come
    used = 0  # tokens started that a raw special token does not absorb
    early = False  # stopped at ``limit``
    run = 0  # the current combining run out[run_lo:o]: its highest rank | UNSORTED (0: no run)
    run_lo = 0
    run_h = 0  # the token's hash before the run
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
            if a == 0:  # removed before NFD (a control character): combining runs go on across it
                continue
            if run != 0:  # an ASCII character is a starter: it ends the combining run
                th = settle_run(run, out, run_lo, o, run_h, th, info, tok, k, k_cap, txt, t)
                if th < 0:
                    return
                run = 0
            if a >> 8 == WORD:
                if cur < 0:  # a word starts here
                    if used >= limit:
                        early = True
                        break
                    used += 1
                    if k >= k_cap:  # cannot happen with the measured bounds; never overrun
                        fail_text(txt, t, SIZE_BOUND)
                        return
                    open_token(tok, k, o - base, 0, NOT_SPECIAL)
                    cur = k
                    cur_n = 0
                    th = 0x811C9DC5
                    k += 1
                while True:  # the hot loop: this byte and the word's next ASCII bytes
                    if a != 0:
                        if o >= o_cap:
                            fail_text(txt, t, SIZE_BOUND)
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
                fail_text(txt, t, SIZE_BOUND)
                return
            if cur >= 0:
                close_token(tok, cur, o - base, cur_n, th)
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
                open_token(tok, k, o - 1 - base, 1, NOT_SPECIAL)
                close_token(tok, k, o - base, 1, ((0x811C9DC5 ^ ob) * 0x01000193) & 0xFFFFFFFF)
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
            rank = 0
        else:
            cp, ln = utf8_at(data, i, stop)
            if cp < 0:
                fail_text(txt, t, BAD_UTF8)
                return
            inf = int(info[cp])
            ob = 0
            nb = inf & LEN_MASK
            src = ((inf >> POOL_SHIFT) & POOL_MASK) - 1  # replacement bytes in pool, or -1: kept as it is
            cls = (inf >> CLASS_SHIFT) & 3
            rank = (inf >> RANK_SHIFT) & RANK_MASK
            i += ln
            if nb == 0:  # removed: some characters end a combining run (rank 0), the others do not
                if rank == 0 and run != 0:
                    th = settle_run(run, out, run_lo, o, run_h, th, info, tok, k, k_cap, txt, t)
                    if th < 0:
                        return
                    run = 0
                continue
        # the normalized characters of this input character: its own bytes, one ASCII byte, or the pool's
        p = 0
        while p < nb:
            c_len = nb
            if src == -2:
                c_len = 1
            elif src >= 0:
                c_cp, c_len = utf8_at(pool, src + p, src + nb)
                c_inf = int(info[c_cp])
                cls = (c_inf >> CLASS_SHIFT) & 3
                rank = (c_inf >> RANK_SHIFT) & RANK_MASK
            if o + c_len > o_cap or k >= k_cap:  # cannot happen with the measured bounds; never overrun
                fail_text(txt, t, SIZE_BOUND)
                return
            if rank == 0 and run != 0:  # a starter ends the combining run
                th = settle_run(run, out, run_lo, o, run_h, th, info, tok, k, k_cap, txt, t)
                if th < 0:
                    return
                run = 0
            if cls != WORD and cur >= 0:  # a space or a punctuation character ends the word
                close_token(tok, cur, o - base, cur_n, th)
                cur = -1
            if cls == PUNCT or (cls == WORD and cur < 0):  # a token starts here
                if mark != ABSORBED:
                    if used >= limit:
                        early = True
                        break
                    used += 1
                open_token(tok, k, o - base, 1 if cls == PUNCT else 0, mark)
                th = 0x811C9DC5
                if cls != PUNCT:
                    cur = k
                    cur_n = 0
                k += 1
                if mark >= 0:  # the special token's first token is placed: the rest are absorbed
                    sp_idx = -1
                    mark = ABSORBED
            if rank != 0:  # a combining mark (a word character: checked with the tables)
                if run == 0:
                    run_lo = o
                    run_h = th
                    run = rank
                elif rank < run & RANK_MASK:
                    run |= UNSORTED
                else:
                    run = (run & UNSORTED) | rank
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
                close_token(tok, k - 1, o + c_len - base, 1, th)
            o += c_len
            p += c_len
        if early:
            break
    if early and not utf8_valid(data, i, stop):  # what the tokens did not need must still be UTF-8
        fail_text(txt, t, BAD_UTF8)
        return
    if run != 0:
        th = settle_run(run, out, run_lo, o, run_h, th, info, tok, k, k_cap, txt, t)
        if th < 0:
            return
    if cur >= 0:
        close_token(tok, cur, o - base, cur_n, th)
    txt[TEXT_LEN, t] = o - base
    txt[NTOK, t] = k - offs[t]
    txt[STATUS, t] = OK


def _pretok_cpu(share, shares, n, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt):
    for t in range(share, n, shares):
        pretok_text(t, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt, FULL)


def _pretok_gpu(n, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        pretok_text(t, data, offs, info, pool, sp_first, sp_bytes, sp_off, n_sp, out, expand, tok, txt, FULL)


PRETOKENIZE = (K.cpu(_pretok_cpu), K.gpu(_pretok_gpu))


def _utf8_rows_cpu(share, shares, n, data, offs, bad):
    for t in range(share, n, shares):
        lo = offs[t]
        hi = offs[t + 1]
        bad[t] = 0 if 0 <= lo <= hi <= data.shape[0] and utf8_valid(data, lo, hi) else 1


UTF8_ROWS = K.cpu(_utf8_rows_cpu)


def invalid_utf8_rows(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sorted indices of the host rows ``data[offsets[i]:offsets[i+1]]`` that are not strict UTF-8, or not a
    span inside ``data`` (the stage-(a) kernel's checks, for callers that reject bad rows before batching)."""
    n = offsets.shape[0] - 1
    bad = np.zeros(n, dtype=np.uint8)
    nb = data.shape[0]
    spans_ok = offsets[0] == 0 and offsets[-1] == nb and (n == 1 or bool((np.diff(offsets) >= 0).all()))
    if n and (not spans_ok or (nb and int(data.max()) >= 0x80)):  # all-ASCII bytes are valid UTF-8: no launch
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

    Text ``t`` owns the normalized bytes ``data[base : base + text_len[t]]`` with ``base = expand * offs[t]``
    and the tokens ``offs[t] .. offs[t] + ntok[t] - 1`` (``offs``: the input offsets; regions are sized by the
    bounds in the module docstring). Per token (``tok``, int32 rows) and per text (``txt``, int64 rows): a
    token's ``start``/``end`` are positions in its text's region (add ``base``); ``kind`` is 1 for a
    one-character punctuation token, 0 for a word; ``special`` is the index of the raw special token whose
    first token it is, ``-2`` for the other tokens such a match covers, ``-1`` otherwise. ``status`` is OK (0)
    for a valid text, else why it has no tokens (BAD_UTF8, TOO_LONG, ...).

    The structure is checked when made; kernels that take pre-tokens check each text's span and tokens
    (:func:`pretokens_ok`) before they read them, so a caller's pre-tokens never lead outside the arrays."""

    xp: ModuleType
    target: str
    n: int
    data: Any
    expand: int
    offs: Any
    tok: Any
    txt: Any
    lowercase: bool = True

    def __post_init__(self) -> None:
        def need(ok: bool, what: str) -> None:
            if not ok:
                raise InputError(f"PreTokens: {what}")

        arrays = {"data": self.data, "offs": self.offs, "tok": self.tok, "txt": self.txt}
        for name, a in arrays.items():
            need(hasattr(a, "dtype") and hasattr(a, "shape") and isinstance(a, np.ndarray) == (self.xp is np)
                 and a.flags.c_contiguous, f"{name} must be a C-contiguous array of the pre-tokens' device")
        need(type(self.n) is int and self.n >= 0, "n must be an int >= 0")
        need(type(self.expand) is int and 1 <= self.expand <= 255, "expand must be an int in 1..255")
        need(self.data.dtype == np.uint8 and self.data.ndim == 1, "data must be 1-D uint8")
        need(self.offs.dtype == np.int64 and self.offs.shape == (self.n + 1,), "offs must be int64 of n+1 entries")
        need(self.tok.dtype == TOK_DTYPE and self.tok.ndim == 2 and self.tok.shape[0] == N_TOK_ROWS,
             f"tok must be int32 of shape ({N_TOK_ROWS}, bytes)")
        need(self.txt.dtype == np.int64 and self.txt.shape == (3, self.n), "txt must be int64 of shape (3, n)")
        need(self.target == "cuda" or (self.target == "cpu" and self.xp is np),
             "target must be 'cpu' (NumPy arrays) or 'cuda'")

    start = property(lambda self: self.tok[START].view(np.uint32))
    end = property(lambda self: self.tok[END].view(np.uint32))
    nchars = property(lambda self: self.tok[NCHARS])
    kind = property(lambda self: self.tok[KIND])
    special = property(lambda self: self.tok[SPECIAL])
    text_len = property(lambda self: self.txt[TEXT_LEN])
    ntok = property(lambda self: self.txt[NTOK])
    status = property(lambda self: self.txt[STATUS])

    def check(self) -> None:
        """Raise :class:`InputError` naming the first bad row (copies the status to the host once)."""
        raise_bad_rows(K.to_host(self.status, self.target))

    def token_index(self) -> np.ndarray:
        """Host indices of every token in use, text by text (the regions' used parts, in order)."""
        offs = K.to_host(self.offs, self.target)[:-1]
        cnt = K.to_host(self.ntok, self.target)
        ends = np.cumsum(cnt)
        return np.repeat(offs - (ends - cnt), cnt) + np.arange(int(ends[-1]) if cnt.shape[0] else 0)

    def word_bytes(self) -> list[bytes]:
        """Normalized bytes of every word token (not punctuation), text by text: what fitting counts."""
        offs = K.to_host(self.offs, self.target)[:-1]
        cnt = K.to_host(self.ntok, self.target)
        idx = self.token_index()
        base = np.repeat(offs * self.expand, cnt)
        kind = K.to_host(self.kind, self.target)[idx]
        keep = kind == 0
        raw = K.to_host(self.data, self.target).tobytes()
        start = K.to_host(self.start, self.target)[idx][keep] + base[keep]
        end = K.to_host(self.end, self.target)[idx][keep] + base[keep]
        return [raw[s:e] for s, e in zip(start.tolist(), end.tolist())]

    def tokens(self, t: int) -> list[bytes]:
        """Normalized bytes of text ``t``'s tokens (a host-side aid for tests and debugging)."""
        h = {f: K.to_host(getattr(self, f), self.target) for f in ("data", "offs", "ntok", "start", "end")}
        lo = int(h["offs"][t])
        base = lo * self.expand
        return [h["data"][base + h["start"][k] : base + h["end"][k]].tobytes() for k in range(lo, lo + int(h["ntok"][t]))]


@K.device
def pretokens_ok(t, data, expand, offs, tok, txt):
    """Whether text ``t`` of pre-tokens a caller may have made (or changed) can be read safely: its span is
    inside the arrays and every token a non-empty span of its region (stage (a) never makes an empty token,
    and readers such as ``punct_code`` read a token's first byte). If not, the text gets status BAD_PRETOKENS and no
    tokens, so the kernels skip it and the caller gets an InputError naming the row."""
    lo = offs[t]
    hi = offs[t + 1]
    ok = 0 <= lo <= hi <= tok.shape[1] and hi * expand <= data.shape[0]
    if ok:
        nt = txt[NTOK, t]
        size = (hi - lo) * expand
        ok = 0 <= nt <= hi - lo and size <= MAX_TEXT_POS
        if ok:
            for k in range(lo, lo + nt):
                if pos_at(tok, START, k) >= pos_at(tok, END, k) or pos_at(tok, END, k) > size:
                    ok = False
                    break
    if not ok:  # (a status already set, such as the span check's BAD_SPAN, is kept: it says more)
        fail_text(txt, t, BAD_PRETOKENS if txt[STATUS, t] == OK else txt[STATUS, t])
    return ok


STATUS_TEXT = {
    BAD_UTF8: "text is not valid UTF-8",
    SIZE_BOUND: "internal size bound exceeded",
    BAD_SPAN: "its offsets are not a non-decreasing span inside the byte buffer",
    BAD_PRETOKENS: "its pre-tokens are not consistent (a span or token outside the text's region)",
    TOO_LONG: f"text too long: it would normalize to more than the {MAX_TEXT_POS} bytes a text's 32-bit token "
              "positions address (about 1.4 GB of input)",
}


def raise_bad_rows(status: np.ndarray) -> None:
    """Raise :class:`InputError` for the rows whose stage-(a) status is not OK."""
    if not np.count_nonzero(status):  # (a quarter of the time of status.any() for a batch of one)
        return
    bad = status.nonzero()[0]
    r = int(bad[0])
    code = int(status[r])
    why = STATUS_TEXT.get(code, f"unknown stage-(a) status {code}")
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
        if out_len.max() > LEN_MASK or out_off.max() + 1 > POOL_MASK:
            raise RuntimeError("unicode tables: output lengths or pool offsets too large for the packed table")
        # one int32 per code point: output length | pre-tokenizer class | pool offset + 1 | combining rank
        info = (out_len | (cls << CLASS_SHIFT) | ((out_off + 1) << POOL_SHIFT)
                | (_combining_ranks(t[f"{key}_ccc"], out_len) << RANK_SHIFT))
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
        if not isinstance(batch, TextBatch):
            raise InputError(f"batch must be a TextBatch (TextBatch.from_texts), got {type(batch).__name__}")
        batch = TextBatch.from_texts(batch, self.xp, self.target)
        n = batch.n
        args = self.stage_args(batch, specials, self.xp.empty((3, n), dtype=np.int64))
        if n:
            K.launch(self.target, PRETOKENIZE, n, *args)
        out, _, tok, txt = args[-4:]
        return PreTokens(xp=self.xp, target=self.target, n=n, data=out, expand=self.expand, offs=batch.offsets,
                         tok=tok, txt=txt, lowercase=self.lowercase)

    def stage_args(self, batch: TextBatch, specials: list[bytes] | None, txt: Any) -> tuple:
        """Every argument of stage (a) in a kernel (:func:`pretok_text`'s after ``t``): :meth:`args`, then
        its outputs, new: the normalized bytes, ``expand``, the token rows, and ``txt`` (an InputError when the
        scratch cannot be had)."""
        nb = int(batch.data.shape[0])
        xp = self.xp
        try:  # (the kernels touch only what each text needs of these)
            out = xp.empty(self.expand * nb, dtype=np.uint8)
            tok = xp.empty((N_TOK_ROWS, nb), dtype=TOK_DTYPE)
        except (MemoryError, ValueError) as e:
            raise InputError(f"a batch of {nb} bytes: its stage-(a) scratch ({nb * (self.expand + 24) / 2**30:.1f} "
                             f"GiB) cannot be allocated ({e}); send smaller batches") from None
        return (*self.args(batch, specials), out, self.expand, tok, txt)

    def args(self, batch: TextBatch, specials: list[bytes] | None) -> tuple:
        """The stage-(a) kernel's inputs: text, tables, raw special tokens."""
        sp = _special_tables(tuple(specials or ()), self.target, self.device)
        return (batch.data, batch.offsets, self.tables["info"], self.tables["pool"], *sp, len(specials or ()))


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
    cp = np.arange(out_len.shape[0])
    in_len = np.where(cp < 0x80, 1, np.where(cp < 0x800, 2, np.where(cp < 0x10000, 3, 4)))
    return max(1, int(np.ceil(out_len / in_len).max()))


@functools.lru_cache(maxsize=32)
def _special_tables(specials: tuple[bytes, ...], target: str, device: str) -> tuple[Any, Any, Any]:
    """(first-byte flags [256], concatenated bytes, offsets) of the raw special strings, on the device
    (checked once per set of specials: this is cached)."""
    if not all(isinstance(s, bytes) and s for s in specials):
        raise InputError("specials must be non-empty bytes strings (raw special tokens such as b'[CLS]')")
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
