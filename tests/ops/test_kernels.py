"""The kernel machinery: one source compiled for both targets, the launch counter, the CPU thread shares,
and numba's cache falling back to a user directory when the package directory is not writable."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import triton_textops
from triton_textops import BertTokenizer
from triton_textops.bundled import austen_paragraphs, vocab_path
from triton_textops.ops.core import kernels as K


def test_device_functions_are_bound_per_target():
    """A kernel's CPU clone calls the CPU compilation of each device function it names."""
    import triton_textops.ops.wordpiece.model as model
    import triton_textops.ops.wordpiece.postprocess as wp

    clone = K._clone(wp.encode_text, "cpu")
    assert clone.__code__ is wp.encode_text.__code__
    assert clone.__globals__["wp_text"] is K._compiled("wp_text", "cpu")
    assert wp.wp_text is model.wp_text  # the modules keep the plain function
    assert model.wp_text.__module__ == "triton_textops.ops.wordpiece.model"


def test_kernel_loops_are_generated_from_one_body():
    """K.kernel: the CPU and GPU loops of an entry point come from its per-item body, named after it and compiled
    as code of its file at its line; the body is a @device function taking at most MAX_KERNEL_ARGS groups."""
    import inspect  # noqa: PLC0415

    import triton_textops.ops.wordpiece.postprocess as wp

    cpu_fn, gpu_fn = K.loops(wp.wp_rows_item)
    assert (cpu_fn.__name__, gpu_fn.__name__) == ("wp_rows_item__cpu", "wp_rows_item__gpu")
    assert cpu_fn.__code__.co_filename == wp.__file__
    assert cpu_fn.__code__.co_firstlineno == inspect.getsourcelines(wp.wp_rows_item)[1] == wp.wp_rows_item.__code__.co_firstlineno
    assert cpu_fn.__code__.co_varnames[:3] == ("share", "shares", "n") and gpu_fn.__code__.co_varnames[0] == "n"
    assert wp.ENCODE_ROWS[0].py_func.__globals__["wp_rows_item"] is K._compiled("wp_rows_item", "cpu")
    with pytest.raises(RuntimeError, match="must be a @device function"):
        K.loops(lambda t, a: None)

    def too_many(t, a, b, c, d, e, f, g, h, i, j, k, l, m):  # noqa: E741
        pass

    K.device(too_many)
    try:
        with pytest.raises(RuntimeError, match="1 to 12 groups"):
            K.loops(too_many)
    finally:
        K._DEVICE.pop("too_many")


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_thread_shares_give_the_same_rows(threads):
    texts = austen_paragraphs()[:50]
    tok = BertTokenizer.from_vocab(vocab_path())
    K.set_num_threads(1)
    want = tok.encode_rows(texts, max_length=64).input_ids
    try:
        K.set_num_threads(threads)
        np.testing.assert_array_equal(tok.encode_rows(texts, max_length=64).input_ids, want)
    finally:
        K.set_num_threads(None)
    assert K.get_num_threads() >= 1


def test_launches_are_counted():
    tok = BertTokenizer.from_vocab(vocab_path())
    K.COUNTS.clear()
    tok.encode_rows(["one text", "two"], max_length=8)
    assert K.COUNTS["launch"] == 1 and K.COUNTS["d2h"] == 0  # the CPU copies nothing


