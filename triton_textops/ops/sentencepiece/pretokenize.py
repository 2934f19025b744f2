"""SentencePiece pre-tokenization in the kernels, as HF's pre-tokenizers of SentencePiece conversions: a split
(``WhitespaceSplit``, or ``Split`` on a string with any of HF's delimiter behaviours) then ``Metaspace`` on each
piece (spaces to the replacement, the prepend scheme, its own split at the replacement, merged with the next).

The pre-tokenizer tuple: (ints, pool): ints :data:`P_SPLIT` ... and the pattern / replacement bytes in pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.utf8 import utf8_at
from triton_textops.ops.sentencepiece.normalize import sp_is_space

SPLIT_NONE, SPLIT_WS, SPLIT_STR = range(3)
B_REMOVED, B_ISOLATED, B_PREV, B_NEXT, B_CONTIGUOUS = range(5)
BEHAVIORS = {"Removed": B_REMOVED, "Isolated": B_ISOLATED, "MergedWithPrevious": B_PREV, "MergedWithNext": B_NEXT,
             "Contiguous": B_CONTIGUOUS}
ALWAYS, FIRST, NEVER = range(3)
P_SPLIT, P_PAT0, P_PATN, P_BEHAVIOR, P_META, P_REP0, P_REPN, P_SCHEME, P_MSPLIT, P_WORDS = range(10)
# P_WORDS: the model stage may cut its pieces before each U+2581 that follows another character (set by the
# tokenizer where no merge can join across such a cut: :func:`sp_word_end`)


@dataclass
class Program:
    """A pre-tokenizer: a split (kind, pattern, behaviour) and Metaspace (replacement, scheme, split) or none."""

    split: int = SPLIT_NONE
    pattern: bytes = b""
    behavior: int = B_REMOVED
    meta: bool = False
    replacement: bytes = "\u2581".encode()
    scheme: int = ALWAYS
    meta_split: bool = True

    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        ints = [self.split, 0, len(self.pattern), self.behavior, int(self.meta), len(self.pattern),
                len(self.replacement), self.scheme, int(self.meta_split), 0]
        return np.array(ints, dtype=np.int64), np.frombuffer(self.pattern + self.replacement + b"\0",
                                                             dtype=np.uint8).copy()

    def growth(self) -> tuple[int, int]:
        """(a, b): a piece of n bytes becomes at most a * n + b bytes (Metaspace: a space, 1 byte, becomes the
        replacement, plus one replacement prepended)."""
        if not self.meta:
            return 1, 0
        return max(1, len(self.replacement)), len(self.replacement)


def from_json(pre: Any, refuse: Any) -> Program:
    """HF's ``pre_tokenizer`` of a SentencePiece conversion as a :class:`Program`."""
    prog = Program()
    if pre is None:
        return prog
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
    for i, st in enumerate(steps):
        kind = st.get("type")
        if prog.meta or (kind in ("WhitespaceSplit", "Split") and prog.split != SPLIT_NONE):
            refuse(f"pre_tokenizer[{i}]", st, "is not supported after a split or Metaspace (one split, then "
                   "Metaspace)")
        if kind == "WhitespaceSplit":
            prog.split = SPLIT_WS
        elif kind == "Split":
            pat = st.get("pattern") or {}
            if list(pat) != ["String"] or not pat["String"] or st.get("invert", False) \
                    or st.get("behavior") not in BEHAVIORS:
                refuse(f"pre_tokenizer[{i}]", st, "is not supported (Split on a string, not inverted)")
            prog.split, prog.pattern, prog.behavior = SPLIT_STR, pat["String"].encode(), BEHAVIORS[st["behavior"]]
        elif kind == "Metaspace":
            rep = st.get("replacement", "\u2581")
            if not isinstance(rep, str) or len(rep) != 1:
                refuse(f"pre_tokenizer[{i}].replacement", rep, "is not one character")
            scheme = st.get("prepend_scheme")
            if scheme is None:  # (older files)
                scheme = "always" if st.get("add_prefix_space", True) else "never"
            if scheme not in ("always", "first", "never"):
                refuse(f"pre_tokenizer[{i}].prepend_scheme", scheme, "is not always, first or never")
            prog.meta, prog.replacement = True, rep.encode()
            prog.scheme = {"always": ALWAYS, "first": FIRST, "never": NEVER}[scheme]
            prog.meta_split = bool(st.get("split", True))
        else:
            refuse(f"pre_tokenizer[{i}]", st, "is not supported (Metaspace, WhitespaceSplit, Split on a string)")
    return prog


