"""SentencePiece normalization in the kernels: HF's normalizers of SentencePiece conversions (``Prepend``,
``Replace`` of a string or of a run ``"X{k,}"``, ``Strip``, ``Precompiled``, ``NFC``, ``NFD``, ``NFKC``, ``NFKD``,
``Lowercase``, ``StripAccents``, and sequences of them; the Unicode ones are :mod:`~triton_textops.ops.core.unorm`'s
device functions, which byte-level BPE files with such normalizers run through this same program) and
sentencepiece's own ``Normalizer::Normalize`` of a ``.model`` (its precompiled charsmap by longest prefix,
``add_dummy_prefix``, ``remove_extra_whitespaces``, ``escape_whitespaces``, user-defined symbols passed through).

A normalizer is a :class:`Program`: a list of ops applied in order to each segment of a text (between added
tokens), ping-pong between two areas of the text's byte scratch. The charsmap is sentencepiece's blob: a
little-endian uint32 trie size, a Darts-clone double-array trie over UTF-8 prefixes (uint32 units), then the
NUL-terminated normalized strings the trie's values point into.

The two readings of that charsmap differ: sentencepiece (``normalizer.cc``) takes the longest key at each
position; HF's ``Precompiled`` (``precompiled.rs`` over ``spm_precompiled``) walks extended grapheme clusters and
replaces a cluster under 6 bytes whole by the string of its *shortest* key prefix (so ``"A"`` + a combining mark
loses the mark when ``"A"`` is a key), other clusters a character at a time. The cluster classes are HF's,
measured by ``scripts/gen_grapheme_tables.py`` (``data/grapheme_tables.npz``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from triton_textops.ops.core import kernels as K
from triton_textops.ops.core import unorm as U
from triton_textops.ops.core.unorm import map_write, nfc_quick, nfc_write
from triton_textops.ops.core.utf8 import utf8_at

OP_PREPEND, OP_REPLACE, OP_RUN, OP_STRIP, OP_SPM, OP_PRECOMP, OP_FORM, OP_MAP = range(1, 9)
# OP_FORM's arg: the index of the form in unorm.FORMS; OP_MAP's: in unorm.MAPS
FORM_NAMES = {"NFC": "nfc", "NFD": "nfd", "NFKC": "nfkc", "NFKD": "nfkd"}
MAP_NAMES = {"Lowercase": "lower", "StripAccents": "strip"}
OP_W = 6  # int64 per op in the program array: kind, pattern offset, pattern length, content offset, length, arg
# SPM's arg bits
SPM_DUMMY, SPM_EXTRA, SPM_ESCAPE = 1, 2, 4
# the normalizer tuple a kernel takes; NT_FORMS: the four forms' tables (unorm.form_tables layout; a form the
# program does not use: a one-entry placeholder of the same types), NT_MAPS: unorm's maps tuple (likewise)
NT_PROG, NT_POOL, NT_UNITS, NT_NORM, NT_UD, NT_GIDX, NT_GFLAGS, NT_FORMS, NT_MAPS = range(9)
# grapheme-cluster flags of HF's Precompiled (scripts/gen_grapheme_tables.py measures them on HF)
(GB_EXT, GB_PRE, GB_CTL, GB_CR, GB_LF, GB_HL, GB_HVL, GB_HTL, GB_HLR, GB_HVR, GB_HTR, GB_EP, GB_ZWJ, GB_XEP, GB_CONS,
 GB_LNK, GB_INX) = (1 << i for i in range(17))
GB_SHIFT = 7
GB_SHORT = 6  # HF: a cluster of fewer bytes is looked up whole
SPACE = "\u2581".encode()


@dataclass
class Program:
    """A normalizer: ``ops`` (kind, pattern bytes, content bytes, arg), a charsmap for OP_SPM or OP_PRECOMP, the
    frozen (user-defined) pieces it passes through unnormalized, and the grapheme tables of OP_PRECOMP (the
    packaged ones when None)."""

    ops: list[tuple[int, bytes, bytes, int]] = field(default_factory=list)
    charsmap: bytes = b""
    frozen: list[bytes] = field(default_factory=list)
    grapheme: dict[str, np.ndarray] | None = None

    def bound(self) -> tuple[int, int]:
        """(a, b): a segment of n >= 1 bytes normalizes to at most a * n + b bytes."""
        a, b = 1, 0
        for kind, pat, content, arg in self.ops:
            if kind == OP_PREPEND:
                b += len(content)
            elif kind in (OP_REPLACE, OP_RUN):
                unit = len(pat) * (arg if kind == OP_RUN else 1)
                f = max(1, -(-len(content) // unit))
                a, b = a * f, b * f
            elif kind == OP_SPM:
                f = max(3, charsmap_growth(self.charsmap, bool(arg & SPM_ESCAPE)))
                a, b = a * f, b * f + 3
            elif kind == OP_PRECOMP:
                f = max(1, charsmap_growth(self.charsmap, False))
                a, b = a * f, b * f
            elif kind == OP_FORM:
                f = U.form_expansion(U.FORMS[arg])
                a, b = a * f, b * f
            elif kind == OP_MAP:
                f = U.packaged_map_expansion(U.MAPS[arg])
                a, b = a * f, b * f
        return a, b

    def tables(self) -> tuple[np.ndarray, ...]:
        """The kernels' normalizer tuple (:data:`NT_PROG` ...), host arrays."""
        pool = b""
        prog = [len(self.ops)]
        for kind, pat, content, arg in self.ops:
            prog += [kind, len(pool), len(pat)]
            pool += pat
            prog += [len(pool), len(content), arg]
            pool += content
        units, norm = parse_charsmap(self.charsmap)
        if any(op[0] == OP_PRECOMP for op in self.ops):
            g = self.grapheme if self.grapheme is not None else grapheme_tables()
            gidx, gfl = np.ascontiguousarray(g["idx"], dtype=np.int32), np.ascontiguousarray(g["flags"], np.int32)
            check_grapheme_tables(gidx, gfl)
        else:
            gidx, gfl = np.zeros(N_CP >> GB_SHIFT, dtype=np.int32), np.zeros(1 << GB_SHIFT, dtype=np.int32)
        used = {arg for kind, _, _, arg in self.ops if kind == OP_FORM}
        forms = tuple(U.table_tuple(U.load_tables(), f) if k in used else _FORM_PLACEHOLDER
                      for k, f in enumerate(U.FORMS))
        maps = U.map_tuple(U.load_tables()) if any(op[0] == OP_MAP for op in self.ops) else _MAP_PLACEHOLDER
        return (np.array(prog, dtype=np.int64), np.frombuffer(pool or b"\0", dtype=np.uint8).copy(), units, norm,
                frozen_table(self.frozen), gidx, gfl, forms, maps)


