"""The kernels' regex matcher: a Pike VM over a compiled program (:mod:`.compile`), and the pre-tokenizer it drives.

:func:`rx_search` finds the leftmost-first match from a position in ``O(text x program)`` (no backtracking: a 1 MB
adversarial text is one linear pass): threads in priority order, each program counter at most once per position,
a thread reaching ``MATCH`` cutting the lower-priority ones. Assertions are evaluated at the thread's position
within the piece being split (its bounds are the text's bounds, as HF splits each piece on its own).

:func:`encode_gap_regex` replaces the encode kernel's ``encode_gap`` in a regex tokenizer's variant: it runs the
pre-tokenizer's chain of ``Split`` levels (each level splits every piece of the one above, with its HF behaviour
and ``invert``) depth-first and merges each final piece. Its state lives in the text's merge work columns
(:func:`vm_columns` of them, before the merge's own; the tokenizer adds them to every text's scratch region): per
level ten fields, then the VM's thread lists, stamps and closure stack.

The tables travel in the class-table tuple (``ctab``) after the scanners' three: :data:`CT_INSTS` (program
``(m, 3)`` int32), :data:`CT_LOOKS` (lookahead rows), :data:`CT_BLK` / :data:`CT_CMASK` (the set masks per code
point), :data:`CT_LEVELS` (``(levels, 3)`` int32: entry point, behaviour, invert), :data:`CT_ASSERTS` (the
program's distinct assertions, ``(kind, argument)`` int32: evaluated once per position into a bit mask that the
closure reads, so the kernel holds one small evaluator outside the VM's inner loop, not one inside each closure).
"""

from __future__ import annotations

import numpy as np

from triton_textops.ops.bpe.encode import S_CACHE, S_IDS, S_WORK
from triton_textops.ops.bpe.merge import encode_piece
from triton_textops.ops.bpe.pretok import cp_at
from triton_textops.ops.bpe.regex.compile import (
    A_BEHIND,
    A_BOL,
    A_BOT,
    A_EOL,
    A_EOT,
    A_EOTNL,
    A_LOOK,
    A_NBEHIND,
    A_NLOOK,
    A_WORD,
    OP_ASSERT,
    OP_JMP,
    OP_MATCH,
    OP_SPLIT,
)
from triton_textops.ops.core import kernels as K

CT_INSTS, CT_LOOKS, CT_BLK, CT_CMASK, CT_LEVELS, CT_ASSERTS = range(3, 9)
# the anchored DFA (:mod:`.dfa`): transitions, accepting states, start states, class per code point, the classes
# a match may start with
CT_DTRANS, CT_DACCEPT, CT_DSTART, CT_DCLS, CT_DLEAD = range(9, 14)
MAX_LEVELS = 8  # Split levels of a pre-tokenizer chain
# a level's fields (row f % 6, column 2 * level + f // 6 of the state columns), positions relative to the gap
F_LO, F_HI, F_CUR, F_MS, F_ME, F_PA, F_PB, F_PM, F_HAS, F_PREVM = range(10)
LF = 10


@K.device(inline=True)
def vm_columns(n_insts):
    """Merge work columns a text's regex state takes: the levels' fields, then lists and stack of the VM."""
    return 2 * MAX_LEVELS + 2 * n_insts + 2


@K.device(inline=True)
def rx_set_bits(buf, p, hi, ctab):
    """(set mask, byte length) of the character at ``buf[p]`` (``p < hi``)."""
    cp, n = cp_at(buf, p, hi)
    return ctab[CT_CMASK][np.int64(ctab[CT_BLK][cp >> 8]) * 256 + (cp & 255)], n


@K.device(inline=True)
def rx_bits_before(buf, lo, p, hi, ctab):
    """The set mask of the character that ends at ``buf[p]`` (0 at ``lo``)."""
    if p <= lo:
        return np.int64(0)
    j = p - 1
    while j > lo and (buf[j] & 0xC0) == 0x80:
        j -= 1
    return rx_set_bits(buf, j, hi, ctab)[0]


@K.device(inline=True)
def rx_has_bit(mask, k):
    return ((mask >> np.int64(k)) & np.int64(1)) != 0