@K.device(inline=True)
def sp_match(buf, i, end, pool, p0, pn):
    """Whether ``pool[p0:p0 + pn]`` occurs at ``buf[i:end]``."""
    if i + pn > end:
        return False
    for k in range(pn):
        if buf[i + k] != pool[p0 + k]:
            return False
    return True


@K.device(inline=True)
def sp_find(buf, i, end, pool, p0, pn):
    """Start of the next occurrence of the pattern in ``buf[i:end]``, or ``end``."""
    while i < end:
        if sp_match(buf, i, end, pool, p0, pn):
            return i
        i += 1
    return end


@K.device
def split_next(buf, i, end, pool, p0, pn, behavior):
    """The next piece of ``buf[i:end]`` split at the pattern with HF's delimiter ``behavior``: (start, end, where
    the next search starts); an empty piece (start == end) when only removed delimiters were left."""
    if sp_match(buf, i, end, pool, p0, pn):
        e = i + pn
        if behavior == B_REMOVED:
            while sp_match(buf, e, end, pool, p0, pn):
                e += pn
            return e, e, e
        if behavior == B_CONTIGUOUS:
            while sp_match(buf, e, end, pool, p0, pn):
                e += pn
            return i, e, e
        if behavior == B_NEXT and e < end and not sp_match(buf, e, end, pool, p0, pn):
            j = sp_find(buf, e, end, pool, p0, pn)
            return i, j, j
        return i, e, e  # isolated, or a delimiter after a delimiter
    j = sp_find(buf, i, end, pool, p0, pn)
    if behavior == B_PREV and j < end:
        return i, j + pn, j + pn
    return i, j, j


@K.device
def ws_next(buf, i, end):
    """WhitespaceSplit's next piece of ``buf[i:end]``: (start, end, next); empty when only whitespace was left."""
    while i < end:
        cp, n = utf8_at(buf, i, end)
        if not sp_is_space(cp):
            break
        i += n
    j = i
    while j < end:
        cp, n = utf8_at(buf, j, end)
        if sp_is_space(cp):
            break
        j += n
    return i, j, j


@K.device
def piece_next(buf, i, end, ptab):
    """The split stage's next piece of ``buf[i:end]`` (the whole rest without a split)."""
    ints, pool = ptab
    kind = ints[P_SPLIT]
    if kind == SPLIT_WS:
        return ws_next(buf, i, end)
    if kind == SPLIT_STR:
        return split_next(buf, i, end, pool, ints[P_PAT0], ints[P_PATN], ints[P_BEHAVIOR])
    return i, end, end


@K.device
def metaspace_write(buf, s, e, out, o, cap, ptab, first):
    """Metaspace of piece ``buf[s:e]`` into ``out[o:cap]``: spaces to the replacement, the replacement prepended
    (always; or ``first``: the text's first piece) unless the piece starts with it (or a space, which becomes it). The end, -1 when full."""
    ints, pool = ptab
    r0 = ints[P_REP0]
    rn = ints[P_REPN]
    scheme = ints[P_SCHEME]
    if (scheme == ALWAYS or (scheme == FIRST and first)) and buf[s] != 32 and not sp_match(buf, s, e, pool, r0, rn):
        if o + rn > cap:
            return -1
        for k in range(rn):
            out[o + k] = pool[r0 + k]
        o += rn
    for q in range(s, e):
        if buf[q] == 32:
            if o + rn > cap:
                return -1
            for k in range(rn):
                out[o + k] = pool[r0 + k]
            o += rn
        else:
            if o >= cap:
                return -1
            out[o] = buf[q]
            o += 1
    return o


@K.device(inline=True)
def sp_word_end(buf, i, end):
    """The end of the word at ``buf[i:end]``: the first U+2581 after ``i`` that follows another character (its
    three bytes E2 96 81; a run of them stays one word, with what follows), else ``end``."""
    j = i + 1
    while j + 2 < end:
        if buf[j] == 0xE2 and buf[j + 1] == 0x96 and buf[j + 2] == 0x81 and not (
                j >= i + 3 and buf[j - 3] == 0xE2 and buf[j - 2] == 0x96 and buf[j - 1] == 0x81):
            return j
        j += 1
    return end
