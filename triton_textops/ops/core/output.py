"""What every tokenizer returns: :class:`Ragged` ids (``encode``) and fixed-length :class:`Rows` (``encode_rows``),
arrays on the tokenizer's device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


def _host(a: Any) -> np.ndarray:
    return a if isinstance(a, np.ndarray) else a.get()


@dataclass
class Ragged:
    """Token ids of ``n`` texts: ``ids`` (flat int64) and ``offsets`` (int64, n+1): text ``i``'s ids are
    ``ids[offsets[i]:offsets[i+1]]``."""

    ids: Any
    offsets: Any

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

    def tolist(self) -> list[list[int]]:
        """Each text's ids as a list (on the host)."""
        ids, off = _host(self.ids), _host(self.offsets)
        return [ids[off[i]:off[i + 1]].tolist() for i in range(len(off) - 1)]


class Rows:
    """Fixed-length rows, HF's names: ``input_ids``, ``attention_mask``, ``token_type_ids`` (rows, max_length) and
    ``overflow_to_sample_mapping`` (rows,), the text each row came from. A family whose rows are all of type 0 and
    one per text (no overflow windows) leaves the last two to be made on first use (zeros / 0..n-1)."""

    __slots__ = ("input_ids", "attention_mask", "_types", "_mapping")

    def __init__(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None,
                 overflow_to_sample_mapping: Any = None) -> None:
        self.input_ids = input_ids
        self.attention_mask = attention_mask
        self._types = token_type_ids
        self._mapping = overflow_to_sample_mapping

    @property
    def token_type_ids(self) -> Any:
        if self._types is None:
            self._types = _xp(self.input_ids).zeros_like(self.input_ids)
        return self._types

    @property
    def overflow_to_sample_mapping(self) -> Any:
        if self._mapping is None:
            self._mapping = _xp(self.input_ids).arange(self.input_ids.shape[0], dtype=self.input_ids.dtype)
        return self._mapping

    def __getitem__(self, key: str) -> Any:
        if key not in ("input_ids", "attention_mask", "token_type_ids", "overflow_to_sample_mapping"):
            raise KeyError(key)
        return getattr(self, key)

    def __repr__(self) -> str:
        return f"Rows(input_ids={self.input_ids!r}, attention_mask={self.attention_mask!r})"


Encoding = Rows  # the name WordPiece's rows had


def _xp(a: Any) -> Any:
    from triton_textops.ops.core.xp import array_module  # noqa: PLC0415

    return array_module(a)