@K.device(inline=True)
def rx_assert_mask(buf, lo, hi, p, before, after, an, ctab):
    """Bit ``j`` set when the program's assertion ``j`` (row ``j + 1`` of :data:`CT_ASSERTS`) holds at ``p`` of
    the piece ``buf[lo:hi]``; ``before`` / ``after`` are the set masks of the characters before and at ``p`` (0 at
    an edge), ``an`` the byte length of the one at ``p``."""
    asserts = ctab[CT_ASSERTS]
    looks = ctab[CT_LOOKS]
    am = np.int64(0)
    for j in range(asserts[0, 0]):  # (row 0: their number)
        kind = asserts[j + 1, 0]
        b = asserts[j + 1, 1]
        if kind == A_BOT:
            ok = p == lo
        elif kind == A_EOT:
            ok = p == hi
        elif kind == A_EOTNL:
            ok = p == hi or (p == hi - 1 and buf[p] == LF)
        elif kind == A_BOL:
            ok = p == lo or buf[p - 1] == LF
        elif kind == A_EOL:
            ok = p == hi or buf[p] == LF
        elif kind == A_LOOK or kind == A_NLOOK:
            q = p
            ok = True
            for t in range(looks[b, 1]):
                if q >= hi:
                    ok = False
                    break
                if t == 0:
                    m, n = after, an
                else:
                    m, n = rx_set_bits(buf, q, hi, ctab)
                if not rx_has_bit(m, looks[b, 2 + t]):
                    ok = False
                    break
                q += n
            ok = ok if kind == A_LOOK else not ok
        elif kind == A_BEHIND or kind == A_NBEHIND:
            ok = rx_has_bit(before, b) == (kind == A_BEHIND)
        else:  # word boundaries
            ok = (rx_has_bit(before, b) != rx_has_bit(after, b)) == (kind == A_WORD)
        if ok:
            am |= np.int64(1) << np.int64(j)
    return am


@K.device(inline=True)
def rx_add(am, ctab, work, col, row, cnt, pc0, start, stamp):
    """Add the thread ``pc0`` (started at ``start``, relative to the piece) to the list in work rows ``row``,
    ``row + 1`` (``cnt`` entries): its closure over jumps, splits (first branch first) and assertions (``am``:
    which hold at the position, :func:`rx_assert_mask`), each program counter once per ``stamp``. Returns the
    list's new length."""
    insts = ctab[CT_INSTS]
    seen = work[4]
    stack = work[5]
    stack[col] = pc0
    sp = 1
    while sp > 0:
        sp -= 1
        pc = stack[col + sp]
        if seen[col + pc] == stamp:
            continue
        seen[col + pc] = stamp
        op = insts[pc, 0]
        if op == OP_JMP:
            stack[col + sp] = insts[pc, 1]
            sp += 1
        elif op == OP_SPLIT:
            stack[col + sp] = insts[pc, 2]
            stack[col + sp + 1] = insts[pc, 1]
            sp += 2
        elif op == OP_ASSERT:
            if rx_has_bit(am, insts[pc, 1]):
                stack[col + sp] = pc + 1
                sp += 1
        else:
            work[row, col + cnt] = pc
            work[row + 1, col + cnt] = start
            cnt += 1
    return cnt


