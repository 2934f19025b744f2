"""llm_preprocess / llm_postprocess against TensorRT-LLM's own preprocessing / postprocessing model.py (copied under
trtllm_ref/, run on transformers 4.47.0 in a subprocess) on the same configs and requests: every output, byte for
byte and bit for bit, for GPT-2 (vocab.json + merges.txt), Llama-3-style and Qwen2-style tokenizer.json directories.
"""

from __future__ import annotations

import random

import bpe_oracles as O
import llm_dirs as L
import numpy as np
import pytest
from llm_reference import run_batches, run_reference

from triton_textops.ops.llm import LLMTokenizer

TEXTS = [t for t in O.BPE_ADVERSARIAL if t] + O.random_texts(25, 12) + [
    "Hello , world ! Isn 't it nice ? I 'm sure they 're here , we 've seen it . ' quoted ' end .",
    "Déjà vu: naïve café, 中文字符, 日本語のテキスト, 한국어, العربية, עברית, हिन्दी 😀👍🏽 👨‍👩‍👧‍👦",
    ("A long prompt of ~2 KB. " * 90)[:2000],
]
WORDS = ["hello", " world", "Hello world", "", "中文", "😀", "<|endoftext|>", " it's", "x y z", "\u0301e"]
STYLES = L.STYLES


def obj(rows: list[list[str]]) -> np.ndarray:
    return np.array([[s.encode() for s in r] for r in rows], dtype=object).reshape(len(rows), -1)


def i32(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.int32).reshape(-1, 1)


def pre_batches(seed: int) -> list[list[dict]]:
    """Batches of mixed requests: several rows, several words per row, empty words and word lists, bias words
    (inexact weights, words sharing ids, the BOS a template adds to each), END_ID / PAD_ID overrides, decoder
    queries, optional inputs absent; then every text as its own request, and a batch of one."""
    rng = random.Random(seed)
    mixed = [
        {"QUERY": obj([[TEXTS[0]]]), "REQUEST_OUTPUT_LEN": i32([16])},
        {"QUERY": obj([[TEXTS[1]], [TEXTS[-2]], [""]]), "REQUEST_OUTPUT_LEN": i32([1, 2, 3]),
         "BAD_WORDS_DICT": obj([WORDS[:3], WORDS[3:6], WORDS[6:9]]), "STOP_WORDS_DICT": obj([WORDS[8:], WORDS[:2],
                                                                                             ["", ""]]),
         "END_ID": i32([7, 8, 9]), "PAD_ID": i32([0, 1, 2])},
        {"QUERY": obj([[TEXTS[2]], [TEXTS[-1]]]), "REQUEST_OUTPUT_LEN": i32([5, 6]),
         "DECODER_QUERY": obj([["decoder one"], ["zwei 😀"]]),
         "EMBEDDING_BIAS_WORDS": obj([["hello", "hello", " world"], ["中文", "", "x y z"]]),
         "EMBEDDING_BIAS_WEIGHTS": np.array([[0.1, 0.2, -1.5], [0.3, 2.0, 1e-3]], dtype=np.float32)},
        {"QUERY": obj([[TEXTS[3]]]), "REQUEST_OUTPUT_LEN": i32([0]),
         "BAD_WORDS_DICT": np.empty((1, 0), dtype=object), "EMBEDDING_BIAS_WORDS": obj([["hello"]]),
         "PAD_ID": i32([5])},
        {"QUERY": obj([[TEXTS[4]]]), "REQUEST_OUTPUT_LEN": i32([3]),
         "EMBEDDING_BIAS_WEIGHTS": np.array([[1.0]], dtype=np.float32)},
    ]
    singles = []
    for t in TEXTS:
        req = {"QUERY": obj([[t]]), "REQUEST_OUTPUT_LEN": i32([rng.randint(1, 99)])}
        if rng.random() < 0.5:
            req["STOP_WORDS_DICT"] = obj([rng.sample(WORDS, 2)])
        singles.append(req)
    return [mixed, singles, [mixed[2]]]