_FORM_PLACEHOLDER = (np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32), *U.NO_COMPOSE)
_MAP_PLACEHOLDER = tuple(np.zeros(1, np.int32) for _ in range(5))


N_CP = 0x110000


def check_grapheme_tables(gidx: np.ndarray, gfl: np.ndarray) -> None:
    """The grapheme tables a kernel indexes checked once (:func:`gb_flags` reads ``gfl[gidx[cp >> 7] << 7 | low]``
    with no test): one block number per 128 code points, each naming a whole block of ``gfl``."""
    blocks = gfl.shape[0] >> GB_SHIFT
    if gidx.shape != (N_CP >> GB_SHIFT,) or gfl.ndim != 1 or gfl.shape[0] != blocks << GB_SHIFT or blocks == 0 \
            or int(gidx.min()) < 0 or int(gidx.max()) >= blocks:
        raise ValueError(f"grapheme tables: idx {gidx.shape} must hold {N_CP >> GB_SHIFT} block numbers below "
                         f"{blocks}, flags {gfl.shape} whole blocks of {1 << GB_SHIFT}")


@functools.lru_cache(maxsize=1)
def grapheme_tables() -> dict[str, np.ndarray]:
    """The packaged ``grapheme_tables.npz`` (``idx``: block of each 128 code points, ``flags``: the blocks)."""
    ref = resources.files("triton_textops") / "data" / "grapheme_tables.npz"
    with resources.as_file(ref) as p, np.load(p) as z:
        return {k: z[k] for k in ("idx", "flags")}