@K.device
def rx_search(buf, lo, hi, frm, entry, ctab, work, col, stamp):
    """Leftmost-first match of the pattern at ``entry`` in the piece ``buf[lo:hi]``, starting at ``frm`` or
    later: (start, end, stamp) or (-1, -1, stamp). ``work`` columns ``col`` .. ``col + 2 m + 2``: the VM's."""
    insts = ctab[CT_INSTS]
    seen = work[4]
    m = insts.shape[0]
    if stamp > (1 << 30):  # (the stamps of a long gap: reset before they wrap)
        for k in range(m):
            seen[col + k] = 0
        stamp = 0
    ms = -1
    me = -1
    p = frm
    n = 0  # (the first pass only adds the entry thread at frm)
    before = rx_bits_before(buf, lo, p, hi, ctab)  # the set masks of the characters before and at p + n
    after = np.int64(0)
    an = 0
    if p < hi:
        after, an = rx_set_bits(buf, p, hi, ctab)
    cur = 0  # the current list's rows (cur, cur + 1), the next list's (2 - cur, 3 - cur)
    nc = 0
    stamp += 1
    first = True
    while True:
        mask = np.int64(0)
        if not first:
            if nc == 0 and (ms >= 0 or p >= hi):
                break
            if p >= hi:
                for k in range(nc):
                    if insts[work[cur, col + k], 0] == OP_MATCH:
                        ms = work[cur + 1, col + k] + lo
                        me = p
                        break
                break
            mask = after  # (the character at p: each character decoded once)
            n = an
            before = after
            after = np.int64(0)
            an = 0
            if p + n < hi:
                after, an = rx_set_bits(buf, p + n, hi, ctab)
            stamp += 1
        nxt = 2 - cur
        nn = 0
        am = rx_assert_mask(buf, lo, hi, p + n, before, after, an, ctab)
        # each thread of the list steps over the character (in priority order; a MATCH cuts the lower ones), then
        # the entry thread starts at the next position while there is no match: one rx_add site (one inlined
        # closure and assertion evaluator in the kernel, not two)
        for k in range(nc + 1):
            if k < nc:
                pc = work[cur, col + k]
                if insts[pc, 0] == OP_MATCH:
                    ms = work[cur + 1, col + k] + lo
                    me = p
                    break
                if not rx_has_bit(mask, insts[pc, 1]):
                    continue
                tpc = pc + 1
                start = work[cur + 1, col + k]
            elif ms >= 0:
                break
            else:
                tpc = entry
                start = p + n - lo
            nn = rx_add(am, ctab, work, col, nxt, nn, tpc, start, stamp)
        cur = nxt
        nc = nn
        p += n
        first = False
        if nc == 0 and ms >= 0:
            break
    return ms, me, stamp


@K.device(inline=True)
def rx_class(buf, p, hi, ctab):
    """(DFA class, byte length) of the character at ``buf[p]`` (``p < hi``)."""
    cp, n = cp_at(buf, p, hi)
    return ctab[CT_DCLS][np.int64(ctab[CT_BLK][cp >> 8]) * 256 + (cp & 255)], n


@K.device(inline=True)
def rx_dfa(buf, lo, hi, s, row, ctab):
    """The anchored DFA (:mod:`.dfa`) of entry ``row`` at ``s`` of the piece ``buf[lo:hi]`` (``s < hi``): (end of
    the leftmost-first match that starts at ``s`` or -1, whether the first character already left no thread).
    Each character is decoded once, a step reading its class and the next one's."""
    trans = ctab[CT_DTRANS]
    accept = ctab[CT_DACCEPT]
    width = ctab[CT_DSTART].shape[1]
    cb = width - 2  # (the class before s: the piece's start)
    if s > lo and ctab[CT_ASSERTS][0, 0] > 0:  # (without assertions no state depends on it)
        j = s - 1
        while j > lo and (buf[j] & 0xC0) == 0x80:
            j -= 1
        cb = rx_class(buf, j, hi, ctab)[0]
    c, n = rx_class(buf, s, hi, ctab)
    st = ctab[CT_DSTART][row, cb, c]
    p = s
    end = -1
    while True:
        if accept[st] != 0:
            end = p
        q = p + n
        c2 = width - 1
        n2 = 0
        if q < hi:
            c2, n2 = rx_class(buf, q, hi, ctab)
        st = trans[st, c * width + c2]
        if st == 0:
            return end, p == s
        p = q
        if p >= hi:
            if accept[st] != 0:
                end = p
            return end, False
        c = c2
        n = n2


@K.device(inline=True)
def rx_lead(buf, s, hi, k, ctab):
    """The first position from ``s`` (``hi`` if none) whose character may start a match of level ``k``: the
    characters no match starts with skipped one table lookup each (DeepSeek's ``\\p{N}{1,3}`` level over a
    text of letters)."""
    lead = ctab[CT_DLEAD]
    while s < hi:
        c, n = rx_class(buf, s, hi, ctab)
        if lead[k, c] != 0:
            return s
        s += n
    return hi


