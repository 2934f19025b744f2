"""The served models on SentencePiece BPE tokenizers (a Llama-2-style and a Gemma-style tokenizer.json, a slow
tokenizer.model directory), in the in-process harness: ``tokenize`` gives HF tokenizers' truncated / padded rows;
``llm_preprocess`` / ``llm_postprocess`` give TensorRT-LLM's own model.py outputs (run on the HF-tokenizers stand-in
for transformers), byte for byte; streamed, every piece is valid UTF-8 and a stream's pieces concatenate to the
whole decode (``▁`` spaces kept between pieces, byte-fallback characters cut between pieces held back)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import llm_dirs as L
import numpy as np
import pytest
import sp_oracles as O
import tokenizers
from llm_reference import post_requests, run_batches
from llm_reference import same_outputs as _same
from model_dirs import write_model

from models.test_any_family import SHIM, TEXTS, TOKENIZE, batch_of, hf_rows, param, pre_batches
from triton_textops.ops.llm import LLMTokenizer
from triton_textops.testing import load_model

pytest.importorskip("sentencepiece")
CONFIG = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>", "add_bos_token": True,
          "add_eos_token": False, "clean_up_tokenization_spaces": False}


@pytest.fixture(scope="module")
def sp_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sp_models")
    model = O.train(root / "sp.model", byte_fallback=True, user_defined_symbols=["<ud>"])
    out = {}
    for style in ("llama", "gemma"):
        d = root / style
        d.mkdir()
        O.convert(model, d / "tokenizer.json", style)
        (d / "tokenizer_config.json").write_text(json.dumps(CONFIG))
        out[style] = d
    slow = root / "slow"
    slow.mkdir()
    (slow / "tokenizer.model").write_bytes(model.read_bytes())
    (slow / "tokenizer_config.json").write_text(json.dumps(CONFIG))
    out["slow"] = slow
    return out


@pytest.mark.parametrize("style", ["llama", "gemma"])
def test_tokenize_is_hf(tmp_path: Path, sp_dirs: dict, style: str) -> None:
    hf = tokenizers.Tokenizer.from_file(str(sp_dirs[style] / "tokenizer.json"))
    texts = TEXTS + O.MULTILINGUAL
    with load_model(write_model(tmp_path, "rows", "tokenize", TOKENIZE + param("tokenizer", sp_dirs[style]))) as m:
        out = m.infer({"TEXT": batch_of(texts)})
    want, _ = hf_rows(hf, texts, 24, 0)
    for name in ("INPUT_IDS", "ATTENTION_MASK"):
        np.testing.assert_array_equal(out[name], want[name], err_msg=name)


@pytest.mark.parametrize("style", ["llama", "gemma"])
def test_llm_models_equal_tensorrt_llm(tmp_path: Path, sp_dirs: dict, style: str) -> None:
    tok_dir = sp_dirs[style]
    hf = tokenizers.Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    pre, post = L.write_llm_models(tmp_path / "ours", tok_dir, name=f"_{style}")
    rpre, rpost = L.write_reference_models(tmp_path / "ref", tok_dir, name=f"_{style}")
    for d in (rpre, rpost):
        (d / "transformers.py").write_text(SHIM)
    enc = [e.ids for e in hf.encode_batch(TEXTS)]
    specials = [i for i in map(hf.token_to_id, ("<s>", "</s>", "<unk>", "<0xE4>", "<0xB8>")) if i is not None]
    posts = post_requests(random.Random(5), enc, specials, hf.get_vocab_size(with_added_tokens=True))
    for ours_dir, ref_dir, batches in ((pre, rpre, pre_batches(3)), (post, rpost, posts)):
        ours, ref = run_batches(ours_dir, batches), run_batches(ref_dir, batches)
        for b, (o_batch, r_batch) in enumerate(zip(ours, ref)):
            assert len(o_batch) == len(r_batch) == len(batches[b])
            for i, (o, r) in enumerate(zip(o_batch, r_batch)):
                _same(o, r, f"{style} {ours_dir.name} batch {b} request {i}")


def test_llm_tokenizer_of_a_slow_directory(sp_dirs: dict) -> None:
    """tokenizer.model + tokenizer_config.json: BOS as add_bos_token says, the end id the config's eos_token."""
    import sentencepiece as spm  # noqa: PLC0415

    sp = spm.SentencePieceProcessor(model_file=str(sp_dirs["slow"] / "tokenizer.model"))
    tok = LLMTokenizer(sp_dirs["slow"])
    assert (tok.family, tok.exact_stream, tok.end_id) == ("sentencepiece", True, sp.eos_id())
    texts = [t.encode() for t in TEXTS]
    data = np.frombuffer(b"".join(texts), np.uint8)
    offsets = np.cumsum([0] + [len(t) for t in texts]).astype(np.int64)
    ids, off = tok.encode_groups([(data, offsets)], [True])[0]
    assert [ids[off[i]:off[i + 1]].tolist() for i in range(len(texts))] == [[sp.bos_id(), *sp.encode(t)]
                                                                          for t in TEXTS]


