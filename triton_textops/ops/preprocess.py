"""The preprocess step of the readability pipeline as ONE kernel: BERT rows and tree features per text.

A thread takes a text through normalization and pre-tokenization (:func:`~triton_textops.ops.wordpiece.pretokenize.pretok_text`), WordPiece and
packing (:func:`~triton_textops.ops.wordpiece.postprocess.encode_text`) and the features
(:func:`~triton_textops.ops.features.features_text`): the text is read once, the tokens stay in the
thread's cache, and a batch costs one launch and one device-to-host copy (the rows' UTF-8 status).
Overflow windows change the number of rows, so they take the staged path instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_textops.errors import InputError
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.args import check_bool
from triton_textops.ops.core.batch import TextBatch
from triton_textops.ops.core.output import Rows
from triton_textops.ops.core.status import raise_bad_rows
from triton_textops.ops.features import ReadabilityFeatures, features_text
from triton_textops.ops.wordpiece.postprocess import encode_text
from triton_textops.ops.wordpiece.pretokenize import FULL, STATUS, pretok_text
from triton_textops.ops.wordpiece.tokenizer import BertTokenizer


@K.device(inline="ir")
def preprocess_item(t, text, norm, pre, voc, out, content, specials, ftab, fout):
    """Normalization + pre-tokenization, WordPiece rows and the features of text ``t`` by one thread (the groups of
    :mod:`~triton_textops.ops.wordpiece.postprocess` and :meth:`ReadabilityFeatures.kernel_args`)."""
    data, offs = text
    info, npool, sp_first, sp_bytes, sp_off, n_sp = norm
    nbuf, expand, _, tok, txt = pre
    vocab, slots, pool = voc
    rows, mapping = out
    fslots, fpool, fmask, fprobe, is_stop, col, abbr, abbr_off, n_abbr = ftab
    seen, cnt, x, mean, std, normalize = fout
    pretok_text(t, data, offs, info, npool, sp_first, sp_bytes, sp_off, n_sp, nbuf, expand, tok, txt, FULL)
    encode_text(t, nbuf, expand, offs, tok, txt, vocab, slots, pool, rows, mapping, t, 1, content, content, specials)
    features_text(t, nbuf, expand, offs, tok, txt, fslots, fpool, fmask, fprobe, is_stop, col, abbr, abbr_off, n_abbr,
                  seen, cnt, x, mean, std, normalize)


PREPROCESS = K.kernel(preprocess_item)


def preprocess(tok: BertTokenizer, feats: ReadabilityFeatures, texts: Any, *, max_length: int = 128,
               normalize: bool = True, dtype: str = "int64", stride: int = 0, return_overflowing_tokens: bool = False,
               gpu_min_batch: int | None = None) -> tuple[Rows, Any]:
    """BERT rows (``[CLS] … [SEP]``, truncated to ``max_length``, padded) and the features of every text,
    in one launch on the tokenizer's device. Invalid UTF-8 raises :class:`InputError` naming the row. With
    overflow windows (rows no longer match texts) normalization and pre-tokenization run once and feed both, staged. On a GPU, a
    batch of fewer than ``gpu_min_batch`` texts runs on the CPU kernels and the ids, mask and features go
    up as one copy (:data:`~triton_textops.ops.core.kernels.GPU_MIN_BATCH`)."""
    if not isinstance(tok, BertTokenizer) or not isinstance(feats, ReadabilityFeatures):
        raise InputError("preprocess takes a BertTokenizer and a ReadabilityFeatures")
    if feats.lowercase != tok.lowercase:
        raise ValueError("the features artifact and the tokenizer use different casing (lowercase)")
    lay = tok.rows_layout(max_length, stride, return_overflowing_tokens, True, dtype)
    normalize = check_bool("normalize", normalize)
    if tok.runs_on_cpu(texts, gpu_min_batch):
        enc, x = preprocess(tok.on_cpu(), feats, texts, max_length=max_length, normalize=normalize, dtype=dtype,
                            stride=stride, return_overflowing_tokens=return_overflowing_tokens)
        *rows, x = K.to_device_many([enc.input_ids, enc.attention_mask, enc.token_type_ids,
                                     enc.overflow_to_sample_mapping, x], tok.target, tok.xp)
        return Rows(*rows), x
    if lay.overflow:
        pre = tok.pretokenize(texts)
        enc = tok.encode_pretokens(pre, max_length=max_length, stride=stride, return_overflowing_tokens=True,
                                   dtype=dtype)
        return enc, feats.transform_pretokens(pre, normalize=normalize, check=False)
    batch = TextBatch.from_texts(texts, tok.xp, tok.target)
    norm, xp = tok.normalizer, tok.xp
    n, nb = batch.n, int(batch.data.shape[0])
    rows, mapping = tok.new_rows(n, lay.max_length, lay.dtype)
    x = xp.empty((n, feats.n_features), dtype=np.float32)
    txt = xp.empty((3, n), dtype=np.int64)
    if n:
        K.launch(tok.target, PREPROCESS, n, *norm.stage_args(batch, tok.special_bytes, txt),
                 tok.wordpiece_args(), (rows, mapping), lay.content, True,
                 *feats.kernel_args(tok.device, nb, x, normalize))
    raise_bad_rows(K.to_host(txt[STATUS], tok.target))
    return Rows(rows[0], rows[1], rows[2], mapping), x