@K.device(inline=True)
def rx_find(buf, lo, hi, frm, k, ctab, work, col, stamp):
    """:func:`rx_search` of level ``k``'s pattern, by its DFA where there is one: a match at ``frm``, or at the
    first later position whose character does not kill the DFA's threads at once, else the VM from there (the
    positions no match can start at skipped: :func:`rx_lead`)."""
    if ctab[CT_DTRANS].shape[0] > 0:
        s = rx_lead(buf, frm, hi, k, ctab)
        while s < hi:
            e, skip = rx_dfa(buf, lo, hi, s, k, ctab)
            if e >= 0:
                return s, e, stamp
            if not skip:
                break
            s = rx_lead(buf, s + cp_at(buf, s, hi)[1], hi, k, ctab)
        if s >= hi:
            return -1, -1, stamp
        frm = s
    return rx_search(buf, lo, hi, frm, ctab[CT_LEVELS][k, 0], ctab, work, col, stamp)


@K.device(inline=True)
def rx_find_dfa(buf, lo, hi, frm, k, ctab, work, col, stamp):
    """:func:`rx_find` of a program whose DFA is complete (:func:`~.dfa.complete`: a failing anchored attempt
    reads a bounded number of characters), which the encode kernel's variant for it binds instead: the DFA
    tried at each position in turn, in linear time; the kernel then holds no VM (the VM's thread lists took
    the regex variant over the register budget, tests/ptx)."""
    s = rx_lead(buf, frm, hi, k, ctab)
    while s < hi:
        e, skip = rx_dfa(buf, lo, hi, s, k, ctab)
        if e >= 0:
            return s, e, stamp
        s = rx_lead(buf, s + cp_at(buf, s, hi)[1], hi, k, ctab)
    return -1, -1, stamp