STREAM_TEXTS = ["Hello world, a stream of words", " leading space and  two  spaces", "😀👍🏽 emoji 🇯🇵 and 𝄞",
                "中文字符测试 日本語のテキスト 한국어 텍스트", "naïve café Привет мир ελληνικά"]


def _deltas(rng: random.Random, ids: list[int]) -> list[list[int]]:
    out, a = [], 0
    while a < len(ids):
        b = min(len(ids), a + rng.randint(1, 3))
        out.append(ids[a:b])
        a = b
    return out


@pytest.mark.parametrize("style", ["llama", "gemma", "slow"])
def test_streaming(tmp_path: Path, sp_dirs: dict, style: str) -> None:
    """Many streams (request ids) interleaved through one instance, deltas of 1-3 tokens: each piece valid UTF-8
    alone; each stream's pieces concatenate to the whole decode of its tokens (HF's / sentencepiece's: the start's
    space stripped once, every later space kept, a character of byte pieces cut between deltas sent whole);
    nothing held but one (empty) entry per stream, released by finishing it."""
    _, post = L.write_llm_models(tmp_path, sp_dirs[style], streaming=True)
    rng = random.Random(style)
    with load_model(post) as m:
        tok = m.instance.tokenizer
        texts = [t.encode() for t in STREAM_TEXTS * 12]
        data = np.frombuffer(b"".join(texts), np.uint8)
        ids, off = tok.encode_groups([(data, np.cumsum([0] + [len(t) for t in texts]).astype(np.int64))], [False])[0]
        seqs = [ids[off[i]:off[i + 1]].tolist() for i in range(len(texts))]
        whole = tok.decode_sequences(ids, off, skip_special_tokens=True)  # HF's batch_decode (checked above)
        assert any(tok.tok._is_byte[i] for s in seqs for i in s)  # byte-fallback pieces are streamed
        bos = tok.tok.token_to_id("<s>")  # (a first delta of a skipped special token: the text starts after it)
        streams = [([[bos]] if k % 2 else []) + _deltas(rng, s) for k, s in enumerate(seqs)]
        got: list[list[bytes]] = [[] for _ in streams]
        pending = [(k, 0) for k in range(len(streams))]
        while pending:
            rng.shuffle(pending)
            size = rng.randint(1, 8)
            batch, pending = pending[:size], pending[size:]
            reqs = [m.make_request({"TOKENS_BATCH": np.array([[streams[k][j]]], np.int32),
                                    "SEQUENCE_LENGTH": np.array([[len(streams[k][j])]], np.int32)},
                                   request_id=f"s{k}") for k, j in batch]
            for (k, j), resp in zip(batch, m.execute(reqs)):
                got[k].append(m._outputs(resp)["OUTPUT"][0])
                if j + 1 < len(streams[k]):
                    pending.append((k, j + 1))
        st = tok.stream
        for k, pieces in enumerate(got):
            for p in pieces:
                p.decode("utf-8")  # strict
            assert b"".join(pieces) == whole[k], (style, k, pieces)
            assert st.finish(st.key((f"s{k}", 0), 0)) == b""
        assert not st.held and not st.start_ids
        # without a request id: each piece valid alone, decoded as the inside of a text (its `▁` space kept)
        reqs = [m.make_request({"TOKENS_BATCH": np.array([[d]], np.int32),
                                "SEQUENCE_LENGTH": np.array([[len(d)]], np.int32)}) for d in streams[2]]
        alone = [m._outputs(r)["OUTPUT"][0] for r in m.execute(reqs)]
        assert all(p.decode("utf-8") == p.decode("utf-8", "replace") for p in alone) and not st.held
        assert b"".join(alone).replace("\ufffd".encode(), b"").strip() != b""
