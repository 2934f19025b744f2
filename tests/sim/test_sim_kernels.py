"""The GPU kernels (numba.cuda.jit, run by the CUDA simulator) give exactly the CPU kernels' arrays, and
one encode / one preprocess batch stays within its launch and copy budget."""

from __future__ import annotations

import numpy as np
import pytest
from textcases import ADVERSARIAL, SENTENCES, mixed_texts

from triton_textops import BertTokenizer, InputError, ReadabilityFeatures
from triton_textops.ops.core import kernels as K
from triton_textops.ops.core.batch import TextBatch, pack_host
from triton_textops.ops.preprocess import preprocess
from triton_textops.ops.wordpiece.pretokenize import Normalizer

OUTPUTS = ("input_ids", "attention_mask", "token_type_ids", "overflow_to_sample_mapping")
EDGE = ["", " ", "\n\t ", "[CLS]", "x[SEP]y [MASK]", "a" * 101, "é" * 100, "Mr. A. B... c?!", "\u00a0\u3000"]


@pytest.fixture(scope="module")
def pair(vocab_path):
    return BertTokenizer.from_vocab(vocab_path, device="cpu"), BertTokenizer.from_vocab(vocab_path, device="cuda")


@pytest.fixture(scope="module")
def texts(austen):
    return austen[:10] + ADVERSARIAL + EDGE


def assert_same(a, b):
    for name in OUTPUTS:
        assert isinstance(b[name], np.ndarray)  # the simulator returns NumPy arrays
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        assert a[name].dtype == b[name].dtype


def test_simulator_is_on(pair):
    cpu, gpu = pair
    assert K.SIMULATOR and gpu.target == "cuda" and cpu.target == "cpu"


@pytest.mark.parametrize("kw", [
    {"max_length": 64},
    {"max_length": 16, "dtype": "int32"},
    {"max_length": 40, "add_special_tokens": False},
    {"max_length": 32, "stride": 8, "return_overflowing_tokens": True},
    {"max_length": 20, "stride": 0, "return_overflowing_tokens": True},
])
def test_encode_gpu_equals_cpu(pair, texts, kw):
    cpu, gpu = pair
    assert_same(cpu.encode_rows(texts, **kw), gpu.encode_rows(texts, **kw))


def test_cased_vocabulary(tmp_path, vocab_path, austen):
    base = open(vocab_path, encoding="utf-8").read().split("\n")[:-1]
    path = tmp_path / "cased.txt"
    path.write_text("\n".join(base + ["The", "Elizabeth", "Café", "##é", "Σ"]) + "\n", encoding="utf-8")
    cpu = BertTokenizer.from_vocab(path, lowercase=False, device="cpu")
    gpu = BertTokenizer.from_vocab(path, lowercase=False, device="cuda")
    texts = austen[:6] + ADVERSARIAL
    assert_same(cpu.encode_rows(texts, max_length=48), gpu.encode_rows(texts, max_length=48))


def test_stages_gpu_equal_cpu(pair, texts):
    """Stage (a)'s tokens, the flat pieces and pack() agree too."""
    cpu, gpu = pair
    pc, pg = cpu.pretokenize(texts), gpu.pretokenize(texts)
    for t in range(len(texts)):
        assert pc.tokens(t) == pg.tokens(t)
    for f in ("text_len", "ntok", "status"):
        np.testing.assert_array_equal(getattr(pc, f), getattr(pg, f))
    idx = pc.token_index()
    for f in ("start", "end", "nchars", "kind", "special"):
        np.testing.assert_array_equal(getattr(pc, f)[idx], getattr(pg, f)[idx])
    (a, ao), (b, bo) = cpu.wordpiece(pc), gpu.wordpiece(pg)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ao, bo)
    kw = {"max_length": 24, "stride": 4, "return_overflowing_tokens": True}
    assert_same(cpu.pack(a, ao, **kw), gpu.pack(b, bo, **kw))


def test_invalid_utf8_names_the_rows_on_the_gpu(pair):
    _, gpu = pair
    with pytest.raises(InputError, match="row 1") as ei:
        gpu.encode([b"ok", b"bad \xff", b"fine", b"\xe2\x82"])
    assert list(ei.value.rows) == [1, 3]
    with pytest.raises(InputError, match="row 0"):
        gpu.encode_rows([b"\xed\xa0\x80"], max_length=8, stride=2, return_overflowing_tokens=True)