def frozen_table(pieces: list[bytes], ids: list[int] | None = None) -> tuple[np.ndarray, ...]:
    """(pool, offsets, by first byte 257, ids) of pieces matched whole at a position (:func:`sp_prefix_at`)."""
    items = sorted((p, i) for p, i in zip(pieces, ids if ids is not None else [0] * len(pieces)) if p)
    pool = np.frombuffer(b"".join(p for p, _ in items) or b"\0", dtype=np.uint8).copy()
    off = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum([len(p) for p, _ in items], out=off[1:])
    first = np.zeros(257, dtype=np.int64)
    for p, _ in items:
        first[p[0] + 1:] += 1
    return pool, off, first, np.array([i for _, i in items] or [0], dtype=np.int64)


def parse_charsmap(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(trie units as int64, normalized strings pool) of a precompiled charsmap; empty arrays for none."""
    if not blob:
        return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.uint8)
    if len(blob) < 4:
        raise ValueError("precompiled_charsmap: shorter than its 4-byte header")
    size = int.from_bytes(blob[:4], "little")
    if size % 4 or 4 + size > len(blob) or size == 0:
        raise ValueError(f"precompiled_charsmap: trie size {size} does not fit the {len(blob)}-byte blob")
    units = np.frombuffer(blob[4:4 + size], dtype="<u4").astype(np.int64)
    norm = np.frombuffer(blob[4 + size:] + b"\0", dtype=np.uint8).copy()
    return units, norm


def charsmap_growth(blob: bytes, escape: bool) -> int:
    """Bytes out per byte in, at most, of a charsmap's rules (a space out counted 3 bytes when escaped): the
    double array walked breadth first, a level (a key length) at a time over all units at once (NumPy): a unit is a
    child of a node of the level when its index xor its label is that node's base."""
    if not blob:
        return 1
    units, norm = parse_charsmap(blob)
    n = units.shape[0]
    idx = np.arange(n, dtype=np.int64)
    base = idx ^ ((units >> 10) << ((units & 512) >> 6))  # each unit's children's base
    label = units & 0x800000FF
    parent = np.where((label > 0) & (label < 256), idx ^ (label & 0xFF), -1)
    nul = np.flatnonzero(norm == 0)
    spaces = np.concatenate([[0], np.cumsum(norm == 32)])
    worst = 1
    level = np.array([int(base[0])], dtype=np.int64)
    depth = 0
    while level.size and depth < 64:
        depth += 1
        mark = np.zeros(n, dtype=bool)
        mark[level[(level >= 0) & (level < n)]] = True
        kids = idx[(parent >= 0) & mark[np.clip(parent, 0, n - 1)]]
        kb = base[kids]
        leaf = kids[((units[kids] >> 8) & 1) == 1]
        at = base[leaf]
        vals = units[at[(at >= 0) & (at < n)]] & 0x7FFFFFFF
        vals = vals[vals < norm.shape[0]]
        if vals.size:
            ends = nul[np.searchsorted(nul, vals)]
            size = ends - vals + (2 * (spaces[ends] - spaces[vals]) if escape else 0)
            worst = max(worst, int(-(-size.max() // depth)))
        level = kb
    return worst


def from_json(norm: Any, refuse: Any) -> Program:
    """HF's ``normalizer`` object of a SentencePiece conversion as a :class:`Program`."""
    prog = Program()
    if norm is None:
        return prog
    steps = _steps(norm)
    for i, st in enumerate(steps):
        kind = st.get("type")
        if kind == "Prepend":
            prog.ops.append((OP_PREPEND, b"", str(st.get("prepend", "")).encode(), 0))
        elif kind == "Replace":
            pat = st.get("pattern") or {}
            content = str(st.get("content", "")).encode()
            if list(pat) == ["String"] and pat["String"]:
                prog.ops.append((OP_REPLACE, pat["String"].encode(), content, 0))
                continue
            m = re.fullmatch(r"(\\?[^\\])(?:\{(\d+),\}|(\+))", pat.get("Regex", "")) if list(pat) == ["Regex"] \
                else None
            if m is None or (m.group(1).startswith("\\") and m.group(1)[1].isalnum()):
                refuse(f"normalizer[{i}].pattern", pat, "is not supported (a string, or a run 'X{k,}' / 'X+')")
            prog.ops.append((OP_RUN, m.group(1)[-1].encode(), content, int(m.group(2) or 1)))
        elif kind == "Strip":
            left, right = bool(st.get("strip_left", True)), bool(st.get("strip_right", True))
            prog.ops.append((OP_STRIP, b"", b"", int(left) | 2 * int(right)))
        elif kind == "Precompiled":
            raw = st.get("precompiled_charsmap")
            try:
                blob = base64.b64decode(raw, validate=True) if isinstance(raw, str) else b""
            except (binascii.Error, ValueError):
                blob = b""
            if not blob:
                refuse(f"normalizer[{i}].precompiled_charsmap", raw, "is not a base64 charsmap")
            if prog.charsmap:
                refuse(f"normalizer[{i}]", {"type": kind}, "is a second Precompiled (one is supported)")
            try:
                parse_charsmap(blob)
            except ValueError as e:
                refuse(f"normalizer[{i}].precompiled_charsmap", "...", str(e))
            prog.charsmap = blob
            prog.ops.append((OP_PRECOMP, b"", b"", 0))
        elif kind in FORM_NAMES:
            prog.ops.append((OP_FORM, b"", b"", U.FORMS.index(FORM_NAMES[kind])))
        elif kind in MAP_NAMES:
            prog.ops.append((OP_MAP, b"", b"", U.MAPS.index(MAP_NAMES[kind])))
        else:
            refuse(f"normalizer[{i}]", {"type": kind}, "is not supported")
    return prog


def _steps(norm: Any) -> list:
    """The normalizers of ``norm`` in the order HF applies them: a ``Sequence`` (nested ones too) flattened."""
    if not isinstance(norm, dict) or norm.get("type") != "Sequence":
        return [norm]
    return [st for sub in norm.get("normalizers") or [] for st in _steps(sub)]


def from_spm(charsmap: bytes, dummy: bool, extra: bool, escape: bool, frozen: list[bytes]) -> Program:
    """sentencepiece's normalizer of a ModelProto's normalizer_spec."""
    arg = (SPM_DUMMY if dummy else 0) | (SPM_EXTRA if extra else 0) | (SPM_ESCAPE if escape else 0)
    return Program([(OP_SPM, b"", b"", arg)], charsmap, frozen)


# ------------------------------------------------------------------------------------------ kernels


@K.device(inline=True)
def sp_is_space(cp):
    """Rust's ``char::is_whitespace`` (Unicode White_Space), which HF's Strip and WhitespaceSplit use."""
    return (9 <= cp <= 13 or cp == 32 or cp == 0x85 or cp == 0xA0 or cp == 0x1680 or 0x2000 <= cp <= 0x200A
            or cp == 0x2028 or cp == 0x2029 or cp == 0x202F or cp == 0x205F or cp == 0x3000)


@K.device
def sp_prefix_at(buf, i, end, ud):
    """(length, index) of the longest frozen piece at ``buf[i:end]``, (0, -1) for none."""
    pool, off, first, _ = ud
    b = buf[i]
    best = 0
    at = -1
    for k in range(first[b], first[b + 1]):
        ln = off[k + 1] - off[k]
        if ln <= best or i + ln > end:
            continue
        same = True
        for j in range(1, ln):
            if buf[i + j] != pool[off[k] + j]:
                same = False
                break
        if same:
            best = ln
            at = k
    return best, at


@K.device
def trie_longest(buf, i, end, units, shortest=False):
    """(length, value) of the longest charsmap key that prefixes ``buf[i:end]`` (sentencepiece: among its first
    32 matches; ``shortest``: the first match, as HF's ``spm_precompiled`` takes), (0, 0) for none."""
    n = units.shape[0]
    u = units[0]
    node = (u >> 10) << ((u & 512) >> 6)
    best = 0
    val = 0
    found = 0
    for k in range(i, end):
        c = np.int64(buf[k])
        if c == 0:
            break
        node ^= c
        if node >= n:
            break
        u = units[node]
        if (u & 0x800000FF) != c:
            break
        node ^= (u >> 10) << ((u & 512) >> 6)
        if (u >> 8) & 1:
            if node >= n or found >= 32:
                break
            found += 1
            best = k + 1 - i
            val = units[node] & 0x7FFFFFFF
            if shortest:
                break
    return best, val


@K.device
def spm_normalize(buf, a, b, out, o, cap, ntab, arg):
    """sentencepiece's ``Normalizer::Normalize`` of ``buf[a:b]`` into ``out[o:cap]``: the new end, -1 when full."""
    units = ntab[NT_UNITS]
    norm = ntab[NT_NORM]
    ud = ntab[NT_UD]
    extra = (arg & SPM_EXTRA) != 0
    escape = (arg & SPM_ESCAPE) != 0
    i = a
    start = o
    first = True
    prev_space = extra
    while i < b:
        # the next piece: a frozen piece as it is, else the longest rule, else one character
        ln = sp_prefix_at(buf, i, b, ud)[0]
        src_norm = False
        s0 = i
        s1 = i + ln
        if ln == 0:
            ln, val = trie_longest(buf, i, b, units)
            if ln > 0:
                src_norm = True
                s0 = val
                s1 = val
                while s1 < norm.shape[0] and norm[s1] != 0:
                    s1 += 1
            else:
                ln = utf8_at(buf, i, b)[1]
                s1 = i + ln
        if first and extra and s1 - s0 == 1 and (norm[s0] if src_norm else buf[s0]) == 32:
            i += ln  # a heading space
            continue
        if first:
            first = False
            if arg & SPM_DUMMY:
                if o + 3 > cap:
                    return -1
                if escape:
                    out[o] = 0xE2
                    out[o + 1] = 0x96
                    out[o + 2] = 0x81
                    o += 3
                else:
                    out[o] = 32
                    o += 1
        while prev_space and s0 < s1 and (norm[s0] if src_norm else buf[s0]) == 32:
            s0 += 1
        if s0 < s1:
            for q in range(s0, s1):
                c = norm[q] if src_norm else buf[q]
                if escape and c == 32:
                    if o + 3 > cap:
                        return -1
                    out[o] = 0xE2
                    out[o + 1] = 0x96
                    out[o + 2] = 0x81
                    o += 3
                else:
                    if o >= cap:
                        return -1
                    out[o] = c
                    o += 1
            prev_space = (norm[s1 - 1] if src_norm else buf[s1 - 1]) == 32
        i += ln
        if not extra:
            prev_space = False
    if extra:  # trailing spaces
        while True:
            if escape and o - start >= 3 and out[o - 3] == 0xE2 and out[o - 2] == 0x96 and out[o - 1] == 0x81:
                o -= 3
            elif not escape and o > start and out[o - 1] == 32:
                o -= 1
            else:
                break
    return o


@K.device(inline=True)
def gb_flags(cp, gidx, gfl):
    """The grapheme flags (GB_*) of code point ``cp`` (0 for an invalid one)."""
    if cp < 0 or cp >= N_CP:
        return 0
    return gfl[(np.int64(gidx[cp >> GB_SHIFT]) << GB_SHIFT) | (cp & ((1 << GB_SHIFT) - 1))]


@K.device
def gb_join(pf, cf, ep, incb):
    """No cluster boundary between a character of flags ``pf`` and one of ``cf`` (UAX #29 GB3-GB11 on HF's
    measured classes; ``ep``: 2 after Extended_Pictographic Extend* ZWJ; ``incb``: 2 after an Indic consonant and a
    linker; regional indicators never matter for Precompiled: see the table generator)."""
    if (pf & GB_CR) and (cf & GB_LF):
        return True
    if (pf & GB_CTL) or (cf & GB_CTL):
        return False
    if ((pf & GB_HL) and (cf & GB_HLR)) or ((pf & GB_HVL) and (cf & GB_HVR)) or ((pf & GB_HTL) and (cf & GB_HTR)):
        return True
    if (cf & GB_EXT) or (pf & GB_PRE):
        return True
    if incb == 2 and (cf & GB_CONS):
        return True
    return ep == 2 and (cf & GB_EP) != 0


@K.device
def precomp_emit(buf, i, j, out, o, cap, units, norm):
    """``buf[i:j]`` replaced by the normalized string of its shortest charsmap key prefix, copied when none
    (``o`` unchanged then: returns (end, matched)); end -1 when full."""
    ln, val = trie_longest(buf, i, j, units, True)
    if ln == 0:
        return o, False
    q = val
    while q < norm.shape[0] and norm[q] != 0:
        if o >= cap:
            return -1, True
        out[o] = norm[q]
        o += 1
        q += 1
    return o, True


@K.device
def precompiled(buf, a, b, out, o, cap, ntab):
    """HF's ``Precompiled`` of ``buf[a:b]`` into ``out[o:cap]``: per grapheme cluster, a cluster under 6 bytes
    replaced whole by its shortest key's string, else each character by its own (or copied). New end, -1: full."""
    units = ntab[NT_UNITS]
    norm = ntab[NT_NORM]
    gidx = ntab[NT_GIDX]
    gfl = ntab[NT_GFLAGS]
    i = a
    while i < b:
        cp, n = utf8_at(buf, i, b)
        pf = gb_flags(cp, gidx, gfl)
        ep = 1 if pf & GB_EP else 0
        incb = 1 if pf & GB_CONS else 0
        j = i + n
        while j < b:
            cp, n = utf8_at(buf, j, b)
            cf = gb_flags(cp, gidx, gfl)
            if not gb_join(pf, cf, ep, incb):
                break
            if cf & GB_EP:
                ep = 1
            elif ep == 1 and (cf & GB_XEP):
                ep = 1
            elif ep == 1 and (cf & GB_ZWJ):
                ep = 2
            else:
                ep = 0
            if cf & GB_CONS:
                incb = 1
            elif incb >= 1 and (cf & GB_LNK):
                incb = 2
            elif not (incb >= 1 and (cf & GB_INX)):
                incb = 0
            pf = cf
            j += n
        done = False
        if j - i < GB_SHORT:
            o, done = precomp_emit(buf, i, j, out, o, cap, units, norm)
            if o < 0:
                return -1
        k = i
        while not done and k < j:
            n = utf8_at(buf, k, j)[1]
            o, hit = precomp_emit(buf, k, k + n, out, o, cap, units, norm)
            if o < 0:
                return -1
            if not hit:
                if o + n > cap:
                    return -1
                for q in range(n):
                    out[o + q] = buf[k + q]
                o += n
            k += n
        i = j
    return o


@K.device
def sp_norm_op(buf, a, b, out, o, cap, ntab, op):
    """Op ``op`` of the program on ``buf[a:b]``, written to ``out[o:cap]``: the new end, -1 when full."""
    prog = ntab[NT_PROG]
    pool = ntab[NT_POOL]
    at = 1 + OP_W * op
    kind = prog[at]
    p0 = prog[at + 1]
    pn = prog[at + 2]
    c0 = prog[at + 3]
    cn = prog[at + 4]
    arg = prog[at + 5]
    if kind == OP_SPM:
        return spm_normalize(buf, a, b, out, o, cap, ntab, arg)
    if kind == OP_PRECOMP:
        return precompiled(buf, a, b, out, o, cap, ntab)
    if kind == OP_FORM:
        forms = ntab[NT_FORMS]
        tabs = forms[0]
        if arg == 1:
            tabs = forms[1]
        elif arg == 2:
            tabs = forms[2]
        elif arg == 3:
            tabs = forms[3]
        if nfc_quick(buf, a, b, tabs):
            return nfc_write(buf, a, b, out, o, cap, tabs)
        if o + (b - a) > cap:  # in the form already: copied
            return -1
        for k in range(b - a):
            out[o + k] = buf[a + k]
        return o + (b - a)
    if kind == OP_MAP:
        return map_write(buf, a, b, out, o, cap, ntab[NT_MAPS], arg)
    if kind == OP_STRIP:
        while a < b and (arg & 1):
            cp, n = utf8_at(buf, a, b)
            if not sp_is_space(cp):
                break
            a += n
        while b > a and (arg & 2):
            j = b - 1
            while j > a and (buf[j] & 0xC0) == 0x80:
                j -= 1
            if not sp_is_space(utf8_at(buf, j, b)[0]):
                break
            b = j
    if kind == OP_PREPEND and b > a:
        if o + cn > cap:
            return -1
        for k in range(cn):
            out[o + k] = pool[c0 + k]
        o += cn
    i = a
    while i < b:
        hit = 0
        if kind == OP_REPLACE and i + pn <= b:
            hit = pn
            for k in range(pn):
                if buf[i + k] != pool[p0 + k]:
                    hit = 0
                    break
        elif kind == OP_RUN and buf[i] == pool[p0]:
            j = i
            while j < b and buf[j] == pool[p0]:
                j += 1
            hit = j - i if j - i >= arg else 0
            if hit == 0:  # a run too short: copied as it is
                if o + (j - i) > cap:
                    return -1
                for k in range(i, j):
                    out[o] = buf[k]
                    o += 1
                i = j
                continue
        if hit:
            if o + cn > cap:
                return -1
            for k in range(cn):
                out[o + k] = pool[c0 + k]
            o += cn
            i += hit
        else:
            if o >= cap:
                return -1
            out[o] = buf[i]
            o += 1
            i += 1
    return o


@K.device
def sp_normalize(src, a, b, nbuf, area, size, ntab):
    """Normalize ``src[a:b]`` (a segment) into ``nbuf``: copied to the area at ``area``, then each op from one
    area (``size`` bytes each) to the other. Returns (start, end) of the result in ``nbuf``, (-1, -1) when an
    area is full."""
    cur = area
    if b - a > size:
        return -1, -1
    for k in range(a, b):
        nbuf[cur + k - a] = src[k]
    lo = cur
    hi = cur + b - a
    for op in range(ntab[NT_PROG][0]):
        dst = area + size if cur == area else area
        e = sp_norm_op(nbuf, lo, hi, nbuf, dst, dst + size, ntab, op)
        if e < 0:
            return -1, -1
        cur = dst
        lo = dst
        hi = e
    return lo, hi


@K.device
def sp_normalize_item(t, data, offsets, ntab, nbuf, lay, res):
    """Text ``t`` normalized into its two areas of ``nbuf`` (``lay``: the (a, b) area bound); ``res[t]``: (start,
    end) of the result, (-1, -1) when an area was too small."""
    lo = offsets[t]
    hi = offsets[t + 1]
    size = lay[0] * (hi - lo) + lay[1]
    base = 2 * (lay[0] * lo + lay[1] * t)
    s, e = sp_normalize(data, lo, hi, nbuf, base, size, ntab)
    res[t, 0] = s
    res[t, 1] = e


NORMALIZE = K.cpu_kernel(sp_normalize_item)


def normalize_texts(prog: Program, texts: list[bytes]) -> list[bytes]:
    """Each text normalized by ``prog`` on the CPU (added tokens' contents at load; tests)."""
    a, b = prog.bound()
    off = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in texts], out=off[1:])
    data = np.frombuffer(b"".join(texts) or b"\0", dtype=np.uint8).copy()
    nbuf = np.zeros(2 * (a * int(off[-1]) + (b + 1) * len(texts)) + 1, dtype=np.uint8)
    res = np.zeros((len(texts), 2), dtype=np.int64)
    lay = np.array([a, b + 1], dtype=np.int64)
    if texts:
        NORMALIZE(0, 1, len(texts), data, off, _tuple(prog.tables()), nbuf, lay, res)
    return [nbuf[s:e].tobytes() for s, e in res]


def _tuple(x: Any) -> Any:
    return tuple(_tuple(a) for a in x) if isinstance(x, tuple) else x