@K.device(inline=True)
def rx_get(work, wb, k, f):
    return np.int64(work[f % 6, wb + 2 * k + f // 6])


@K.device(inline=True)
def rx_put(work, wb, k, f, v):
    work[f % 6, wb + 2 * k + f // 6] = v


@K.device(inline=True)
def rx_next_raw(buf, i0, k, ctab, work, wb, stamp):
    """Level ``k``'s next segment of its piece: (got, start, end, is a match (``invert`` applied), stamp);
    positions relative to ``i0``. The matches alternate with the text between them."""
    cur = rx_get(work, wb, k, F_CUR)
    hi = rx_get(work, wb, k, F_HI)
    if cur >= hi:
        return False, 0, 0, False, stamp
    ms = rx_get(work, wb, k, F_MS)
    if ms < cur:
        lo = rx_get(work, wb, k, F_LO)
        a, b, stamp = rx_find(buf, i0 + lo, i0 + hi, i0 + cur, k, ctab, work, wb + 2 * MAX_LEVELS, stamp)
        ms, me = (a - i0, b - i0) if a >= 0 else (hi, hi)
        rx_put(work, wb, k, F_MS, ms)
        rx_put(work, wb, k, F_ME, me)
    inv = ctab[CT_LEVELS][k, 2] != 0
    if cur < ms:
        rx_put(work, wb, k, F_CUR, ms)
        return True, cur, ms, inv, stamp
    me = rx_get(work, wb, k, F_ME)
    rx_put(work, wb, k, F_CUR, me)
    rx_put(work, wb, k, F_MS, -1)
    return True, cur, me, not inv, stamp


@K.device(inline=True)
def rx_next_piece(buf, i0, k, ctab, work, wb, stamp):
    """Level ``k``'s next piece (HF's ``Split`` behaviours, folded lazily): (got, start, end, stamp)."""
    how = ctab[CT_LEVELS][k, 1]
    while True:
        got, a, b, m, stamp = rx_next_raw(buf, i0, k, ctab, work, wb, stamp)
        has = rx_get(work, wb, k, F_HAS) != 0
        if not got:
            if has:
                rx_put(work, wb, k, F_HAS, 0)
                return True, rx_get(work, wb, k, F_PA), rx_get(work, wb, k, F_PB), stamp
            return False, 0, 0, stamp
        if how == 0:  # Removed
            if not m:
                return True, a, b, stamp
            continue
        if how == 1:  # Isolated
            return True, a, b, stamp
        prev = rx_get(work, wb, k, F_PREVM) != 0
        if how == 2 and has and m and not prev:  # MergedWithPrevious: a match joins the text before it
            rx_put(work, wb, k, F_PB, b)
            rx_put(work, wb, k, F_PREVM, 1)
            continue
        if how == 3 and has and rx_get(work, wb, k, F_PM) != 0 and not m:  # MergedWithNext: a match joins the next
            rx_put(work, wb, k, F_HAS, 0)
            return True, rx_get(work, wb, k, F_PA), b, stamp
        if how == 4 and has and m == prev:  # Contiguous: adjacent matches join
            rx_put(work, wb, k, F_PB, b)
            continue
        pa = rx_get(work, wb, k, F_PA)
        pb = rx_get(work, wb, k, F_PB)
        rx_put(work, wb, k, F_PA, a)
        rx_put(work, wb, k, F_PB, b)
        rx_put(work, wb, k, F_PM, 1 if m else 0)
        rx_put(work, wb, k, F_PREVM, 1 if m else 0)
        rx_put(work, wb, k, F_HAS, 1)
        if has:
            return True, pa, pb, stamp


@K.device(inline=True)
def rx_start_level(work, wb, k, lo, hi):
    for f in range(10):
        rx_put(work, wb, k, f, 0)
    rx_put(work, wb, k, F_LO, lo)
    rx_put(work, wb, k, F_HI, hi)
    rx_put(work, wb, k, F_CUR, lo)
    rx_put(work, wb, k, F_MS, -1)


@K.device(inline=True)
def rx_begin(work, wb, ctab, n):
    """Reset the regex state in ``work`` columns from ``wb`` for a gap of ``n`` bytes: (level, stamp)."""
    col = wb + 2 * MAX_LEVELS
    seen = work[4]
    for q in range(ctab[CT_INSTS].shape[0]):
        seen[col + q] = 0
    rx_start_level(work, wb, 0, 0, n)
    return 0, 0


@K.device(inline=True)
def rx_next_final(buf, i, ctab, work, wb, k, stamp):
    """The next piece of the last Split level, the levels walked depth-first from level ``k``: (got, start, end
    relative to ``i``, level, stamp)."""
    last = ctab[CT_LEVELS].shape[0] - 1
    while k >= 0:
        got, a, b, stamp = rx_next_piece(buf, i, k, ctab, work, wb, stamp)
        if not got:
            k -= 1
        elif k == last:
            return True, a, b, k, stamp
        else:
            k += 1
            rx_start_level(work, wb, k, a, b)
    return False, 0, 0, k, stamp


@K.device
def encode_gap_regex(buf, i, s, voc, ctab, cfg, scr, wb, o, cap, row):
    """:func:`~triton_textops.ops.bpe.encode.encode_gap` of a regex pre-tokenizer: the Split levels of ``ctab``
    over ``buf[i:s]``, each final piece merged into ``ids[o:]``; the new ``o`` or -1 when the ids region is full."""
    work = scr[S_WORK]
    ids = scr[S_IDS]
    base = wb + vm_columns(ctab[CT_INSTS].shape[0])  # the merge's own columns
    k, stamp = rx_begin(work, wb, ctab, s - i)
    while True:
        got, a, b, k, stamp = rx_next_final(buf, i, ctab, work, wb, k, stamp)
        if not got:
            return o
        if o + (b - a) > cap:
            return -1
        o = encode_piece(buf, i + a, i + b, voc, work, base, ids, o, scr[S_CACHE], row)


@K.device
def rx_pieces_item(t, data, offsets, ctab, work, out, cnt):
    """Pre-tokenize text ``t`` (valid UTF-8, checked by the caller): its pieces' (start, end) into
    ``out[:, offsets[t]:]`` (at most one per byte), their number into ``cnt[t]``. Work columns: ``t``'s
    :func:`vm_columns`."""
    lo = offsets[t]
    hi = offsets[t + 1]
    wb = t * vm_columns(ctab[CT_INSTS].shape[0])
    k, stamp = rx_begin(work, wb, ctab, hi - lo)
    c = 0
    while True:
        got, a, b, k, stamp = rx_next_final(data, lo, ctab, work, wb, k, stamp)
        if not got or lo + c >= hi:
            break
        out[0, lo + c] = lo + a
        out[1, lo + c] = lo + b
        c += 1
    cnt[t] = c


PIECES = K.kernel(rx_pieces_item)