def test_device_buffers_as_input(pair, texts):
    cpu, gpu = pair
    data, offs = pack_host(texts)
    assert_same(cpu.encode_rows(texts), gpu.encode_rows((data.copy(), offs.copy())))
    assert cpu.encode(texts).tolist() == gpu.encode((data.copy(), offs.copy())).tolist()  # ragged


def test_encode_launch_budget(pair, austen):
    """Fixed-length rows: at most 6 launches and 1 device-to-host copy; the text goes up as one copy.
    With overflow windows: at most 2 copies."""
    _, gpu = pair
    gpu.encode(austen[:3])  # the special-token tables are uploaded once per tokenizer, not per batch
    K.COUNTS.clear()
    gpu.encode_rows(austen[:8], max_length=128)
    fixed = dict(K.COUNTS)
    K.COUNTS.clear()
    gpu.encode_rows(austen[:8], max_length=64, stride=16, return_overflowing_tokens=True)
    windows = dict(K.COUNTS)
    assert fixed["launch"] <= 6 and fixed.get("d2h", 0) <= 1 and fixed["h2d"] == 1, fixed
    assert windows["launch"] <= 6 and windows.get("d2h", 0) <= 2, windows


@pytest.fixture(scope="module")
def features(austen):
    return ReadabilityFeatures.fit(austen[:400], n_common=20, n_rare=20)


def test_features_gpu_equal_cpu_bit_for_bit(features, austen):
    texts = austen[400:406] + [t for t, _ in SENTENCES] + EDGE + ADVERSARIAL
    for normalize in (False, True):
        a = features.transform(texts, normalize=normalize, device="cpu")
        b = features.transform(texts, normalize=normalize, device="cuda")
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
    assert features.transform([], device="cuda").shape == (0, features.n_features)
    assert features.transform([t for t, _ in SENTENCES], normalize=False, device="cuda")[:, 3].tolist() == [
        n for _, n in SENTENCES
    ]


def test_mixed_script_texts_gpu_equal_cpu(pair, features, austen):
    """60 seeded texts mixing every script, control and space class, raw specials and over-long words."""
    texts = mixed_texts(5, 60, austen[0].split())
    cpu, gpu = pair
    assert_same(cpu.encode_rows(texts, max_length=40), gpu.encode_rows(texts, max_length=40))
    kw = {"max_length": 24, "stride": 6, "return_overflowing_tokens": True}
    assert_same(cpu.encode_rows(texts, **kw), gpu.encode_rows(texts, **kw))
    a, b = features.transform(texts, device="cpu"), features.transform(texts, device="cuda")
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def test_preprocess_launch_budget(pair, features, austen):
    """The preprocess model's step (BERT rows + features, fixed-length rows): at most 10 launches and
    1 device-to-host copy per batch, the text up as one copy; GPU == CPU, features bit for bit."""
    cpu, gpu = pair
    texts = austen[:8] + EDGE
    data, offs = pack_host(texts)
    preprocess(gpu, features, austen[:2])  # word tables go up once per device
    K.COUNTS.clear()
    enc, x = preprocess(gpu, features, TextBatch.upload(data, offs, np, "cuda"), max_length=64)
    counts = dict(K.COUNTS)
    assert counts["launch"] <= 10 and counts.get("d2h", 0) <= 1 and counts["h2d"] == 1, counts
    enc_c, x_c = preprocess(cpu, features, texts, max_length=64)
    assert_same(enc_c, enc)
    np.testing.assert_array_equal(x_c.view(np.uint32), x.view(np.uint32))
    np.testing.assert_array_equal(x_c, features.transform(texts))
    np.testing.assert_array_equal(enc_c.input_ids, cpu.encode_rows(texts, max_length=64).input_ids)
    # the staged path (overflow windows) uses the same pre-tokens for both outputs
    pre = gpu.pretokenize(texts)
    np.testing.assert_array_equal(features.transform_pretokens(pre), x_c)
    assert Normalizer.get(True, "cuda").target == "cuda"


MARKS = ["\u302e", "\u302f", "\u1b44", "\ua953", "\U0001d165", "\U0001d16d", "\U0001d16e", "\u0c3c", "\u08d4",
         "\u0301", "\u034f", "\x01"]


