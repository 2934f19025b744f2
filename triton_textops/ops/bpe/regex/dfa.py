"""An anchored DFA of a compiled program (:mod:`.compile`), built at load: the kernels' fast path for a match that
starts where the pre-tokenizer stands (the usual case: a pre-tokenizer's pattern covers almost every character).

A state is what the Pike VM (:mod:`.match`) holds after a step of one anchored thread: its thread list in priority
order (each program counter once), cut after the first ``MATCH`` (the VM cuts the lower ones at its next step). A
transition reads the class of the character stepped over (code points with the same set mask are one class) and
the class of the one after it, which decide the assertions that hold between them (a one-character lookahead or
lookbehind, a word boundary, the piece's start and end), so the kernels evaluate no assertion. The kernels walk it
from a start, the last accepting state seen giving the leftmost-first match's end; where no anchored match exists
at a position but its first character was read, they hand that search to the VM (which stays linear); a position
whose first character kills every thread is skipped at the cost of one table lookup.

A program with an assertion that needs more (``^`` / ``$`` of a line, ``\\Z``, a longer lookahead), or whose DFA
outgrows :data:`MAX_STATES` / :data:`MAX_CELLS`, gets none (an empty table): the kernels then run the VM alone, as
exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from triton_textops.ops.bpe.regex.compile import (
    A_BEHIND,
    A_BOT,
    A_EOT,
    A_LOOK,
    A_NBEHIND,
    A_NLOOK,
    A_NOTWORD,
    A_WORD,
    OP_ASSERT,
    OP_CLASS,
    OP_JMP,
    OP_MATCH,
    OP_SPLIT,
    Program,
)

MAX_STATES = 4096
MAX_FAIL = 32  # characters a failing anchored attempt may read for the DFA alone to be used (:func:`complete`)
MAX_CELLS = 1 << 20  # states x classes x (classes + 2), int32: 4 MB
DEAD = 0  # state 0: no thread left


@dataclass
class Dfa:
    """``trans`` (states, classes * width) int32: column ``c * width + c2`` steps over a character of class ``c``
    followed by one of class ``c2`` (``width - 1``: the piece's end); ``accept`` (states,) int32; ``start``
    (entries, width, width) int32: an entry's state at a position by the classes before it (``width - 2``: the
    piece's start) and at it; ``ccls`` the class of each code point, in :class:`~.compile.Program`'s block layout
    (``ccls[blk[cp >> 8] * 256 + (cp & 255)]``) int32. ``trans`` has no rows when the program has no DFA.
    ``complete``: the kernels may use the DFA alone, trying each position in turn (:func:`complete`). ``lead``
    (entries, classes) int32: 1 where a match of the entry's pattern may start with a character of the class (0:
    the kernels skip the position without running the DFA)."""

    trans: np.ndarray
    accept: np.ndarray
    start: np.ndarray
    ccls: np.ndarray
    complete: bool = False
    lead: np.ndarray | None = None


def complete(trans: np.ndarray, accept: np.ndarray, start: np.ndarray) -> bool:
    """Whether an anchored attempt that finds no match reads at most :data:`MAX_FAIL` characters: the states an
    attempt can reach before any accepting one (from a start, not through an accepting state) form no cycle
    and no path longer than that. Then trying each position in turn with the DFA alone is linear in the text,
    and the kernels need no VM (every scanner pattern, Tekken's, DeepSeek's: their failing attempts read one or
    two characters); a pattern like ``\\d+x`` (a failing attempt as long as the run of digits) keeps the VM."""
    if trans.shape[0] == 0:
        return False
    roots = [int(x) for x in np.unique(start) if x != DEAD]
    depth: dict[int, int] = {}  # longest path (characters) from a state through non-accepting ones
    on_path: set[int] = set()

    def longest(st: int) -> int:
        if st in depth:
            return depth[st]
        if st in on_path:
            raise OverflowError  # (a cycle)
        on_path.add(st)
        best = 0
        for x in np.unique(trans[st]):
            x = int(x)
            if x != DEAD and accept[x] == 0:
                best = max(best, 1 + longest(x))
                if best > MAX_FAIL:
                    raise OverflowError
        on_path.discard(st)
        depth[st] = best
        return best

    try:
        for r in roots:
            if accept[r] == 0:
                longest(r)
    except (OverflowError, RecursionError):
        return False
    return True


def _simple_asserts(prog: Program, cmask: np.ndarray) -> np.ndarray | None:
    """The program's assertion mask by (class before, class after) (classes, then the start and the end), or None
    when one of them needs more than the characters on either side (``^`` / ``$`` of a line, ``\\Z``, a lookahead
    of more than one character)."""
    n = len(cmask)
    start, end = n, n + 1
    m = [int(x) for x in cmask] + [0, 0]
    am = np.zeros((n + 2, n + 2), np.int64)
    for j in range(int(prog.asserts[0, 0])):
        kind, b = (int(x) for x in prog.asserts[j + 1])
        for cb in range(n + 2):
            for ca in range(n + 2):
                if kind == A_BOT:
                    ok = cb == start
                elif kind == A_EOT:
                    ok = ca == end
                elif kind in (A_LOOK, A_NLOOK):
                    if prog.looks[b, 1] != 1:
                        return None
                    ok = ((m[ca] >> int(prog.looks[b, 2])) & 1 != 0) == (kind == A_LOOK)
                elif kind in (A_BEHIND, A_NBEHIND):
                    ok = ((m[cb] >> b) & 1 != 0) == (kind == A_BEHIND)
                elif kind in (A_WORD, A_NOTWORD):
                    ok = (((m[cb] >> b) & 1) != ((m[ca] >> b) & 1)) == (kind == A_WORD)
                else:
                    return None
                if ok:
                    am[cb, ca] |= 1 << j
    return am


def _none(entries: int, ccls: np.ndarray) -> Dfa:
    return Dfa(np.zeros((0, 1), np.int32), np.zeros(1, np.int32), np.zeros((max(entries, 1), 1, 1), np.int32), ccls,
               False, np.ones((max(entries, 1), int(ccls.max(initial=0)) + 1), np.int32))


def leads(trans: np.ndarray, start: np.ndarray) -> np.ndarray:
    """(entries, classes): whether a start state (any class before) steps over a character of the class to a
    live state (followed by any class): else no match starts with such a character."""
    width = start.shape[1]
    n_cls = trans.shape[1] // width
    out = np.zeros((start.shape[0], n_cls), np.int32)
    for c in range(n_cls):
        live = trans[start[:, :, c], c * width:(c + 1) * width] != DEAD  # (entries, before, after)
        out[:, c] = live.any(axis=(1, 2))
    return out


def build_dfa(prog: Program) -> Dfa:
    """The anchored DFA of ``prog`` (each of its entries a start), or an empty one (the VM alone) when an assertion
    needs more than the characters beside it or the DFA would be too large."""
    masks, ccls_flat = np.unique(prog.cmask, return_inverse=True)
    ccls = ccls_flat.reshape(-1).astype(np.int32)
    n_cls = len(masks)
    width = n_cls + 2
    amtab = _simple_asserts(prog, masks)
    if amtab is None or width * width > MAX_CELLS:
        return _none(len(prog.entries), ccls)
    insts = prog.insts.tolist()
    bits = [[(int(m) >> k) & 1 != 0 for k in range(64)] for m in masks]  # class -> set bit -> member
    closures: dict[tuple[int, int], list[int]] = {}

    def closure(pc0: int, am: int) -> list[int]:
        """The threads ``pc0`` reaches without reading (the VM's rx_add order), under the assertion mask ``am``."""
        got = closures.get((pc0, am))
        if got is not None:
            return got
        out: list[int] = []
        seen: set[int] = set()
        stack = [pc0]
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op, a, b = insts[pc]
            if op == OP_JMP:
                stack.append(a)
            elif op == OP_SPLIT:
                stack.append(b)
                stack.append(a)
            elif op == OP_ASSERT:
                if (am >> a) & 1:
                    stack.append(pc + 1)
            else:
                out.append(pc)
        closures[pc0, am] = out
        return out

    index: dict[tuple[int, ...], int] = {(): DEAD}
    states: list[tuple[int, ...]] = [()]

    def state_of(pcs: list[int]) -> int | None:
        """The state of a thread list (each program counter once, cut after the first MATCH); None: too many."""
        key: list[int] = []
        seen: set[int] = set()
        for pc in pcs:
            if pc in seen:
                continue
            seen.add(pc)
            key.append(pc)
            if insts[pc][0] == OP_MATCH:
                break
        t = tuple(key)
        s = index.get(t)
        if s is None:
            if len(states) >= MAX_STATES or (len(states) + 1) * n_cls * width > MAX_CELLS:
                return None
            s = index[t] = len(states)
            states.append(t)
        return s

    start = np.zeros((len(prog.entries), width, width), np.int32)
    for e, pc in enumerate(prog.entries):
        for cb in range(width):
            for ca in range(width):
                s = state_of(closure(pc, int(amtab[cb, ca])))
                if s is None:
                    return _none(len(prog.entries), ccls)
                start[e, cb, ca] = s
    rows: list[list[int]] = [[DEAD] * (n_cls * width)]
    done = 1
    while done < len(states):
        threads = [pc for pc in states[done] if insts[pc][0] == OP_CLASS]
        row = [DEAD] * (n_cls * width)
        for c in range(n_cls):
            live = [pc for pc in threads if bits[c][insts[pc][1]]]
            if not live:
                continue
            by_am: dict[int, int] = {}
            for c2 in range(width):
                am = int(amtab[c, c2])
                s = by_am.get(am)
                if s is None:
                    nxt: list[int] = []
                    for pc in live:
                        nxt.extend(closure(pc + 1, am))
                    s = state_of(nxt)
                    if s is None:
                        return _none(len(prog.entries), ccls)
                    by_am[am] = s
                row[c * width + c2] = s
        rows.append(row)
        done += 1
    accept = np.array([1 if t and insts[t[-1]][0] == OP_MATCH else 0 for t in states], np.int32)
    trans = np.array(rows, np.int32)
    return Dfa(trans, accept, start, ccls, complete(trans, accept, start), leads(trans, start))
