"""Compile parsed pre-tokenizer regexes into one program for the kernels' Pike VM (:mod:`.match`).

A program is a Thompson NFA in priority order (a ``SPLIT``'s first branch is the one a backtracking engine tries
first), so the VM's leftmost-first match is the reference engine's. Character sets become bits of a per-code-point
mask (``cmask[blk[cp >> 8] * 256 + (cp & 255)]``, int64: at most 63 sets per program), evaluated here over the
Unicode tables measured on each reference engine (``data/regex_unicode.npz``, ``scripts/gen_regex_tables.py``).

What a Pike VM cannot do directly is rewritten where it is exact and refused elsewhere: a possessive quantifier or
an atomic group over one character set (``C*+`` is ``C*(?!C)``; ``C{a,b}+`` takes ``min(run, b)``); a lookaround
over one to four character sets (``(?!\\S)``). A pattern that can match the empty string, a repetition of a
sub-pattern that can, and every other construct are :class:`~triton_textops.errors.ConfigError` s naming it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

import numpy as np

from triton_textops.errors import ConfigError
from triton_textops.ops.bpe.regex.parse import GC_NAMES, Node, parse

N_CP = 0x110000
OP_CLASS, OP_MATCH, OP_JMP, OP_SPLIT, OP_ASSERT = range(5)
# assertion kinds (a row (kind, b) of ``asserts``, OP_ASSERT's a its row); LOOK / NLOOK take a row of ``looks``
# (b), BEHIND / NBEHIND and the word boundaries a set bit (b)
A_BOT, A_EOT, A_EOTNL, A_BOL, A_EOL, A_WORD, A_NOTWORD, A_LOOK, A_NLOOK, A_BEHIND, A_NBEHIND = range(11)
LOOK_MAX = 4  # character sets in a lookahead
MAX_INSTS = 1 << 13
MAX_SETS = 63
MAX_ASSERTS = 63  # distinct assertions of a program (the matcher evaluates them as one bit mask per position)
# Split behaviours (HF's SplitDelimiterBehavior), as the kernels number them
BEHAVIOURS = {"Removed": 0, "Isolated": 1, "MergedWithPrevious": 2, "MergedWithNext": 3, "Contiguous": 4}


@functools.cache
def unicode_tables(flavor: str) -> tuple[np.ndarray, np.ndarray, dict[str, int], np.ndarray, np.ndarray]:
    """(general category per code point, property bits per code point, property name -> bit, fold code points,
    the ASCII letter each folds to) of ``flavor``'s engine."""
    with resources.as_file(resources.files("triton_textops") / "data" / "regex_unicode.npz") as p:
        z = np.load(p)
        if tuple(str(x) for x in z["gc_names"]) != GC_NAMES:
            raise RuntimeError("data/regex_unicode.npz: general categories out of order (regenerate it)")
        names = {str(n): k for k, n in enumerate(z["prop_names"])}
        return (z[f"gc_{flavor}"], z[f"prop_{flavor}"], names, z[f"fold_cp_{flavor}"].astype(np.int64),
                z[f"fold_to_{flavor}"].astype(np.int64))


def set_mask(s: Node, flavor: str, where: str) -> np.ndarray:
    """The code points of the set expression ``s`` (bool per code point; never a surrogate)."""
    gc, prop, names, fold_cp, fold_to = unicode_tables(flavor)
    kind = s[0]
    if kind == "cp":
        m = np.zeros(N_CP, dtype=bool)
        m[s[1]:s[2] + 1] = True
    elif kind == "gc":
        m = gc == GC_NAMES.index(s[1])
    elif kind == "prop":
        m = (prop & np.uint32(1 << names[s[1]])) != 0
    elif kind == "not":
        m = ~set_mask(s[1], flavor, where)
    elif kind == "or":
        m = np.zeros(N_CP, dtype=bool)
        for x in s[1]:
            m |= set_mask(x, flavor, where)
    elif kind == "and":
        m = set_mask(s[1][0], flavor, where)
        for x in s[1][1:]:
            m &= set_mask(x, flavor, where)
    elif kind == "fold":
        m = set_mask(s[1], flavor, where)
        cased = np.isin(gc, [GC_NAMES.index(c) for c in ("Lu", "Ll", "Lt")])
        if (m[0x80:] & cased[0x80:]).any():
            c = int(np.flatnonzero(m[0x80:] & cased[0x80:])[0]) + 0x80
            raise ConfigError(f"{where}: a case-insensitive non-ASCII letter (U+{c:04X}) is not supported")
        low = np.zeros(128, dtype=bool)
        for c in range(65, 91):
            low[c + 32] |= m[c] | m[c + 32]
        out = m.copy()
        out[97:123] |= low[97:123]
        out[65:91] |= low[97:123]
        out[fold_cp[low[fold_to]]] = True
        m = out
    else:
        raise AssertionError(kind)
    m[0xD800:0xE000] = False
    return m