@pytest.mark.slow
def test_read_only_package_directory_uses_a_user_cache(tmp_path):
    """A read-only site-packages (a container) still loads, its kernels cached in the user-wide cache directory
    (ops.core.jitcache; numba's own locators would also fall back there)."""
    pkg = tmp_path / "site" / "triton_textops"
    shutil.copytree(Path(triton_textops.__file__).parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    for d in [pkg, *[p for p in pkg.rglob("*") if p.is_dir()]]:
        (d / "__pycache__").write_text("not a directory: nothing can be cached here\n")
    xdg = tmp_path / "xdg"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=str(tmp_path / "site"), XDG_CACHE_HOME=str(xdg), PYTHONDONTWRITEBYTECODE="1")
    code = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]; "
            "import triton_textops; from triton_textops import BertTokenizer; "
            "assert triton_textops.__file__.startswith(sys.argv[1]); "
            f"t = BertTokenizer.from_vocab({str(vocab_path())!r}); print(t.encode_rows(['a b'], max_length=4).input_ids.tolist())")
    out = subprocess.run([sys.executable, "-c", code, str(pkg)], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[[101, 1037, 1038, 102]]"
    assert list(xdg.rglob("*.nbi")), "numba's user-wide cache holds the kernels"


_COMPILE_ONCE = """
import json
from numba.core import types
from triton_textops import BertTokenizer, ReadabilityFeatures
from triton_textops.bundled import austen_paragraphs, vocab_path
from triton_textops.ops.core import kernels as K
from triton_textops.ops.preprocess import preprocess

texts = austen_paragraphs()[:20] + ["caf\u00e9 [CLS] x.", ""]
feats = ReadabilityFeatures(lowercase=True, stopwords_name="t", stopwords=["the", "a"], common=["she"],
                            rare=["mr"], mean=[0.0] * 9, std=[1.0] * 9)
preprocess(BertTokenizer.from_vocab(vocab_path()), feats, texts, max_length=32)
print(json.dumps({name: [[str(a) for a in sig] for sig in K._compiled(name, "cpu").signatures]
                  for name in K._DEVICE}))
"""


@pytest.mark.slow
def test_device_functions_compile_once_for_every_caller(tmp_path):
    """Call sites pass constants and int32 token fields; numba would compile a device function again for
    each literal and each integer width (6 extra compilations, 3 s of a cold compile). Compiled cold
    (empty cache), every device function the preprocess kernel calls has one version, for int64 scalars."""
    import json

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", _COMPILE_ONCE], env=env, capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    sigs = json.loads(out.stdout.strip().splitlines()[-1])
    used = {name: s for name, s in sigs.items() if s}
    assert {"pretok_text", "wp_text", "wp_split", "find_bytes", "put", "features_text", "utf8_at"} <= set(used)
    for name, versions in used.items():
        assert len(versions) == 1, (name, versions)
        for arg in versions[0]:
            assert "Literal" not in arg and arg not in ("int32", "int16", "int8", "uint8", "uint32"), (name, arg)


def test_variants_bind_by_name_and_share_the_rest():
    """kernels.variant: a format's encode kernel calls its own scanner (and NFC only when asked); functions that
    reach no replaced name are compiled once for every variant; each variant has its own cache name."""
    from triton_textops.ops.bpe.encode import encode_kernels  # noqa: PLC0415
    from triton_textops.ops.bpe.formats import CL100K, GPT2, WHOLE  # noqa: PLC0415

    cl, gpt2 = encode_kernels(CL100K, False), encode_kernels(GPT2, True)
    assert cl is encode_kernels(CL100K, False)
    assert cl[1].bind == (("pretoken_end", "pretoken_cl100k"),)
    assert gpt2[1].bind == (("pretoken_end", "pretoken_gpt2"), ("normalize", "normalize_nfc"))
    assert encode_kernels(WHOLE, False)[1].bind == ()
    glb_cl, glb_gpt2 = cl[0].py_func.__globals__, gpt2[0].py_func.__globals__
    assert cl[0].py_func.__qualname__ == "bpe_rows_item__cpu__pretoken_cl100k"
    glb_cl, glb_gpt2 = (g["bpe_rows_item"].py_func.__globals__ for g in (glb_cl, glb_gpt2))  # (the per-item body)
    assert glb_cl["bpe_text"].py_func.__qualname__ == "bpe_text__pretoken_cl100k"
    assert glb_gpt2["bpe_text"].py_func.__qualname__ == "bpe_text__pretoken_gpt2__normalize_nfc"
    gap = glb_cl["bpe_text"].py_func.__globals__["encode_span"].py_func.__globals__["encode_gap"]
    assert gap.py_func.__globals__["pretoken_end"].py_func.__name__ == "pretoken_cl100k"
    assert glb_cl["write_row"] is glb_gpt2["write_row"] is K._compiled("write_row", "cpu")  # shared
    assert gap.py_func.__globals__["encode_piece"] is K._compiled("encode_piece", "cpu")
    assert "nfc_write" not in glb_cl["bpe_text"].py_func.__globals__["normalize"].py_func.__code__.co_names
    ranked = encode_kernels(CL100K, False, True)  # a rank file's: tiktoken's pair rule bound into the merge step
    assert ranked[1].bind == (("pretoken_end", "pretoken_cl100k"), ("pair_near", "span_pair"))
    piece = ranked[0].py_func.__globals__["bpe_rows_item"].py_func.__globals__["bpe_text"].py_func.__globals__["encode_span"].py_func.__globals__[
        "encode_gap"].py_func.__globals__["encode_piece"].py_func.__globals__["bpe_piece"]
    assert piece.py_func.__qualname__ == "bpe_piece__span_pair"
    assert piece is not K._compiled("bpe_piece", "cpu")
    # (bpe_piece's merge loop is merge_symbols, bound with it): the short path's call site inlined, the heap's
    # calling the shared copy
    glb = piece.py_func.__globals__["merge_symbols"].py_func.__globals__
    assert glb["pair_near"].py_func.__name__ == "span_pair"  # (the rank file's pair rule at every call site)


def test_ir_inlined_device_functions_have_one_cpu_call_site():
    """``K.device(inline="ir")`` copies a function into each caller's numba IR: it is meant for a kernel's stages,
    each called from one place of the CPU code (GPU entries, ``*_gpu``, call them through NVVM), and such a
    stage is never compiled on its own. A kernel's per-item body (K.BODIES) is called only by its generated loops."""
    import ast  # noqa: PLC0415
    import importlib  # noqa: PLC0415
    import pkgutil  # noqa: PLC0415

    import triton_textops.ops as ops  # noqa: PLC0415

    files = [importlib.import_module(m.name).__file__ for m in pkgutil.walk_packages(ops.__path__, ops.__name__ + ".")
             if not m.name.endswith("cudf_backend")]  # (every module imported: every device function marked)
    calls: dict[str, list[str]] = {name: [] for name in K._IR_INLINE}
    for file in files:
        tree = ast.parse(Path(file).read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and not fn.name.endswith("_gpu"):
                calls_here = [c.func.id for c in ast.walk(fn) if isinstance(c, ast.Call)
                              and isinstance(c.func, ast.Name) and c.func.id in calls]
                for name in calls_here:
                    calls[name].append(f"{Path(file).stem}.{fn.name}")
    assert {"bpe_text", "encode_span", "encode_gap"} <= set(calls)
    assert {"bpe_rows_item", "wp_fused_item", "features_item", "preprocess_item"} <= K.BODIES & K._IR_INLINE
    assert {name: sites for name, sites in calls.items() if len(sites) != (0 if name in K.BODIES else 1)} == {}
    assert K._compiled("encode_gap", "cpu").targetoptions.get("inline") == "always"
    assert "inline" not in K._compiled("encode_piece", "cpu").targetoptions


def test_run_cpu_chunked_runs_every_item_once_and_a_slow_thread_takes_fewer_chunks() -> None:
    """The chunked runner (the BPE encode kernel's): every item exactly once, slots in range, the chunks handed out
    as threads finish (thread 1 slowed down here: thread 0, the caller, takes the rest)."""
    import threading
    import time

    saved = K.get_num_threads()
    K.set_num_threads(2)
    try:
        seen: list[tuple[int, int, int, int]] = []
        lock = threading.Lock()

        def kernel(slot: int, slots: int, chunk: int, chunks: int, n: int, out: np.ndarray) -> None:
            if slot == 1:
                time.sleep(0.05)
            for t in range(chunk, n, chunks):
                out[t] += 1
            with lock:
                seen.append((slot, slots, chunk, chunks))

        out = np.zeros(1000, dtype=np.int64)
        K.run_cpu_chunked(kernel, 1000, out)
        assert (out == 1).all()
        chunks = seen[0][3]
        assert chunks == 2 * K.CHUNKS_PER_THREAD and sorted(c for _, _, c, _ in seen) == list(range(chunks))
        assert {(s, k) for s, k, _, _ in seen} <= {(0, 2), (1, 2)}
        assert sum(s == 0 for s, *_ in seen) > sum(s == 1 for s, *_ in seen)
        few = np.zeros(5, dtype=np.int64)  # a small batch: one call in the calling thread
        seen.clear()
        K.run_cpu_chunked(kernel, 5, few)
        assert (few == 1).all() and seen == [(0, 1, 0, 1)]
    finally:
        K.set_num_threads(saved)



def _twice_cpu(share, shares, n, x, out):  # noqa: ANN001, ANN202
    for i in range(share, n, shares):
        out[i] = 2 * x[i]


def test_cpu_entry_is_the_compiled_kernel_and_counts_its_launch() -> None:
    """kernels.cpu_entry: the dispatcher's compiled entry for the exact argument types, called with no dispatch
    (the BPE one-text path); launch_entry counts it as launch() does; the same types give the same entry."""
    pair = (K.cpu(_twice_cpu), None)
    x, out = np.arange(5, dtype=np.int64), np.zeros(5, dtype=np.int64)
    entry = K.cpu_entry(pair, 0, 1, 5, x, out)
    assert entry is K.cpu_entry(pair, 0, 1, 5, x[:3], out)  # (the same types)
    assert entry is next(iter(pair[0].overloads.values())).entry_point
    K.COUNTS.clear()
    K.launch_entry(entry, [0, 1, 5, x, out])
    assert out.tolist() == [0, 2, 4, 6, 8]
    assert K.COUNTS["launch"] == 1 and K.COUNTS["launch_cpu"] == 1


def test_cpu_entry_cache_keys_every_type_numba_distinguishes() -> None:
    """cpu_entry keeps entries by a cheap key of the argument types (numba's typing took ~1 ms a call): an array of
    another dtype, layout, writability, dimensions or alignment, a tuple of other items, an int out of int64's range
    each get numba's own entry for their types, never one compiled for other types."""
    pair = (K.cpu(_twice_cpu), None)
    out = np.zeros(8, dtype=np.int64)
    ro = np.arange(8, dtype=np.int64)
    ro.flags.writeable = False
    unaligned = np.zeros(8 * 8 + 1, dtype=np.uint8)[1:].view(np.int64)
    assert not unaligned.flags.aligned
    variants = [np.arange(8, dtype=np.int64), np.arange(8, dtype=np.int32), np.arange(16, dtype=np.int64)[::2], ro,
                unaligned, np.arange(8, dtype=np.float64)]
    for x in variants:
        got = K.cpu_entry(pair, 0, 1, 8, x, out)
        want = pair[0].compile(tuple(pair[0].typeof_pyval(a) for a in (0, 1, 8, x, out)))
        assert got is want, x
    assert len({id(K.cpu_entry(pair, 0, 1, 8, x, out)) for x in variants}) >= 5  # (numba may share one overload)
    assert K._type_key(pair[0], 1 << 63) != K._type_key(pair[0], 8)  # (uint64 for numba)
    assert K._type_key(pair[0], (1, np.zeros(2))) != K._type_key(pair[0], (1, np.zeros(2, np.float32)))



_BPE_RETURN_TYPES = """
import json, sys
from triton_textops.ops.core import kernels as K
from triton_textops.ops.bpe.tokenizer import BPETokenizer

tok = BPETokenizer.from_tiktoken(sys.argv[1], encoding="cl100k_base")
tok.encode(["h\u00e9llo w\u00f6rld 123", "x y"])
tok.encode_rows(["a b"], max_length=4)
bind = tok._encode[1].bind  # (the rank file's variant: its merge step compiled with span_pair)
print(json.dumps({name: [str(c.signature.return_type) for c in K._compiled(name, "cpu", *(
                         [K._bind_for(fn, bind)] if K._bind_for(fn, bind) else [])).overloads.values()]
                  for name, fn in K._DEVICE.items() if fn.__module__.startswith("triton_textops.ops.bpe")
                  and name not in K._IR_INLINE}))
"""


@pytest.mark.slow
def test_bpe_device_functions_return_no_floats(tmp_path):
    """numba types ``int()`` of a uint8 as uint8, and a uint64 joined with an int64 as float64: a device function
    that builds an id from bytes that way returns floats (the two-read lookup once did). Compiled cold (a device
    function is compiled, and so typed, only then: a cached kernel loads without them), every BPE device function
    an encode compiles returns integers or tuples of them."""
    import json

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    rank_file = Path(__file__).parents[1] / "data" / "bpe" / "cl100k_base.tiktoken"
    out = subprocess.run([sys.executable, "-c", _BPE_RETURN_TYPES, str(rank_file)], env=env, capture_output=True,
                         text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    returns = {name: r for name, r in json.loads(out.stdout.strip().splitlines()[-1]).items() if r}
    assert {"lookup", "encode_piece", "bpe_piece", "cache_get", "scan_cl100k"} <= set(returns)
    floats = {name: r for name, r in returns.items() if any("float" in t for t in r)}
    assert not floats