def post_batches(tok: LLMTokenizer, seed: int) -> list[list[dict]]:
    """Requests of [batch, beams, tokens] sequences: encoded texts with specials inserted, random ids (invalid
    UTF-8 anywhere), cuts at random tokens, padding past SEQUENCE_LENGTH, lengths past the end and 0."""
    rng = random.Random(seed)
    enc = tok.bpe.encode(TEXTS, add_special_tokens=True, allowed_special="all").tolist()
    specials = [tok.end_id, tok.pad_id, *tok.bpe.special_ids[:3]]

    def seq() -> list[int]:
        kind = rng.random()
        if kind < 0.3:
            return [rng.randrange(tok.bpe.n_ids) for _ in range(rng.randint(0, 40))]
        ids = list(rng.choice(enc))
        for _ in range(rng.randint(0, 3)):
            ids.insert(rng.randint(0, len(ids)), rng.choice(specials))
        return ids[rng.randint(0, 2):rng.randint(1, len(ids) + 1)] if kind < 0.6 else ids

    def request(batch: int, beams: int) -> dict:
        seqs = [[seq() for _ in range(beams)] for _ in range(batch)]
        width = max(len(s) for b in seqs for s in b) + rng.randint(0, 3)
        tokens = np.array([[s + [rng.randrange(tok.bpe.n_ids) for _ in range(width - len(s))] for s in b]
                           for b in seqs], dtype=np.int32)
        lengths = np.array([[len(s) + (rng.randint(1, 5) if rng.random() < 0.1 else 0) for s in b] for b in seqs],
                           dtype=np.int32)
        return {"TOKENS_BATCH": tokens, "SEQUENCE_LENGTH": lengths}

    whole = [{"TOKENS_BATCH": np.array([[e]], dtype=np.int32), "SEQUENCE_LENGTH": np.array([[len(e)]], np.int32)}
             for e in enc]
    return [whole, [request(rng.randint(1, 3), rng.randint(1, 2)) for _ in range(12)], [request(1, 1)]]


def _same(ours: object, ref: object, where: str) -> None:
    if isinstance(ref, str) or isinstance(ours, str):
        raise AssertionError(f"{where}: ours {str(ours)[:300]!r}, reference {str(ref)[:300]!r}")
    assert set(ours) == set(ref), f"{where}: outputs {sorted(ours)} != {sorted(ref)}"
    for name in ref:
        a, b = ours[name], ref[name]
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where} {name}: {a.dtype} {a.shape} != {b.dtype} {b.shape}"
        if a.dtype == np.object_:
            assert a.tolist() == b.tolist(), f"{where} {name}: {a.tolist()[:3]} != {b.tolist()[:3]}"
        else:
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), f"{where} {name}: {a} != {b}"


@pytest.fixture(scope="module")
def equivalence(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Our models' and the reference's responses to the same batches, per (style, model, option)."""
    root = tmp_path_factory.mktemp("llm")
    ours_jobs, ref_jobs, keys = [], [], []
    for style in STYLES:
        tok_dir = L.write_tokenizer_dir(root / "tokenizers", style)
        tok = LLMTokenizer(tok_dir)
        for flag in (True, False) if style == "llama3" else (True,):
            name = f"_{style}_{flag}"
            pre, post = L.write_llm_models(root / "ours", tok_dir, name=name, add_special_tokens=flag,
                                           skip_special_tokens=flag)
            rpre, rpost = L.write_reference_models(root / "ref", tok_dir, name=name, add_special_tokens=flag,
                                                   skip_special_tokens=flag)
            for kind, ours_dir, ref_dir, batches in (("pre", pre, rpre, pre_batches(1)),
                                                     ("post", post, rpost, post_batches(tok, 2))):
                keys.append((style, kind, flag))
                ours_jobs.append((ours_dir, batches))
                ref_jobs.append((str(ref_dir), batches))
    ref = run_reference(ref_jobs, root)
    return {k: (run_batches(d, b), r, b) for k, (d, b), r in zip(keys, ours_jobs, ref)}


@pytest.mark.parametrize("kind", ["pre", "post"])
def test_same_as_tensorrt_llm(equivalence: dict, kind: str) -> None:
    for (style, k, flag), (ours, ref, batches) in equivalence.items():
        if k != kind:
            continue
        for b, (o_batch, r_batch) in enumerate(zip(ours, ref)):
            for i, (o, r) in enumerate(zip(o_batch, r_batch)):
                _same(o, r, f"{style} {kind} flag={flag} batch {b} request {i} ({list(batches[b][i])})")