def nullable(n: Node) -> bool:
    """Whether ``n`` can match the empty string (assertions are zero-width: nullable)."""
    kind = n[0]
    if kind == "set":
        return False
    if kind == "cat":
        return all(nullable(x) for x in n[1])
    if kind == "alt":
        return any(nullable(x) for x in n[1])
    if kind == "rep":
        return n[2] == 0 or nullable(n[1])
    if kind == "atomic":
        return nullable(n[1])
    return True  # assert, look


@dataclass
class Program:
    """A compiled set of patterns: instructions ``(op, a, b)`` int32, lookahead rows ``(negated, length, set...)``,
    the set mask tables, each pattern's entry point, and the distinct assertions: a row (their number, 0), then
    one ``(kind, b)`` each (OP_ASSERT's ``a`` is its number)."""

    insts: np.ndarray
    looks: np.ndarray
    blk: np.ndarray
    cmask: np.ndarray
    entries: list[int]
    asserts: np.ndarray


class _Compiler:
    def __init__(self, flavor: str) -> None:
        self.flavor = flavor
        self.insts: list[list[int]] = []
        self.looks: list[list[int]] = []
        self.asserts: dict[tuple[int, int], int] = {}
        self.sets: list[np.ndarray] = []
        self.set_index: dict[bytes, int] = {}
        self.where = ""

    def set_bit(self, s: Node) -> int:
        m = set_mask(s, self.flavor, self.where)
        key = np.packbits(m).tobytes()
        k = self.set_index.get(key)
        if k is None:
            if len(self.sets) >= MAX_SETS:
                raise ConfigError(f"{self.where}: more than {MAX_SETS} distinct character sets")
            k = self.set_index[key] = len(self.sets)
            self.sets.append(m)
        return k

    def emit_assert(self, kind: int, b: int) -> None:
        """An OP_ASSERT of the assertion (kind, b), numbered once per program."""
        if (kind, b) not in self.asserts:
            if len(self.asserts) == MAX_ASSERTS:
                raise ConfigError(f"{self.where}: more than {MAX_ASSERTS} distinct assertions (anchors, lookarounds, "
                                  "possessive repeats) in one pre-tokenizer")
            self.asserts[kind, b] = len(self.asserts)
        self.emit(OP_ASSERT, self.asserts[kind, b])

    def emit(self, op: int, a: int = 0, b: int = 0) -> int:
        self.insts.append([op, a, b])
        if len(self.insts) > MAX_INSTS:
            raise ConfigError(f"{self.where}: the pattern compiles to more than {MAX_INSTS} instructions")
        return len(self.insts) - 1

    def pattern(self, pattern: str) -> int:
        self.where = f"regex {pattern!r}"
        tree = parse(pattern, self.flavor)
        if nullable(tree):
            raise ConfigError(f"{self.where}: a pattern that can match the empty string is not supported")
        entry = len(self.insts)
        self.node(tree)
        self.emit(OP_MATCH)
        return entry

    def node(self, n: Node) -> None:
        kind = n[0]
        if kind == "set":
            self.emit(OP_CLASS, self.set_bit(n[1]))
        elif kind == "cat":
            for x in n[1]:
                self.node(x)
        elif kind == "alt":
            jumps = []
            for x in n[1][:-1]:
                split = self.emit(OP_SPLIT, len(self.insts) + 1)
                self.node(x)
                jumps.append(self.emit(OP_JMP))
                self.insts[split][2] = len(self.insts)
            self.node(n[1][-1])
            for j in jumps:
                self.insts[j][1] = len(self.insts)
        elif kind == "rep":
            self.rep(n)
        elif kind == "atomic":
            body = n[1]
            if body[0] == "rep" and body[1][0] == "set" and body[4] != "lazy":
                self.possessive(body[1], body[2], body[3])
            elif body[0] == "set":
                self.node(body)
            else:
                raise ConfigError(f"{self.where}: an atomic group over more than one character set is not supported")
        elif kind == "assert":
            a = {"bot": A_BOT, "eot": A_EOT, "eotnl": A_EOTNL, "bol": A_BOL, "eol": A_EOL, "word": A_WORD,
                 "notword": A_NOTWORD}[n[1]]
            b = self.set_bit(("prop", "w")) if a in (A_WORD, A_NOTWORD) else 0
            self.emit_assert(a, b)
        elif kind == "look":
            self.look(n[1], n[2], n[3])
        else:
            raise AssertionError(kind)

    def look(self, ahead: bool, neg: bool, body: Node) -> None:
        seq = body[1] if body[0] == "cat" else [body]
        if not all(x[0] == "set" for x in seq) or not 1 <= len(seq) <= (LOOK_MAX if ahead else 1):
            raise ConfigError(f"{self.where}: a look{'ahead' if ahead else 'behind'} other than "
                              f"{'one to four character sets' if ahead else 'one character set'} is not supported")
        bits = [self.set_bit(x[1]) for x in seq]
        if ahead:
            self.looks.append([int(neg), len(bits)] + bits + [0] * (LOOK_MAX - len(bits)))
            self.emit_assert(A_NLOOK if neg else A_LOOK, len(self.looks) - 1)
        else:
            self.emit_assert(A_NBEHIND if neg else A_BEHIND, bits[0])

    def rep(self, n: Node) -> None:
        _, body, lo, hi, mode = n
        if mode == "possessive":
            if body[0] != "set":
                raise ConfigError(f"{self.where}: a possessive quantifier over more than one character set is not "
                                  "supported")
            self.possessive(body, lo, hi)
            return
        if nullable(body) and (hi == -1 or hi > 1):
            raise ConfigError(f"{self.where}: a repetition of a sub-pattern that can match the empty string is not "
                              "supported")
        for _ in range(lo):
            self.node(body)
        if hi == -1:
            top = self.emit(OP_SPLIT)
            self.node(body)
            self.emit(OP_JMP, top)
            first, other = top + 1, len(self.insts)
            self.insts[top][1:] = [first, other] if mode == "greedy" else [other, first]
            return
        splits = []
        for _ in range(hi - lo):
            splits.append(self.emit(OP_SPLIT))
            self.node(body)
        end = len(self.insts)
        for s in splits:
            self.insts[s][1:] = [s + 1, end] if mode == "greedy" else [end, s + 1]

    def possessive(self, body: Node, lo: int, hi: int) -> None:
        """``C{lo,hi}`` taken atomically: the longest run up to ``hi``, never given back."""
        k = self.set_bit(body[1])
        for _ in range(lo):
            self.emit(OP_CLASS, k)
        self.looks.append([1, 1, k] + [0] * (LOOK_MAX - 1))
        not_next = len(self.looks) - 1
        if hi == -1:
            top = self.emit(OP_SPLIT, len(self.insts) + 1)
            self.emit(OP_CLASS, k)
            self.emit(OP_JMP, top)
            self.insts[top][2] = len(self.insts)
            self.emit_assert(A_NLOOK, not_next)
            return
        if hi - lo > 64:
            raise ConfigError(f"{self.where}: a possessive interval wider than 64 is not supported")
        jumps = []
        for extra in range(hi - lo, -1, -1):  # exactly one branch can succeed: order does not matter
            split = self.emit(OP_SPLIT, len(self.insts) + 1) if extra else -1
            for _ in range(extra):
                self.emit(OP_CLASS, k)
            if extra != hi - lo:
                self.emit_assert(A_NLOOK, not_next)
            if extra:
                jumps.append(self.emit(OP_JMP))
                self.insts[split][2] = len(self.insts)
        for j in jumps:
            self.insts[j][1] = len(self.insts)

    def program(self, entries: list[int]) -> Program:
        masks = np.zeros(N_CP, dtype=np.int64)
        for k, m in enumerate(self.sets):
            masks[m] |= np.int64(1) << np.int64(k)
        rows = np.ascontiguousarray(masks.reshape(-1, 256)).view(np.dtype((np.void, 256 * 8))).reshape(-1)
        _, first, blk = np.unique(rows, return_index=True, return_inverse=True)  # (blocks as one key each)
        uniq = masks.reshape(-1, 256)[first]
        looks = np.array(self.looks or [[0] * (2 + LOOK_MAX)], dtype=np.int32)
        asserts = np.array([(len(self.asserts), 0), *self.asserts], dtype=np.int32)
        return Program(np.array(self.insts, dtype=np.int32), looks, blk.reshape(-1).astype(np.int32),
                       uniq.reshape(-1).astype(np.int64), entries, asserts)


def compile_patterns(patterns: list[str], flavor: str) -> Program:
    """One program for ``patterns`` (each its own entry point, the sets shared), read as ``flavor``."""
    c = _Compiler(flavor)
    entries = [c.pattern(p) for p in patterns]
    return c.program(entries)
