"""The Unigram model stage: normalized pre-token bytes -> ids by Viterbi, exactly as sentencepiece or HF tokenizers.

Both references run the same "optimized" Viterbi (sentencepiece ``unigram_model.cc: Model::EncodeOptimized``, HF
``models/unigram/model.rs: encode_optimized``): for each character start ``s`` left to right, every piece that is a
prefix of the text there (a trie walk, shortest first) offers ``best[s] + score`` to the position it ends at, which
keeps the first best offer (a strict ``>``: on a tie the offer from the earliest start, i.e. the longest last piece,
wins); where no piece covers exactly the one character at ``s``, unk offers ``best[s] + min score - 10``
(kUnkPenalty). The path is read back from the end. They differ in what :data:`SENTENCEPIECE` and :data:`HF` select
(a ``.model`` file follows sentencepiece, a tokenizer.json HF):

- arithmetic: sentencepiece adds and compares in float32 (each offer rounded to float32, as each position's best),
  and where the best at a start is beyond +-1e5 it first subtracts it (in float32) from that position's and every
  reached later position's best; HF is float64 throughout. Near-ties then resolve differently (tests/ops/test_unigram.py
  has such vocabularies, and long texts show it).
- pieces: sentencepiece matches NORMAL and USER_DEFINED pieces only (CONTROL, UNKNOWN and BYTE pieces are never
  matched in text, UNUSED ones are skipped), a user-defined piece of ``n`` bytes scoring ``float32((n - 1) * 0.1)``,
  the min score over NORMAL pieces; HF matches every vocabulary entry (a repeated piece is its last id), the min
  score over all of them.
- unknowns: sentencepiece fuses a run of unk characters into one unk id, or with byte fallback writes each one's
  UTF-8 bytes as ``<0xXX>`` pieces. HF fuses every run of nodes whose id is unk_id (an unk character, or the unk
  piece matched in the text) into one string, then maps it as its ``tokenize`` maps strings: the piece of that
  string if there is one, else with byte fallback its bytes' pieces when all exist, else unk_id. HF's cache of
  encoded strings changes no result.

sentencepiece's rules here are those of sentencepiece 0.2.3's compiled ``EncodeOptimized`` (float32 sums, the
rescaling, the user-defined score), read from the wheel's machine code and confirmed on crafted models and long
texts: its GitHub source of 2025-02 (0.2.1) still adds in double, never rescales, and scores a user-defined piece
``length * max_score_ - 0.1``.

A character is as long as its lead byte says (sentencepiece's ``OneCharLen``: 1 below 0xC0, then 2, 3, 4), cut at
the end of the text: any bytes give a result, the same as the references' for valid UTF-8.

The trie is flat arrays built once at load (:func:`build_trie`): nodes numbered breadth first, the children of a
node contiguous and sorted by their byte; a step scans a few labels, or for a node of many children (the root, ``▁``)
reads a 256-entry table. One pass over the text: O(bytes x the longest match), work of 16 bytes a byte (best score,
back link). The kernels (:data:`ENCODE`, :data:`COMPACT`) compile from one source for the CPU and the GPU; other
stages call :func:`uni_encode` per pre-token from their own kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.args import allocate
from triton_textops.ops.core.batch import TextBatch
from triton_textops.ops.core.output import Ragged
from triton_textops.ops.core.status import BAD_SPAN, SIZE_BOUND, message
from triton_textops.ops.core.xp import get_xp, target_of

HF, SENTENCEPIECE = "hf", "sentencepiece"  # whose rules a model follows (see the module's docstring)
# sentencepiece ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
TYPE_NAMES = {"NORMAL": NORMAL, "UNKNOWN": UNKNOWN, "CONTROL": CONTROL, "USER_DEFINED": USER_DEFINED,
              "UNUSED": UNUSED, "BYTE": BYTE}
NO_UNK = 8  # status: a character no piece covers, and the model has no unk_id (HF: MissingUnkId)
MESSAGES = {NO_UNK: "it has a character that no piece covers, and the model has no unk_id"}
UNK_PENALTY = 10.0  # sentencepiece's kUnkPenalty, HF's K_UNK_PENALTY
RESCALE = 100000.0  # sentencepiece 0.2.3: a start whose best is beyond +-this first subtracts it from the bests
FLT_MAX = np.float32(np.finfo(np.float32).max)  # sentencepiece's min score before any piece
MAX_IDS = (1 << 31) - 1

# the tables tuple a kernel takes (one argument): indices of its arrays
# FIRST int32 (nodes + 1): the children of node v are nodes FIRST[v] .. FIRST[v + 1] - 1 (breadth-first order; 0 is
# the root), their bytes LABEL uint8 (nodes) ascending; PIECE int32 (nodes): the id that ends at the node, or -1;
# DENSE int32 (nodes): for a node of DENSE_MIN children or more (the root always), its block in BLOCKS int32 (blocks x
# 256): its child by each byte, or -1; else -1 (its labels are scanned); SCORE float64 (nodes): the score of the
# node's piece as the lattice uses it (one load less per offer than by id; 0 where none);
# BYTES int32 (256): the id of piece <0xXX>, or -1; CONST int64: [unk_id (-1: none), sentencepiece's rules,
# byte_fallback]; UNK float64 (1): unk's score
U_FIRST, U_LABEL, U_PIECE, U_DENSE, U_BLOCKS, U_SCORE, U_BYTES, U_CONST, U_UNK = range(9)
DENSE_MIN = 8  # children from which a node has a block (a scan of fewer is as fast)
C_UNK_ID, C_SP, C_BYTE_FALLBACK = range(3)
WORK_ROWS = 2  # work per byte (+ 1 per text): best score (float64), back link (int64: start << 32 | id)


@K.device(inline=True)
def uni_child(uni, node, c):
    """The child of trie node ``node`` by byte ``c``, or -1."""
    d = uni[U_DENSE][node]
    if d >= 0:
        return uni[U_BLOCKS][(np.int64(d) << 8) | c]
    label = uni[U_LABEL]
    for m in range(uni[U_FIRST][node], uni[U_FIRST][node + 1]):
        x = label[m]
        if x >= c:
            return m if x == c else -1
    return -1


@K.device
def uni_find(buf, lo, hi, uni):
    """The id of the piece whose bytes are exactly ``buf[lo:hi]`` (``lo < hi``), or -1."""
    node = 0
    for k in range(lo, hi):
        node = uni_child(uni, node, buf[k])
        if node < 0:
            return -1
    return uni[U_PIECE][node]


@K.device(inline=True)
def uni_lattice(buf, lo, hi, uni, best, back, wb):
    """The forward Viterbi pass over ``buf[lo:hi]``: ``best[wb + e]`` / ``back[wb + e]`` (start << 32 | id) of the
    best path ending at each byte position ``e`` (-1: none). Returns 0, or -1 - NO_UNK."""
    n = hi - lo
    cst = uni[U_CONST]
    sp = cst[C_SP] != 0
    unk_id = cst[C_UNK_ID]
    unk = uni[U_UNK][0]
    piece = uni[U_PIECE]
    score = uni[U_SCORE]
    for k in range(n + 1):  # (unreached: -inf, so the first offer wins with one compare; back -1)
        best[wb + k] = -np.inf
        back[wb + k] = -1
    best[wb] = 0.0
    far = 0  # the furthest position an offer reached
    s = 0
    while s < n:
        till = best[wb + s]
        if sp and (till < -RESCALE or till > RESCALE):  # sentencepiece 0.2.3: the bests from here on, less till
            for p in range(s, far + 1):
                if p == s or back[wb + p] >= 0:
                    best[wb + p] = np.float64(np.float32(best[wb + p] - till))
            till = 0.0
        c = buf[lo + s]
        m = 1 if c < 0xC0 else (2 if c < 0xE0 else (3 if c < 0xF0 else 4))
        if m > n - s:
            m = n - s
        single = False
        node = uni[U_BLOCKS][c]  # (the root's block: 0)
        e = s + 1
        while node >= 0:
            pid = piece[node]
            if pid >= 0:
                cand = score[node] + till
                if sp:  # (float32 + float32 in sentencepiece: the double sum rounded once is that sum)
                    cand = np.float64(np.float32(cand))
                at = wb + e
                if cand > best[at]:
                    best[at] = cand
                    back[at] = (np.int64(s) << 32) | pid
                if e > far:
                    far = e
                if e - s == m:
                    single = True
            if e >= n:
                break
            node = uni_child(uni, node, buf[lo + e])
            e += 1
        if not single:
            if unk_id < 0:
                return -1 - NO_UNK
            cand = unk + till
            if sp:
                cand = np.float64(np.float32(cand))
            at = wb + s + m
            if cand > best[at]:
                best[at] = cand
                back[at] = (np.int64(s) << 32) | unk_id
            if s + m > far:
                far = s + m
        s += m
    return 0


@K.device
def uni_unk_run(buf, lo, a, b, uni, out, o):
    """The ids of a fused run of unk nodes over ``buf[lo + a:lo + b]``, written backwards to ``out[o:]`` (the
    caller reverses the text's ids at the end); returns the new ``o``. HF's rule (sentencepiece's, without byte
    fallback, is the unk id alone): the run's own piece, else its bytes' pieces (byte fallback, all present), else
    unk."""
    cst = uni[U_CONST]
    unk_id = cst[C_UNK_ID]
    if cst[C_SP] == 0:
        pid = uni_find(buf, lo + a, lo + b, uni)
        if pid >= 0:
            out[o] = pid
            return o + 1
        if cst[C_BYTE_FALLBACK] != 0:
            ids = uni[U_BYTES]
            every = True
            for k in range(lo + a, lo + b):
                if ids[buf[k]] < 0:
                    every = False
                    break
            if every:
                for k in range(lo + b - 1, lo + a - 1, -1):
                    out[o] = ids[buf[k]]
                    o += 1
                return o
    out[o] = unk_id
    return o + 1


@K.device(inline=True)
def uni_emit(buf, lo, hi, uni, back, wb, out, o):
    """The ids of the best path that :func:`uni_lattice` left in ``back``, unknowns fused or byte-encoded, to
    ``out[o:]`` (at most ``hi - lo`` of them); returns the new ``o``, or -1 - SIZE_BOUND for a broken path."""
    cst = uni[U_CONST]
    unk_id = cst[C_UNK_ID]
    fuse = cst[C_SP] == 0 or cst[C_BYTE_FALLBACK] == 0
    ids = uni[U_BYTES]
    start = o
    e = hi - lo
    run = -1  # end of the run of unk nodes being fused, -1: none
    while e > 0:
        v = back[wb + e]
        s = v >> 32
        if v < 0 or s >= e:
            return -1 - SIZE_BOUND
        pid = v & 0xFFFFFFFF
        if pid == unk_id and fuse:
            if run < 0:
                run = e
        else:
            if run >= 0:
                o = uni_unk_run(buf, lo, e, run, uni, out, o)
                run = -1
            if pid == unk_id:  # sentencepiece with byte fallback: the character's bytes
                for k in range(lo + e - 1, lo + s - 1, -1):
                    out[o] = ids[buf[k]]
                    o += 1
            else:
                out[o] = pid
                o += 1
        e = s
    if run >= 0:
        o = uni_unk_run(buf, lo, 0, run, uni, out, o)
    i = start
    j = o - 1
    while i < j:
        x = out[i]
        out[i] = out[j]
        out[j] = x
        i += 1
        j -= 1
    return o


@K.device(inline=True)
def uni_encode(buf, lo, hi, uni, best, back, wb, out, o):
    """Ids of the normalized pre-token ``buf[lo:hi]`` into ``out[o:]``; returns the new ``o`` (at most ``o + hi -
    lo``), or -1 - status (NO_UNK; SIZE_BOUND when ``out`` or the work rows are too short). ``best`` (float64) and
    ``back`` (int64): work, entries ``wb .. wb + hi - lo`` used. The stage other kernels call per pre-token."""
    n = hi - lo
    if wb < 0 or o < 0 or wb + n + 1 > best.shape[0] or wb + n + 1 > back.shape[0] or o + n > out.shape[0]:
        return -1 - SIZE_BOUND
    r = uni_lattice(buf, lo, hi, uni, best, back, wb)
    if r < 0:
        return r
    return uni_emit(buf, lo, hi, uni, back, wb, out, o)


@K.device
def uni_item(t, slot, slots, data, offsets, uni, work, ids, cnt):
    """Text ``t``'s ids into ``ids[offsets[t]:offsets[t+1]]`` (at most one per byte); ``cnt[t]``: their number or
    -1 - status. Work rows: the CPU worker ``slot``'s share of ``work`` (reused text after text), on the GPU
    (``slots`` 0) the text's own region, from ``offsets[t] + t``."""
    lo = offsets[t]
    hi = offsets[t + 1]
    if lo < 0 or hi < lo or hi > data.shape[0]:
        cnt[t] = -1 - BAD_SPAN
        return
    best, back = work
    if slots > 0:
        width = best.shape[0] // slots
        if hi - lo + 1 > width:
            cnt[t] = -1 - SIZE_BOUND
            return
        wb = slot * width
    else:
        wb = lo + t
    r = uni_encode(data, lo, hi, uni, best, back, wb, ids, lo)
    cnt[t] = r - lo if r >= 0 else r


@K.device
def uni_compact(t, offsets, ids, cnt, out_off, out):
    """Copy text ``t``'s ``cnt[t]`` ids from ``ids[offsets[t]:]`` to ``out[out_off[t]:out_off[t+1]]`` (nothing for
    a plan that does not fit)."""
    c = cnt[t]
    a = offsets[t]
    d = out_off[t]
    if c <= 0 or a < 0 or a + c > ids.shape[0] or d < 0 or out_off[t + 1] - d != c or d + c > out.shape[0]:
        return
    for k in range(c):
        out[d + k] = ids[a + k]


ENCODE = K.kernel(uni_item, chunked=True)
COMPACT = K.kernel(uni_compact)


# ------------------------------------------------------------------------------ host side

def build_trie(keys: Sequence[bytes], ids: np.ndarray) -> tuple[np.ndarray, ...]:
    """The trie of byte strings ``keys`` (non-empty) with values ``ids`` (a repeated key keeps its largest id), as
    (FIRST, LABEL, PIECE, DENSE, BLOCKS): nodes breadth first, level by level in NumPy (each level's nodes: the distinct
    (parent, byte) pairs, sorted, so a node's children are contiguous and ascending)."""
    lengths = np.fromiter((len(k) for k in keys), dtype=np.int64, count=len(keys))
    pool = np.frombuffer(b"".join(keys), dtype=np.uint8)
    start = np.zeros(len(keys), dtype=np.int64)
    if len(keys):
        np.cumsum(lengths[:-1], out=start[1:])
    node = np.zeros(len(keys), dtype=np.int64)  # each key's node at the current depth
    parents = [np.zeros(0, dtype=np.int64)]
    labels = [np.zeros(1, dtype=np.uint8)]  # (the root's: unused)
    count = 1
    active = np.arange(len(keys))
    depth = 0
    while True:
        active = active[lengths[active] > depth]
        if not active.size:
            break
        key = (node[active] << 8) | pool[start[active] + depth]
        uniq, inv = np.unique(key, return_inverse=True)
        node[active] = count + inv.reshape(-1)
        parents.append(uniq >> 8)
        labels.append((uniq & 0xFF).astype(np.uint8))
        count += uniq.shape[0]
        depth += 1
    if count > MAX_IDS:
        raise ValueError(f"the pieces make a trie of {count} nodes: at most {MAX_IDS}")
    parent = np.concatenate(parents)  # (non-decreasing: each level's parents are the level before, in order)
    first = (1 + np.searchsorted(parent, np.arange(count + 1), side="left")).astype(np.int32)
    label = np.concatenate(labels)
    piece = np.full(count, -1, dtype=np.int64)
    if len(keys):
        np.maximum.at(piece, node, np.asarray(ids, dtype=np.int64))
    counts = np.diff(first)
    counts[0] = DENSE_MIN  # (the root has a block, children or not)
    dense_nodes = np.flatnonzero(counts >= DENSE_MIN)
    dense = np.full(count, -1, dtype=np.int32)
    dense[dense_nodes] = np.arange(dense_nodes.shape[0], dtype=np.int32)
    blocks = np.full((dense_nodes.shape[0], 256), -1, dtype=np.int32)
    kids = np.arange(1, count)
    parent_block = dense[parent]
    has = parent_block >= 0
    blocks[parent_block[has], label[kids[has]]] = kids[has]
    return first, label, piece.astype(np.int32), dense, blocks.reshape(-1)


def byte_of_piece(piece: bytes) -> int:
    """The byte a byte-fallback piece ``<0xXX>`` stands for (uppercase hex, as sentencepiece writes it), or -1."""
    if len(piece) == 6 and piece[:3] == b"<0x" and piece[5:] == b">" and all(c in b"0123456789ABCDEF" for c in piece[3:5]):
        return int(piece[3:5], 16)
    return -1


def _type_codes(types: Sequence[int | str]) -> np.ndarray:
    """The pieces' types as numbers (names mapped), checked."""
    names = {**TYPE_NAMES, **{v: v for v in TYPE_NAMES.values()}}
    try:
        codes = np.array([names[t] if type(t) is not bool else None for t in types], dtype=np.int64)
    except (KeyError, TypeError):
        bad = next(t for t in types if type(t) is bool or t not in names)
        raise ValueError(f"piece type {bad!r}: one of {sorted(TYPE_NAMES)} or their numbers "
                         f"{sorted(TYPE_NAMES.values())}") from None
    return codes


def _as_bytes(pieces: Sequence[str | bytes]) -> list[bytes]:
    """Each piece's bytes (a str as UTF-8), checked."""
    try:
        return [p.encode("utf-8") for p in pieces]  # (the usual case at once)
    except (AttributeError, UnicodeEncodeError):
        pass
    raw = []
    for p in pieces:
        if isinstance(p, str):
            try:
                raw.append(p.encode("utf-8"))
            except UnicodeEncodeError as e:
                raise ValueError(f"piece {len(raw)} {p!r} is not valid Unicode ({e.reason})") from None
        elif isinstance(p, (bytes, bytearray, memoryview)):
            raw.append(bytes(p))
        else:
            raise ValueError(f"piece {len(raw)}: a str or bytes, got {type(p).__name__}")
    return raw


class Unigram:
    """A Unigram model: its pieces' trie and scores as the kernels read them (host arrays; :meth:`on` gives the
    kernels' tuple on a device), and :meth:`encode` for batches of normalized pre-tokens.

    ``semantics``: :data:`HF` (a tokenizer.json's ``Unigram``) or :data:`SENTENCEPIECE` (a ``.model`` file), see
    the module's docstring. ``n_ids``: the vocabulary's size; ``unk_id`` (None: none, HF only), ``byte_fallback``,
    ``byte_ids`` (256: the id of each byte's piece, -1 where none), ``max_piece_bytes``."""

    def __init__(self, pieces: list[bytes], scores: np.ndarray, types: np.ndarray | None, unk_id: int | None,
                 byte_fallback: bool, semantics: str) -> None:
        n = len(pieces)
        self.semantics = semantics
        self.n_ids = n
        self.unk_id = unk_id
        self.byte_fallback = byte_fallback
        self.pieces = pieces
        sp = semantics == SENTENCEPIECE
        byte_ids = np.full(256, -1, dtype=np.int32)
        if sp:
            normal = types == NORMAL
            low = np.float32(min(FLT_MAX, scores[normal].min(initial=np.inf)))  # (float32: as sentencepiece)
            unk_score = float(np.float32(low - np.float32(UNK_PENALTY)))
            lengths = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=n)
            user = types == USER_DEFINED
            score = scores.astype(np.float64)
            score[user] = ((lengths[user] - 1) * 0.1).astype(np.float32)
            matched = np.flatnonzero(normal | user)
            for i in np.flatnonzero(types == BYTE):
                byte_ids[byte_of_piece(pieces[i])] = i
        else:
            score = scores.astype(np.float64)
            unk_score = float(scores.min(initial=np.inf)) - UNK_PENALTY
            matched = np.array([i for i in range(n) if pieces[i]], dtype=np.int64)
            for i, p in enumerate(pieces):  # (a repeated piece: its last id, as HF's token_to_ids)
                b = byte_of_piece(p)
                if b >= 0:
                    byte_ids[b] = i
        trie = build_trie([pieces[i] for i in matched], matched)
        self.byte_ids = byte_ids
        self.max_piece_bytes = max((len(pieces[i]) for i in matched), default=0)
        const = np.array([-1 if unk_id is None else unk_id, int(sp), int(byte_fallback)], dtype=np.int64)
        node_piece = trie[2]
        node_score = np.where(node_piece >= 0, score[np.maximum(node_piece, 0)], 0.0) if n else np.zeros(
            node_piece.shape[0])
        self.host = (*trie, node_score, byte_ids, const, np.array([unk_score], dtype=np.float64))
        self._on: dict[str, tuple] = {}

    @classmethod
    def from_pieces(cls, pieces: Sequence[str | bytes], scores: Sequence[float], *, unk_id: int | None,
                    byte_fallback: bool = False, types: Sequence[int | str] | None = None,
                    semantics: str | None = None) -> Unigram:
        """A model of ``pieces`` (id = position) and their ``scores``, checked once. ``types`` (sentencepiece's
        piece types, numbers or names): given, the model follows :data:`SENTENCEPIECE` (its load checks: one
        UNKNOWN piece, at ``unk_id`` when that is given; no empty or repeated piece; BYTE pieces ``<0xXX>`` only
        with byte fallback, all 256 then); None: :data:`HF` (``unk_id`` None or an id; any strings). ``semantics``
        overrides which, but sentencepiece's needs ``types``. Raises ValueError for a bad model."""
        semantics = semantics or (HF if types is None else SENTENCEPIECE)
        if semantics not in (HF, SENTENCEPIECE):
            raise ValueError(f"semantics {semantics!r}: {HF!r} or {SENTENCEPIECE!r}")
        if semantics == SENTENCEPIECE and types is None:
            raise ValueError("sentencepiece's rules need the pieces' types")
        if semantics == HF and types is not None:
            raise ValueError("HF's Unigram has no piece types: pass types=None")
        if not isinstance(byte_fallback, (bool, np.bool_)):
            raise ValueError(f"byte_fallback must be a bool, got {byte_fallback!r}")
        raw = _as_bytes(pieces)
        n = len(raw)
        if n > MAX_IDS:
            raise ValueError(f"{n} pieces: at most {MAX_IDS}")
        try:
            sc = np.array(scores, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as e:
            raise ValueError(f"scores must be numbers ({e})") from None
        if sc.shape[0] != n:
            raise ValueError(f"{sc.shape[0]} scores for {n} pieces")
        if semantics == SENTENCEPIECE:
            with np.errstate(over="ignore"):
                sc = sc.astype(np.float32).astype(np.float64)  # (a ModelProto's scores are float32)
        if not np.isfinite(sc).all():
            bad = int(np.flatnonzero(~np.isfinite(sc))[0])
            raise ValueError(f"piece {bad} {raw[bad]!r}: score {scores[bad]!r} is not finite"
                             + (" as a float32" if semantics == SENTENCEPIECE else ""))
        if unk_id is not None:
            if isinstance(unk_id, (bool, np.bool_)) or not isinstance(unk_id, (int, np.integer)) \
                    or not 0 <= unk_id < n:
                raise ValueError(f"unk_id {unk_id!r} is not an id of the {n} pieces")
            unk_id = int(unk_id)
        ty = None
        if semantics == SENTENCEPIECE:
            ty = _type_codes(types)
            if ty.shape[0] != n:
                raise ValueError(f"{ty.shape[0]} types for {n} pieces")
            unk_id = _check_sentencepiece(raw, ty, unk_id, bool(byte_fallback))
        return cls(raw, sc, ty, unk_id, bool(byte_fallback), semantics)

    @classmethod
    def from_tokenizer_json(cls, model: dict) -> Unigram:
        """The ``model`` object of a tokenizer.json whose ``type`` is ``Unigram`` (``vocab``: [[piece, score], ...],
        ``unk_id``, ``byte_fallback``), with HF's rules."""
        if not isinstance(model, dict) or model.get("type", "Unigram") != "Unigram":
            raise ValueError("not a tokenizer.json Unigram model")
        vocab = model.get("vocab")
        if not isinstance(vocab, list) or not all(isinstance(v, (list, tuple)) and len(v) == 2 for v in vocab):
            raise ValueError("Unigram vocab: a list of [piece, score] pairs")
        return cls.from_pieces([v[0] for v in vocab], [v[1] for v in vocab], unk_id=model.get("unk_id"),
                               byte_fallback=model.get("byte_fallback", False) or False)

    @classmethod
    def from_model_proto(cls, proto: Any) -> Unigram:
        """A parsed sentencepiece ``ModelProto`` (its ``pieces``: piece, score, type; ``trainer_spec.byte_fallback``),
        with sentencepiece's rules."""
        ps = proto.pieces
        return cls.from_pieces([p.piece for p in ps], [p.score for p in ps], unk_id=None, types=[p.type for p in ps],
                               byte_fallback=bool(proto.trainer_spec.byte_fallback))

    def on(self, target: str, xp: Any) -> tuple:
        """The tables on ``target``'s device, as the one tuple a kernel takes (uploaded once per target)."""
        got = self._on.get(target)
        if got is None:
            got = self._on[target] = tuple(K.to_device(a, target, xp) for a in self.host)
        return got

    def encode(self, texts: Any, *, device: str = "cpu") -> Ragged:
        """The ids of each normalized pre-token (anything :meth:`TextBatch.from_texts` takes: a list of str /
        bytes, a ``(data uint8, offsets int64)`` pair, a :class:`TextBatch`) on ``device``'s kernels ("cpu", "cuda");
        ids and offsets on that device. Two launches, one device-to-host copy (the counts)."""
        target = target_of(device)
        xp = get_xp(device)
        batch = TextBatch.from_texts(texts, xp, target)
        n = batch.n
        size = int(batch.data.shape[0])
        if target == "cpu":
            lens = np.diff(batch.offsets)
            width = (max(int(lens.max(initial=0)), 0) + 1) * K.get_num_threads()
        else:
            width = size + n + 1
        work = tuple(allocate(xp, (width,), dt, "the Unigram work rows", filled=False) for dt in (np.float64, np.int64))
        ids = allocate(xp, (max(size, 1),), np.int64, "the Unigram ids scratch", filled=False)
        cnt = xp.empty(n, dtype=np.int64)
        uni = self.on(target, xp)
        if n:
            K.launch(target, ENCODE, n, batch.data, batch.offsets, uni, work, ids, cnt)
        host = K.to_host(cnt, target)
        raise_bad(host)
        off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(host, out=off[1:])
        d_off = K.to_device(off, target, xp)
        out = xp.empty(int(off[-1]), dtype=np.int64)
        if n:
            K.launch(target, COMPACT, n, batch.offsets, ids, cnt, d_off, out)
        return Ragged(out, d_off)


def raise_bad(counts: np.ndarray) -> None:
    """An :class:`InputError` naming the first text whose count is a status (``-1 - code``) and listing all."""
    if counts.shape[0] and counts.min() < 0:
        bad = np.flatnonzero(counts < 0)
        code = int(-1 - counts[bad[0]])
        raise InputError(f"row {int(bad[0])}: {MESSAGES.get(code) or message(code)}", rows=bad.astype(np.int64))


def _check_sentencepiece(pieces: list[bytes], types: np.ndarray, unk_id: int | None, byte_fallback: bool) -> int:
    """sentencepiece's load checks (``ModelInterface::InitializePieces``); returns the unk id."""
    unknown = np.flatnonzero(types == UNKNOWN)
    if unknown.shape[0] != 1:
        raise ValueError(f"{unknown.shape[0]} UNKNOWN pieces: sentencepiece needs exactly one")
    if unk_id is not None and unk_id != int(unknown[0]):
        raise ValueError(f"unk_id {unk_id} is not the UNKNOWN piece, {int(unknown[0])}")
    if not all(pieces):
        raise ValueError(f"piece {pieces.index(b'')} is empty")
    in_trie = np.isin(types, (NORMAL, USER_DEFINED, UNUSED))
    for group in (np.flatnonzero(in_trie), np.flatnonzero(~in_trie)):  # (sentencepiece's two maps)
        names = [pieces[i] for i in group]
        if len(set(names)) < len(names):
            seen: dict[bytes, int] = {}
            for i, p in zip(group.tolist(), names):
                if p in seen:
                    raise ValueError(f"piece {i} {p!r} is already defined (piece {seen[p]})")
                seen[p] = i
    byte_pieces = np.flatnonzero(types == BYTE)
    if byte_pieces.shape[0] and not byte_fallback:
        raise ValueError(f"byte piece {pieces[byte_pieces[0]]!r} although byte_fallback is false")
    found = set()
    for i in byte_pieces:
        b = byte_of_piece(pieces[i])
        if b < 0:
            raise ValueError(f"byte piece {pieces[i]!r} is not <0xXX>")
        found.add(b)
    if byte_fallback and len(found) < 256:
        raise ValueError(f"{len(found)} byte pieces: byte_fallback needs all 256")
    return int(unknown[0])
