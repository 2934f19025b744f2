"""Ids -> text as HF's ``Tokenizer.decode`` of a WordPiece tokenizer: two kernels (byte counts, then the bytes).

HF decodes ids to their tokens (an added token's content first, else the vocabulary's; with
``skip_special_tokens`` the special added tokens are dropped), then runs the decoder over the token list: HF's
``WordPiece`` decoder strips the continuation prefix from every token but the first that starts with it and
puts a space before the others, then, with ``cleanup``, replaces `` .``, `` ?``, `` !``, `` ,``, `` ' ``,
`` n't``, `` 'm``, `` do not``, `` 's``, `` 've``, `` 're`` in each token (:func:`cleanup`); without a decoder
the tokens are joined by spaces. Each token's output depends only on the token and on whether it is the first
one kept, so every id has two precomputed forms (:func:`decode_forms`): the kernels pick the first form for a
text's first kept token and the other form after it.
"""

from __future__ import annotations

import numpy as np

from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.decode import BAD_SPAN

D_POOL, D_FIRST, D_REST, D_FLAGS = range(4)  # the decode tuple: bytes, first-form and later-form offsets, flags
T_KNOWN, T_SPECIAL = 1, 2  # an id's flags: it has a token; that token is a special added token


def cleanup(text: str) -> str:
    """HF's WordPiece decoder cleanup of one token (``tokenizers::decoders::wordpiece::cleanup``)."""
    return (text.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",")
            .replace(" ' ", "'").replace(" n't", "n't").replace(" 'm", "'m").replace(" do not", " don't")
            .replace(" 's", "'s").replace(" 've", "'ve").replace(" 're", "'re"))


def decode_forms(tokens: list[str | None], special: set[str], decoder: tuple[str, bool] | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The decode tuple of ids ``0 .. len(tokens) - 1`` (``tokens[i]``: id i's token, None for an id without one):
    (UTF-8 bytes of every id's first form then of every id's later form, their offsets (n+1 each), flags).
    ``decoder``: (prefix, cleanup) of HF's WordPiece decoder, None for none (tokens joined by spaces)."""
    first: list[bytes] = []
    rest: list[bytes] = []
    flags = np.zeros(max(len(tokens), 1), dtype=np.uint8)
    for i, tok in enumerate(tokens):
        if tok is None:
            first.append(b"")
            rest.append(b"")
            continue
        flags[i] = T_KNOWN | (T_SPECIAL if tok in special else 0)
        if decoder is None:
            a, b = tok, " " + tok
        else:
            prefix, clean = decoder
            a, b = tok, tok[len(prefix):] if tok.startswith(prefix) else " " + tok
            if clean:
                a, b = cleanup(a), cleanup(b)
        first.append(a.encode("utf-8"))
        rest.append(b.encode("utf-8"))
    f_off = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in first], out=f_off[1:])
    r_off = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in rest], out=r_off[1:])
    r_off += f_off[-1]
    pool = np.frombuffer(b"".join(first) + b"".join(rest) or b"\0", dtype=np.uint8).copy()
    return pool, f_off, r_off, flags


@K.device
def wp_decode_count(t, ids, offsets, dec, skip, counts):
    """Bytes of text ``t``'s decode into ``counts[t]``; -1 - k when its k-th id has no token (or its span is bad:
    -1 - BAD_SPAN)."""
    a = offsets[t]
    b = offsets[t + 1]
    if a < 0 or b < a or b > ids.shape[0]:
        counts[t] = -1 - BAD_SPAN
        return
    f_off = dec[D_FIRST]
    r_off = dec[D_REST]
    flags = dec[D_FLAGS]
    n_ids = f_off.shape[0] - 1
    total = 0
    first = True
    for k in range(a, b):
        i = ids[k]
        if i < 0 or i >= n_ids or (flags[i] & T_KNOWN) == 0:
            counts[t] = -1 - (k - a)
            return
        if skip and (flags[i] & T_SPECIAL) != 0:
            continue
        total += (f_off[i + 1] - f_off[i]) if first else (r_off[i + 1] - r_off[i])
        first = False
    counts[t] = total


@K.device
def wp_decode_write(t, ids, offsets, dec, skip, out_off, out):
    """Text ``t``'s bytes into ``out[out_off[t]:out_off[t+1]]`` (counted and checked by :func:`wp_decode_count`)."""
    pool = dec[D_POOL]
    f_off = dec[D_FIRST]
    r_off = dec[D_REST]
    flags = dec[D_FLAGS]
    o = out_off[t]
    hi = out_off[t + 1]
    a = offsets[t]
    b = offsets[t + 1]
    if a < 0 or b < a or b > ids.shape[0] or o < 0 or hi > out.shape[0]:  # (checked by the count: never here)
        return
    n_ids = f_off.shape[0] - 1
    first = True
    for k in range(a, b):
        i = ids[k]
        if i < 0 or i >= n_ids or (skip and (flags[i] & T_SPECIAL) != 0):
            continue
        lo_b = f_off[i] if first else r_off[i]
        hi_b = f_off[i + 1] if first else r_off[i + 1]
        first = False
        for j in range(lo_b, hi_b):
            if o < hi:
                out[o] = pool[j]
            o += 1


DECODE_COUNT = K.kernel(wp_decode_count)
DECODE_WRITE = K.kernel(wp_decode_write)
