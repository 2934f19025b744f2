"""Why a text has no tokens: ONE table of status codes for every tokenizer family, their messages, and ONE raiser.

A kernel marks a bad text with one of these codes (in a status row, or as ``-1 - code`` in a count row) instead of
raising: the other texts of the batch go on, and the host raises one :class:`InputError` naming the first bad row
and listing every bad one (``InputError.rows``), so a served model fails only those requests.
"""

from __future__ import annotations

import numpy as np

from triton_textops.errors import InputError

OK, BAD_UTF8, SIZE_BOUND, BAD_SPAN, BAD_PRETOKENS, TOO_LONG, DISALLOWED, NORMALIZED_TOO_LONG = range(8)
MAX_NORMALIZED_POS = 0xFFFFFFFF  # WordPiece: a text's normalized bytes are addressed by unsigned 32-bit positions
MAX_TEXT_BYTES = (1 << 31) - 1 - 64  # BPE: scratch indices are int32 within a text's region

MESSAGES = {
    BAD_UTF8: "text is not valid UTF-8",
    SIZE_BOUND: "internal size bound exceeded",
    BAD_SPAN: "its offsets are not a non-decreasing span inside the byte buffer",
    BAD_PRETOKENS: "its pre-tokens are not consistent (a span or token outside the text's region)",
    TOO_LONG: f"text too long: a text may have at most {MAX_TEXT_BYTES} bytes (2 GiB - 65)",
    DISALLOWED: "the text contains a disallowed special token (pass it in allowed_special, or leave "
                "disallowed_special empty to encode it as text)",
    NORMALIZED_TOO_LONG: f"text too long: it would normalize to more than the {MAX_NORMALIZED_POS} bytes a text's "
                         "32-bit token positions address (about 1.4 GB of input)",
}


def message(code: int) -> str:
    """What status ``code`` means, in a client's words."""
    return MESSAGES.get(code, f"unknown status {code}")


def raise_bad_rows(status: np.ndarray) -> None:
    """Raise :class:`InputError` for the rows whose status (host array, one per text) is not OK: the message names
    the first, ``rows`` lists all."""
    if not np.count_nonzero(status):  # (a quarter of the time of status.any() for a batch of one)
        return
    bad = status.nonzero()[0]
    r = int(bad[0])
    raise InputError(f"row {r}: {message(int(status[r]))}", rows=bad.astype(np.int64))


def raise_bad_counts(counts: np.ndarray) -> None:
    """:func:`raise_bad_rows` for a count row: a text's count, or ``-1 - status`` when it failed."""
    if counts.shape[0] == 1 and counts[0] >= 0:  # (the one-text call: no array operation)
        return
    if counts.shape[0] and counts.min() < 0:
        raise_bad_rows(np.where(counts < 0, -1 - counts, 0))
