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
from llm_reference import i32, obj, post_requests, run_batches, run_reference
from llm_reference import same_outputs as _same

from triton_textops.ops.llm import LLMTokenizer, incomplete_tail

TEXTS = [t for t in O.BPE_ADVERSARIAL if t] + O.random_texts(25, 12) + [
    "Hello , world ! Isn 't it nice ? I 'm sure they 're here , we 've seen it . ' quoted ' end .",
    "Déjà vu: naïve café, 中文字符, 日本語のテキスト, 한국어, العربية, עברית, हिन्दी 😀👍🏽 👨‍👩‍👧‍👦",
    ("A long prompt of ~2 KB. " * 90)[:2000],
]
WORDS = ["hello", " world", "Hello world", "", "中文", "😀", "<|endoftext|>", " it's", "x y z", "\u0301e"]
STYLES = L.STYLES


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
    """Postprocessing requests (:func:`llm_reference.post_requests`): invalid UTF-8 anywhere among the random ids."""
    enc = tok.bpe.encode(TEXTS, add_special_tokens=True, allowed_special="all").tolist()
    return post_requests(random.Random(seed), enc, [tok.end_id, tok.pad_id, *tok.bpe.special_ids[:3]], tok.bpe.n_ids)


@pytest.fixture(scope="module")
def tok_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The GPT-2, Llama-3-style and Qwen2-style tokenizer directories (written once: ~2 s each)."""
    root = tmp_path_factory.mktemp("tokenizers")
    return {style: L.write_tokenizer_dir(root, style) for style in STYLES}


@pytest.fixture(scope="module")
def equivalence(tmp_path_factory: pytest.TempPathFactory, tok_dirs: dict) -> dict:
    """Our models' and the reference's responses to the same batches, per (style, model, option)."""
    root = tmp_path_factory.mktemp("llm")
    ours_jobs, ref_jobs, keys = [], [], []
    for style in STYLES:
        tok_dir = tok_dirs[style]
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
    ref, ours = run_reference(ref_jobs, root, lambda: [run_batches(d, b) for d, b in ours_jobs])
    return {k: (o, r, b) for k, o, r, (_, b) in zip(keys, ours, ref, ours_jobs)}


@pytest.mark.parametrize("kind", ["pre", "post"])
def test_same_as_tensorrt_llm(equivalence: dict, kind: str) -> None:
    for (style, k, flag), (ours, ref, batches) in equivalence.items():
        if k != kind:
            continue
        for b, (o_batch, r_batch) in enumerate(zip(ours, ref)):
            for i, (o, r) in enumerate(zip(o_batch, r_batch)):
                _same(o, r, f"{style} {kind} flag={flag} batch {b} request {i} ({list(batches[b][i])})")


# ------------------------------------------------------------------------------------------- streaming

STREAM_TEXT = ("Streaming, exactly: naïve café ÉCOLE\u0301 — 中文字符测试，日本語のテキスト、한국어 텍스트 "
               "ภาษาไทย Ελληνικά Кириллица العربية עברית हिन्दी தமிழ் 😀👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷 ❤️ "
               "it's  two  spaces\n\tand tabs 12345 x😀y <|endoftext|> end .")
# every vocabulary the BPE reads: GPT-2 files, tiktoken rank files, tokenizer.json styles
VOCABS = {"gpt2": ("dir", "gpt2"), "cl100k_base": ("tiktoken", "cl100k_base.tiktoken"),
          "o200k_base": ("tiktoken", "o200k_base.tiktoken"), "qwen2": ("tiktoken", "qwen.tiktoken"),
          "llama3_json": ("dir", "llama3"), "qwen2_json": ("dir", "qwen2")}


def _vocab_dir(tok_dirs: dict, vocab: str) -> tuple[object, str | None]:
    how, what = VOCABS[vocab]
    return (tok_dirs[what], None) if how == "dir" else (O.DATA / what, vocab)


def _cuts(rng: random.Random, n: int) -> list[tuple[int, int]]:
    """A stream of ``n`` tokens cut into deltas of 1-4 tokens (as a generator's steps)."""
    out, a = [], 0
    while a < n:
        b = min(n, a + rng.randint(1, 4))
        out.append((a, b))
        a = b
    return out


@pytest.mark.parametrize("vocab", list(VOCABS))
def test_streaming_pieces_are_utf8_and_exact(tmp_path, tok_dirs: dict, vocab: str) -> None:
    """Many streams (request ids) interleaved through one model instance, several streams' deltas in each execute:
    every piece is valid UTF-8 on its own (a client's strict ``bytes.decode``), each stream's pieces concatenate
    to the bytes of all its tokens, and no state is left once every stream ended on a whole character. A stream
    cut inside a character (``max_tokens``) keeps its unfinished bytes back (never sent: the step is told nothing
    of the end); finishing it gives the whole decode's U+FFFD. TensorRT-LLM's per-delta decode is not exact."""
    from triton_textops.testing import load_model

    tok_dir, enc = _vocab_dir(tok_dirs, vocab)
    _, post = L.write_llm_models(tmp_path, tok_dir, streaming=True, encoding=enc, skip_special_tokens=False)
    rng = random.Random(vocab)
    with load_model(post) as m:
        tok = m.instance.tokenizer
        texts = [STREAM_TEXT, "😀" * 40, "中文字符测试日本語のテキスト한국어" * 3, TEXTS[-3]]
        streams, fulls = [], []
        for k in range(120):
            text = texts[k % len(texts)]
            ids = tok.bpe.encode([text], add_special_tokens=False, allowed_special="all").tolist()[0]
            streams.append([ids[a:b] for a, b in _cuts(rng, len(ids))])
            fulls.append(tok.bpe.decode(np.array(ids), np.array([0, len(ids)]), errors=None)[0])
        got: list[list[bytes]] = [[] for _ in streams]
        pending = [(k, 0) for k in range(len(streams))]
        while pending:  # a random batch of the streams' next deltas, each stream's in order
            rng.shuffle(pending)  # (a stream is in pending once: its next delta waits for the one before)
            size = rng.randint(1, 8)
            batch, pending = pending[:size], pending[size:]
            reqs = [m.make_request({"TOKENS_BATCH": np.array([[streams[k][j]]], np.int32),
                                    "SEQUENCE_LENGTH": np.array([[len(streams[k][j])]], np.int32)},
                                   request_id=f"stream-{k}") for k, j in batch]
            for (k, j), resp in zip(batch, m.execute(reqs)):
                got[k].append(m._outputs(resp)["OUTPUT"][0])
                if j + 1 < len(streams[k]):
                    pending.append((k, j + 1))
        for k, pieces in enumerate(got):
            for p in pieces:
                p.decode("utf-8")  # strict: raises on a piece that is not UTF-8
            assert b"".join(pieces) == fulls[k], (vocab, k)
        assert not tok.stream.held  # every stream ended on a whole character: nothing held
        # cut by max_tokens inside a character: its bytes held back, then released as a whole decode ends them
        ids = [i for d in streams[0] for i in d]
        n = next(n for n in range(1, len(ids)) if incomplete_tail(raw := tok.bpe.decode(
            np.array(ids[:n]), np.array([0, n]), errors=None)[0]) < len(raw))
        out = m.make_request({"TOKENS_BATCH": np.array([[ids[:n]]], np.int32),
                              "SEQUENCE_LENGTH": np.array([[n]], np.int32)}, request_id="cut")
        piece = m._outputs(m.execute([out])[0])["OUTPUT"][0]
        assert piece == raw[:incomplete_tail(raw)] and len(tok.stream.held) == 1
        tail = tok.stream.finish(tok.stream.key(("cut", 0), 0))
        assert (piece + tail).decode("utf-8") == raw.decode("utf-8", "replace") and not tok.stream.held
        assert (piece + tail).endswith("\ufffd".encode())
        # without a request id a stream cannot be told from another: each piece valid alone, U+FFFD for cut bytes
        def raw_of(deltas: list[list[int]]) -> list[bytes]:
            off = np.cumsum([0] + [len(d) for d in deltas])
            return tok.bpe.decode(np.concatenate([np.array(d) for d in deltas]), off, errors=None)

        k = next(k for k, d in enumerate(streams) if any(incomplete_tail(b) < len(b) for b in raw_of(d)))
        reqs = [m.make_request({"TOKENS_BATCH": np.array([[d]], np.int32),
                                "SEQUENCE_LENGTH": np.array([[len(d)]], np.int32)}) for d in streams[k]]
        alone = [m._outputs(r)["OUTPUT"][0] for r in m.execute(reqs)]
        assert not tok.stream.held
        for p, b in zip(alone, raw_of(streams[k])):
            assert p.decode("utf-8") == b.decode("utf-8", "replace")
        assert b"".join(alone) != fulls[k]


def test_streaming_needs_one_instance(tmp_path, tok_dirs: dict) -> None:
    """A stream's held-back bytes live in one instance, and Triton may send its next piece to another."""
    from triton_textops.testing import load_model
    from triton_textops.testing.harness import ModelLoadError

    values = {"tokenizer_dir": str(tok_dirs["gpt2"]), "skip_special_tokens": "true", "postprocessing_instance_count": "2"}
    cfg = L.trtllm_config("postprocessing", "postprocessing", **values)
    cfg.parameters["streaming"].string_value = "true"
    post = L.write_config_dir(tmp_path, "postprocessing", cfg, L.one_line("llm_postprocess"))
    with pytest.raises(ModelLoadError, match="streaming: 2 instances.*count: 1"):
        load_model(post)


# ------------------------------------------------------------------------------------ bad input, config


@pytest.fixture(scope="module")
def gpt2_models(tmp_path_factory: pytest.TempPathFactory, tok_dirs: dict):
    from triton_textops.testing import load_model

    root = tmp_path_factory.mktemp("llm_gpt2")
    pre, post = L.write_llm_models(root, tok_dirs["gpt2"])
    with load_model(pre) as p, load_model(post) as q:
        yield p, q


def test_bad_requests_fail_alone(gpt2_models) -> None:
    """Each bad request gets an INVALID_ARG error naming the config's tensor; the others in the same execute get
    what they get alone."""
    pre, post = gpt2_models
    good = {"QUERY": obj([["fine"]]), "REQUEST_OUTPUT_LEN": i32([4])}
    bad = {
        "QUERY": {"QUERY": np.array([[b"\xff\xfe"]], dtype=object), "REQUEST_OUTPUT_LEN": i32([4])},
        "BAD_WORDS_DICT": {**good, "BAD_WORDS_DICT": np.array([[b"ok", b"\xc3"]], dtype=object)},
        "REQUEST_OUTPUT_LEN": {**good, "REQUEST_OUTPUT_LEN": i32([-1])},
        "EMBEDDING_BIAS_WEIGHTS": {**good, "EMBEDDING_BIAS_WORDS": obj([["a", "b"]]),
                                   "EMBEDDING_BIAS_WEIGHTS": np.ones((1, 3), np.float32)},
    }
    alone = pre.infer(good)
    responses = pre.execute([pre.make_request(r) for r in [good, *bad.values(), good]])
    for resp in (responses[0], responses[-1]):
        _same({t.name(): t.as_numpy() for t in resp.output_tensors()}, alone, "good request")
    for name, resp in zip(bad, responses[1:-1]):
        assert resp.has_error() and f"'{name}'" in resp.error().message(), (name, resp.error().message())
        assert resp.error().code() == resp.error().INVALID_ARG
    seq = {"TOKENS_BATCH": np.array([[[31373, 995]]], np.int32), "SEQUENCE_LENGTH": np.array([[2]], np.int32)}
    bad_post = {"TOKENS_BATCH": {**seq, "TOKENS_BATCH": np.array([[[31373, 10 ** 6]]], np.int32)},
                "SEQUENCE_LENGTH": {**seq, "SEQUENCE_LENGTH": np.array([[-1]], np.int32)}}
    empty = {"TOKENS_BATCH": np.zeros((1, 2, 0), np.int32), "SEQUENCE_LENGTH": np.zeros((1, 2), np.int32)}
    responses = post.execute([post.make_request(r) for r in [seq, empty, *bad_post.values()]])
    assert responses[0].output_tensors()[0].as_numpy().tolist() == [b"hello world"]
    assert responses[1].output_tensors()[0].as_numpy().tolist() == [b"", b""]  # an empty delta, 2 beams
    for name, resp in zip(bad_post, responses[2:]):
        assert resp.has_error() and f"'{name}'" in resp.error().message(), (name, resp.error().message())


def test_config_rules(tmp_path, tok_dirs: dict) -> None:
    """TensorRT-LLM's config as it is (multimodal tensors) and a tensor we do not serve are load errors naming them;
    a config without tensors is auto-completed to TensorRT-LLM's text tensors (names, types, dims)."""
    from triton_textops.testing import load_model
    from triton_textops.testing.harness import ModelLoadError

    tok = tok_dirs["gpt2"]
    values = {"tokenizer_dir": str(tok), "add_special_tokens": "true"}
    full = L.trtllm_config("preprocessing", "pre_full", drop_inputs=False, drop_outputs=False, **values)
    full_dir = L.write_config_dir(tmp_path, "pre_full", full, L.one_line("llm_preprocess"))
    with pytest.raises(ModelLoadError, match="IMAGE_BYTES.*out of scope"):
        load_model(full_dir)
    extra = L.trtllm_config("preprocessing", "pre_extra", **values)
    extra.output.add(name="LOGITS", data_type=extra.output[0].data_type, dims=[-1])
    with pytest.raises(ModelLoadError, match="'LOGITS' match no role"):
        load_model(L.write_config_dir(tmp_path, "pre_extra", extra, L.one_line("llm_preprocess")))
    mm = L.trtllm_config("preprocessing", "pre_mm", **values, multimodal_model_path="/models/vision")
    with pytest.raises(ModelLoadError, match="multimodal_model_path.*out of scope"):
        load_model(L.write_config_dir(tmp_path, "pre_mm", mm, L.one_line("llm_preprocess")))
    for kind, module in (("preprocessing", "llm_preprocess"), ("postprocessing", "llm_postprocess")):
        bare = L.C.parse_config_text(f'backend: "python"\nmax_batch_size: 16\nparameters {{ key: "tokenizer_dir" '
                                     f'value: {{ string_value: "{tok}" }} }}\n')
        with load_model(L.write_config_dir(tmp_path, f"bare_{kind}", bare, L.one_line(module))) as m:
            want = L.C.config_to_dict(L.trtllm_config(kind, "x", **values))
            for io in ("input", "output"):
                got = [(t["name"], t["data_type"], t["dims"], t.get("optional", False)) for t in m.config[io]]
                assert got == [(t["name"], t["data_type"], t["dims"], t.get("optional", False)) for t in want[io]]


def test_one_encode_one_decode_per_execute(gpt2_models, monkeypatch: pytest.MonkeyPatch) -> None:
    """All queries, decoder queries and words of all requests of an execute go to the BPE in one encode call, all
    sequences in one decode call (not request by request, row by row or word by word as TensorRT-LLM's model.py)."""
    pre, post = gpt2_models
    batch, tokens = pre_batches(1)[0], post_batches(pre.instance.tokenizer, 3)[1]
    calls = []
    for m, method in ((pre, "encode"), (post, "decode")):
        bpe = m.instance.tokenizer.bpe
        real = getattr(bpe, method)
        monkeypatch.setattr(bpe, method, lambda *a, _real=real, _name=method, **k: calls.append(_name) or _real(*a, **k))
    assert len(pre.execute([pre.make_request(r) for r in batch])) == len(batch) == 5
    assert calls == ["encode"]
    assert len(post.execute([post.make_request(r) for r in tokens])) == len(tokens) == 12
    assert calls == ["encode", "decode"]


def test_one_text_utf8_check_is_the_kernels(gpt2_models) -> None:
    """A one-text request (checked by Python's strict decoder, the fast path) is refused exactly where the kernel
    (a request of two rows) refuses the same bytes: surrogates, overlong forms, beyond U+10FFFF, cut, stray."""
    from triton_textops.ops.core.utf8 import invalid_utf8_rows

    pre, _ = gpt2_models
    cases = [b"plain", "caf\u00e9 \u4e2d \U0001f600 \ud7ff\ue000\U0010ffff".encode(), b"\xed\xa0\x80", b"\xed\xbf\xbf",
             b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",
             b"ok \xe2\x82", b"\x80 stray", b"\xff", b"a\xc3\xa9\xc3", b"\xef\xbb\xbfbom", b"\x00nul"]
    for raw in cases:
        kernel_bad = invalid_utf8_rows(np.frombuffer(raw, np.uint8), np.array([0, len(raw)])).size > 0
        one = pre.execute([pre.make_request({"QUERY": np.array([[raw]], dtype=object),
                                             "REQUEST_OUTPUT_LEN": i32([1])})])[0]
        two = pre.execute([pre.make_request({"QUERY": np.array([[raw], [b"x"]], dtype=object),
                                             "REQUEST_OUTPUT_LEN": i32([1, 1])})])[0]
        assert one.has_error() == two.has_error() == kernel_bad, raw
        if kernel_bad:
            assert "'QUERY' row 0: text is not valid UTF-8" in one.error().message(), raw


def test_clean_up_skips_only_texts_without_a_pattern() -> None:
    """clean_up_tokenization (one scan, then transformers' ten replacements in order) equals the ten replacements on
    texts made of the patterns' own characters, where one replacement makes the next pattern's match."""
    from triton_textops.ops.llm import CLEAN_UP, clean_up_tokenization

    def reference(text: str) -> str:
        for a, b in CLEAN_UP:
            text = text.replace(a, b)
        return text

    rng = random.Random(7)
    texts = ["a n ' t", "a  ' s", "x ' 've", "Hello , world ! Isn 't it ?", "no match here", " n", " n'", "n't"]
    texts += ["".join(rng.choice(" .?!,'ntmsvrea") for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    for t in texts:
        assert clean_up_tokenization(t) == reference(t), repr(t)