def test_combining_marks_reorder_alike_on_the_gpu(pair, features):
    """Canonical ordering of kept marks (the run sorted through the token scratch when it ends): the GPU
    kernels give the CPU's tokens, ids and features, runs long enough to need the scratch included."""
    texts = ["x" + a + b + c for a in MARKS for b in MARKS[:6] for c in ("", "\u1b44", " y")]
    texts += ["x" + "\u302e\u1b44" * 40 + "y \U0001d15f\u1b44", "\u302e\u1b44 a\u0301\u302e\u1b44!"]
    cpu, gpu = pair
    pc, pg = cpu.pretokenize(texts), gpu.pretokenize(texts)
    for t in range(len(texts)):
        assert pc.tokens(t) == pg.tokens(t)
    assert_same(cpu.encode_rows(texts, max_length=12), gpu.encode_rows(texts, max_length=12))
    a, b = features.transform(texts, device="cpu"), features.transform(texts, device="cuda")
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("offsets", [[0, -1_000_000, 11], [0, 11, 3], [0, 5, 5_000_000], [0, 2**62, 11]])
def test_bad_offsets_name_the_row_on_the_gpu(pair, features, offsets):
    cpu, gpu = pair
    data = np.frombuffer(b"hello world", np.uint8).copy()
    offs = np.array(offsets, dtype=np.int64)
    for call in (lambda tk: tk.encode_rows((data, offs), max_length=8),
                 lambda tk: tk.encode_rows((data, offs), max_length=8, stride=2, return_overflowing_tokens=True),
                 lambda tk: preprocess(tk, features, (data, offs), max_length=8)):
        rows = []
        for tk in pair:
            with pytest.raises(InputError, match="its offsets are not") as e:
                call(tk)
            rows.append(list(e.value.rows))
        assert rows[0] == rows[1]


def test_forged_pretokens_are_refused_on_the_gpu(pair, features):
    _, gpu = pair
    pre = gpu.pretokenize(["hello world", "second text"])
    pre.tok[1, 0] = 10**6  # a token past its text's region
    with pytest.raises(InputError, match="row 0: its pre-tokens are not consistent"):
        gpu.encode_pretokens(pre, max_length=8)
    with pytest.raises(InputError, match="row 0"):
        features.transform_pretokens(pre)


@pytest.mark.parametrize("n", [3, 4])
def test_gpu_placement_on_both_sides_of_the_crossover(pair, features, austen, n):
    """With gpu_min_batch=4, 3 texts run on the CPU kernels and only the outputs go up (one copy, no copy
    back); 4 texts run on the GPU kernels (the text goes up, the status comes back). The arrays are the CPU
    tokenizer's, bit for bit, either way: encode (rows and windows), features, preprocess."""
    cpu, gpu = pair
    texts = austen[20 : 20 + n - 1] + ["caf\u00e9 x\u302e\u1b44 [CLS]"]
    small = n < 4
    cases = [
        (lambda d, **k: (cpu if d == "cpu" else gpu).encode_rows(texts, max_length=32, **k), OUTPUTS),
        (lambda d, **k: (cpu if d == "cpu" else gpu).encode_rows(texts, max_length=16, stride=4,
                                                           return_overflowing_tokens=True, **k), OUTPUTS),
        (lambda d, **k: (features.transform(texts, device=d, **k),), [0]),
        (lambda d, **k: preprocess(cpu if d == "cpu" else gpu, features, texts, max_length=24, **k), [0, 1]),
        (lambda d, **k: preprocess(cpu if d == "cpu" else gpu, features, texts, max_length=12, stride=2,
                                   return_overflowing_tokens=True, **k), [0, 1]),
    ]
    for case, keys in cases:
        want = case("cpu")
        K.COUNTS.clear()
        got = case("cuda", gpu_min_batch=4)
        counts = dict(K.COUNTS)
        if small:
            assert counts.get("launch_cuda", 0) == 0 and counts["launch_cpu"] >= 1, counts
            assert counts["h2d"] == 1 and counts.get("d2h", 0) == 0, counts
        else:
            assert counts.get("launch_cpu", 0) == 0 and counts["launch_cuda"] >= 1, counts
        for k in keys:
            a, b = want[k], got[k]
            if isinstance(a, tuple) or hasattr(a, "input_ids"):
                assert_same(a, b)
            else:
                assert isinstance(b, np.ndarray) and a.dtype == b.dtype
                np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def test_gpu_min_batch_is_checked(pair):
    _, gpu = pair
    with pytest.raises(InputError, match="gpu_min_batch must be an integer"):
        gpu.encode(["a"], gpu_min_batch=2.5)
