"""A regex engine for pre-tokenization that runs in the kernels: parse (:mod:`.parse`), compile to a Pike VM program
over the measured Unicode tables (:mod:`.compile`), match on the CPU and the GPU from one source (:mod:`.match`).

:class:`RegexSplitter` is a pre-tokenizer chain of ``Split`` levels (HF's ``Split(Regex, behavior, invert)``,
a ``Sequence`` of them, ByteLevel's own regex, a rank file's pattern), compiled once at load.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_textops.errors import ConfigError
from triton_textops.ops.bpe.regex.compile import BEHAVIOURS, Program, compile_patterns
from triton_textops.ops.bpe.regex.dfa import Dfa, build_dfa
from triton_textops.ops.bpe.regex.match import MAX_LEVELS, PIECES, vm_columns
from triton_textops.ops.core import kernels as K

# HF ByteLevel's regex (use_regex: true): GPT-2's pattern, on Oniguruma
BYTE_LEVEL_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

Level = tuple[str, str, bool]  # (pattern, behaviour, invert)


class RegexSplitter:
    """The Split levels ``levels`` (pattern, HF behaviour name, invert), read as ``flavor`` (``onig``: HF
    tokenizers; ``fancy``: tiktoken), compiled for the kernels; a ConfigError naming what is not supported."""

    def __init__(self, levels: list[Level], flavor: str) -> None:
        if not 1 <= len(levels) <= MAX_LEVELS:
            raise ConfigError(f"a pre-tokenizer of {len(levels)} Split levels (1 to {MAX_LEVELS} supported)")
        for pattern, behaviour, _ in levels:
            if behaviour not in BEHAVIOURS:
                raise ConfigError(f"regex {pattern!r}: the Split behavior {behaviour!r} is not one of "
                                  f"{', '.join(BEHAVIOURS)}")
        self.levels = list(levels)
        self.flavor = flavor
        self.program: Program = compile_patterns([p for p, _, _ in levels], flavor)
        self.level_table = np.array([[e, BEHAVIOURS[b], int(bool(inv))]
                                     for e, (_, b, inv) in zip(self.program.entries, levels)], dtype=np.int32)
        self.dfa: Dfa = build_dfa(self.program)
        self.dfa_only = self.dfa.complete  # (the encode kernel's variant without the VM)
        self.columns = vm_columns(self.program.insts.shape[0])

    def tables(self) -> tuple[np.ndarray, ...]:
        """The arrays the kernels read after the scanners' class tables (:data:`~.match.CT_INSTS` ...)."""
        p, d = self.program, self.dfa
        return p.insts, p.looks, p.blk, p.cmask, self.level_table, p.asserts, d.trans, d.accept, d.start, d.ccls, d.lead

    def piece_arrays(self, texts: list[str] | list[bytes], target: str = "cpu", xp: Any = np) -> tuple[np.ndarray, ...]:
        """(starts, ends, per-text counts) of the texts' pieces, byte offsets within each text, int64 host arrays
        (the pieces of text t: ``counts[:t].sum()`` on), on ``target``."""
        from triton_textops.ops.bpe.pretok import class_tables  # noqa: PLC0415 (pretok imports the BPE formats)

        raw = [t.encode() if isinstance(t, str) else bytes(t) for t in texts]
        for b in raw:
            b.decode("utf-8")  # (the kernel takes valid UTF-8: a UnicodeDecodeError names the text)
        data = np.frombuffer(b"".join(raw) or b"\0", dtype=np.uint8).copy()
        offsets = np.zeros(len(raw) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in raw], out=offsets[1:])
        n = len(raw)
        ctab = class_tables(target, xp) + tuple(K.to_device(a, target, xp) for a in self.tables())
        work = xp.zeros((6, max(n, 1) * self.columns), dtype=np.int32)
        out = xp.zeros((2, max(int(offsets[-1]), 1)), dtype=np.int64)
        cnt = xp.zeros(max(n, 1), dtype=np.int64)
        d_data, d_off = (K.to_device(a, target, xp) for a in (data, offsets))
        if n:
            K.launch(target, PIECES, n, d_data, d_off, ctab, work, out, cnt)
        out, cnt = K.to_host(out, target), K.to_host(cnt, target)[:n]
        rows = np.concatenate([np.arange(offsets[t], offsets[t] + cnt[t]) for t in range(n)] or [np.zeros(0, int)])
        base = np.repeat(offsets[:-1], cnt)
        return out[0, rows] - base, out[1, rows] - base, cnt

    def pre_tokenize(self, texts: list[str] | list[bytes], target: str = "cpu", xp: Any = np) -> list[list[tuple[int, int]]]:
        """Each text's pieces as (start, end) byte offsets, on ``target`` (tests; the encoders call the matcher
        from their own kernels)."""
        starts, ends, cnt = self.piece_arrays(texts, target, xp)
        at = np.concatenate([[0], np.cumsum(cnt)])
        pairs = list(zip(starts.tolist(), ends.tolist()))
        return [pairs[at[t]:at[t + 1]] for t in range(len(cnt))]
