"""Ids -> text, the host side every family shares: checking the arguments, the two launches of a family's decode
kernels (its byte counts, then its bytes) and what becomes of the bytes (``errors``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.args import check_bool

BAD_SPAN = 1 << 40  # a count of -1 - BAD_SPAN: the text's offsets are not a span of the ids (else -1 - k: token k)


def decode_batch(tok: Any, kernels: tuple, table: tuple, ids: Any, offsets: Any, skip_special_tokens: bool,
                 errors: str | None, vocabulary: str) -> list[str] | list[bytes]:
    """Each text of ``ids`` (flat, ``offsets`` n+1, host or device) decoded by ``kernels`` (count, write: each
    ``(t, ids, offsets, table, skip, ...)``) on ``tok``'s device. ``errors``: "strict" (an :class:`InputError`
    naming the row whose bytes are not UTF-8), "replace" (U+FFFD), or None (each text's bytes). An id the kernels
    refuse is an InputError naming the row, the position in it and the id ("row 0 position 2: id 1000000 is not an id
    of this vocabulary (size 50257)"); ``vocabulary`` says what an id must be."""
    skip = check_bool("skip_special_tokens", skip_special_tokens)
    if errors not in (None, "replace", "strict"):
        raise InputError(f"errors must be None, 'replace' or 'strict', got {errors!r}")
    xp, t = tok.xp, tok.target
    ids = xp.ascontiguousarray(xp.asarray(ids).reshape(-1), dtype=np.int64)
    offsets = xp.ascontiguousarray(xp.asarray(offsets).reshape(-1), dtype=np.int64)
    if offsets.shape[0] < 1:
        raise InputError("offsets must have n+1 entries")
    if t != "cpu" and K.SIMULATOR:  # (the simulator's kernels take writable host arrays of their own)
        ids, offsets = ids.copy(), offsets.copy()
    n = int(offsets.shape[0]) - 1
    counts = xp.zeros(n, dtype=np.int64)
    if n:
        K.launch(t, kernels[0], n, ids, offsets, table, skip, counts)
    host = K.to_host(counts, t)
    bad = np.flatnonzero(host < 0)
    if bad.size:
        r = int(bad[0])
        k = int(-1 - host[r])
        if k == BAD_SPAN:
            msg = f"row {r}: its offsets are not a span inside ids"
        else:
            bad_id = int(K.to_host(ids[int(K.to_host(offsets[r:r + 1], t)[0]) + k:][:1], t)[0])
            msg = f"row {r} position {k}: id {bad_id} is not an id of this vocabulary ({vocabulary})"
        raise InputError(msg, rows=bad.astype(np.int64))
    out_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(host, out=out_off[1:])
    out = xp.empty(int(out_off[-1]), dtype=np.uint8)
    if n:
        K.launch(t, kernels[1], n, ids, offsets, table, skip, K.to_device(out_off, t, xp), out)
    raw = K.to_host(out, t).tobytes()
    texts = [raw[out_off[i]:out_off[i + 1]] for i in range(n)]
    if errors != "strict":
        return texts if errors is None else [b.decode("utf-8", errors) for b in texts]
    strs = []
    for r, b in enumerate(texts):
        try:
            strs.append(b.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise InputError(f"row {r}: its tokens' bytes are not UTF-8 at byte {e.start} (decode with "
                             "errors='replace' for U+FFFD, or errors=None for the bytes)",
                             rows=np.array([r], dtype=np.int64)) from None
    return strs
