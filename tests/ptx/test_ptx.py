"""Every GPU entry point of the ops through the real CUDA compiler, without a GPU.

Why: the CUDA simulator (tests/sim) runs the GPU kernels as Python; it never types them for the CUDA
target nor lowers them through NVVM, so a kernel that only the simulator accepts, or one that spills
registers to local memory on a real GPU, would pass CI. Here each GPU entry point is compiled as on a
GPU: ``numba.cuda.compile_ptx`` (numba's CUDA typing and lowering, then NVVM from the
``nvidia-cuda-nvcc-cu12`` wheel; NVRTC, from ``nvidia-cuda-nvrtc-cu12``, names the architecture), and
that wheel's ``ptxas -v`` turns the PTX into SASS for sm_80 and sm_90. A test fails on any compile
error, any stack frame or spill, or more registers than :data:`REGISTER_BUDGET`; the registers of each
kernel are printed (``pytest -s`` or ``-rA``).

What is compiled: every :class:`~triton_textops.ops.core.kernels._LazyGpu` that a module of
:mod:`triton_textops.ops` holds (the GPU half of each ``(K.cpu(...), K.gpu(...))`` pair), found by
import, so a new kernel is covered without editing this file; with the argument types the ops really
launch it with, recorded by running the ops once on the CPU with ``kernels.launch`` spied on (the
arrays typed writable and as laid out, as numba-cuda types the CuPy arrays of a GPU launch). A kernel
that the recording run (:func:`_exercise`) never launches fails :func:`test_every_kernel_was_launched`.

Without a driver: numba-cuda's dispatchers ask the current device for its compute capability while
typing a kernel's device-function calls; the test hands them a stand-in device of the compute capability
being compiled for (``numba.cuda.dispatcher.get_current_device``, patched here only). The device
functions are bound through a private cache of ``kernels._compiled``, so nothing compiled here is seen
by the ops' own kernels.

The wheels are in the ``dev`` extra (``make test`` has them); without them the module skips.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import pkgutil
import re
import subprocess
import tempfile
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numba
import pytest

WHEELS = ("nvidia-cuda-nvcc-cu12", "nvidia-cuda-nvrtc-cu12")
BPE_DIR = os.path.join(os.path.dirname(__file__), "..", "data", "bpe")
BPE_VOCAB = os.path.join(BPE_DIR, "qwen.tiktoken")


def _missing() -> str | None:
    """Why the compiler cannot run here, or None."""
    if numba.config.ENABLE_CUDASIM:
        return "the CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1): no real CUDA compiler"
    for name in (*WHEELS, "numba-cuda"):
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            return f"{name} is not installed (pip install -e '.[dev]')"
    return None


if (_why := _missing()) is not None:
    pytest.skip(_why, allow_module_level=True)

from triton_textops.ops.core import kernels as K  # noqa: E402

CCS = ((8, 0), (9, 0))
# Measured on 2026-12-01 with nvidia-cuda-nvcc-cu12 12.9.86 (NVVM + ptxas) and numba-cuda 0.30.4: 40-110
# registers (sm_80 / sm_90): the most FEATURES_FUSED (110 / 96), then ENCODE_FUSED (98 / 96), PRETOKENIZE
# (96 / 96) and PREPROCESS (94 / 94); 0 bytes of stack and spills everywhere. The budget is that max plus a small margin, stopped at
# 128: up to 128 registers a 128-thread block (kernels.threads_per_block) still fits 4 times in an SM's
# 64K registers; one more costs a quarter of the resident warps.
REGISTER_BUDGET = 128
# Over the budget, known and open (issue 49): the BPE encode variant with the compiled regex engine (its Pike VM's
# thread lists and per-text state) used 168 / 148 registers (sm_80 / sm_90) on 2026-12-03; with the assertions
# evaluated once per position into a mask outside the closure, each character decoded once and one closure site,
# 150 / 128 on 2026-12-04, no stack, no spills: on sm_80 a 128-thread block still fits 3 times in an SM, not 4.
# With the anchored DFA beside the VM (regex/dfa.py) 148 / 142 (2026-12-04). A pre-tokenizer whose DFA is complete
# (every real file's: the scanners' patterns, Tekken's, DeepSeek's chain) runs the variant without the VM
# (``__rx_find_dfa``): 125 / 128, within the budget; only a pattern whose failing attempts have no bounded length
# (``\d+x``) gets this one. Held at what it uses, so it cannot grow unnoticed.
# The SentencePiece encode kernel (issue 44) went from within the budget to 136 on sm_80 on 2026-12-04, after two
# changes landed together, not bisected: the merge step it shares with BPE inlined the heap's pair lookups and
# keeps each pair's result (issue 45), and the normalizer gained HF's Precompiled op (issue 44). No stack, no spills.
# Then 139 / 140 on 2026-12-04 when the normalizer program gained the Unicode forms and maps (ops.core.unorm:
# NFKC ... and Lowercase / StripAccents, issue 44), no stack, no spills; 128 / 128 on the branch that recomputed the
# merge cache's hash and the ids base after the merge (issue 44); both together: 137 / 127 (2026-12-04, measured at
# the merge). Held there (open: bring it back under 128 on sm_80).
OVER_BUDGET = {"bpe.encode.bpe_rows_item__gpu__encode_gap_regex__span_pair": 148,
               "sentencepiece.encode.SP_ENCODE": 137}
# The kernels the ops define today (module.tuple): discovery must find at least these.
KNOWN = {
    "wordpiece.pretokenize.PRETOKENIZE",
    "wordpiece.postprocess.ENCODE_ROWS", "wordpiece.postprocess.ENCODE_FUSED", "wordpiece.postprocess.COUNT_PIECES",
    "wordpiece.postprocess.ENCODE_WINDOWS", "wordpiece.postprocess.WRITE_PIECES", "wordpiece.postprocess.PACK_PIECES",
    "features.FEATURES", "features.FEATURES_FUSED",
    "preprocess.PREPROCESS",
    "sentencepiece.unigram.ENCODE", "sentencepiece.unigram.COMPACT",
}


def discover() -> dict[str, K._LazyGpu]:
    """Every GPU entry point held at module level by a module of triton_textops.ops, alone or in a tuple,
    named ``module.NAME`` after the module that defines its function."""
    import triton_textops.ops as ops  # noqa: PLC0415

    found: dict[int, tuple[str, K._LazyGpu]] = {}
    for info in sorted(pkgutil.walk_packages(ops.__path__, ops.__name__ + "."), key=lambda m: m.name):
        try:
            mod = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (cuDF, Dask): such a module defines no kernel today
            continue
        for attr, value in sorted(vars(mod).items()):
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, K._LazyGpu) and item.fn.__module__ == mod.__name__:
                    found.setdefault(id(item), (f"{info.name.removeprefix(ops.__name__ + '.')}.{attr}", item))
    # the BPE encode kernel is made per format (its scanner, NFC or not, a rank file's pair rule: kernels.variant):
    # those _exercise() runs (GPT-2's files: HF merges; the others rank files)
    from triton_textops.ops.bpe.encode import encode_kernels  # noqa: PLC0415
    from triton_textops.ops.bpe.formats import CL100K, GPT2, O200K, QWEN2, REGEX  # noqa: PLC0415

    for family, nfc, ranked in ((GPT2, False, False), (CL100K, False, True), (QWEN2, True, True), (O200K, False, True),
                                (REGEX, False, True), (CL100K, "program", False)):
        encode_kernels(family, nfc, ranked)
    encode_kernels(REGEX, False, True, True)  # (the regex variant without the VM: a complete DFA)
    for name, pair in K.VARIANTS.items():
        found.setdefault(id(pair[1]), (name.removeprefix(ops.__name__ + "."), pair[1]))
    return dict(found.values())


def ccs_of(name: str) -> tuple[tuple[int, int], ...]:
    """The compute capabilities kernel ``name`` is compiled for: all, but the BPE encode variants without NFC
    only the last (each costs ~20 s more per cc; they are the NFC variant less its normalizer and with another
    scanner, and used 106 / 96 registers on 2026-12-01, under the NFC variant's 109 / 102)."""
    return CCS[-1:] if "bpe_rows_item__gpu__pretoken_" in name and "normalize_nfc" not in name else CCS


KERNELS = discover()


def _exercise() -> None:
    """Run every op once on the CPU, with small batches and default options: each launches its kernels."""
    from triton_textops import BertTokenizer, ReadabilityFeatures  # noqa: PLC0415
    from triton_textops.bundled import austen_paragraphs, vocab_path  # noqa: PLC0415
    from triton_textops.ops.preprocess import preprocess  # noqa: PLC0415

    texts = austen_paragraphs()[:12] + ["", "x[SEP]y [MASK] é\u0301 Mr. A. B... c?!"]
    tok = BertTokenizer.from_vocab(vocab_path(), device="cpu")
    tok.encode_rows(texts, max_length=32)  # ENCODE_FUSED
    tok.encode_rows(texts, max_length=32, stride=8, return_overflowing_tokens=True)  # PRETOKENIZE, COUNT, WINDOWS
    pre = tok.pretokenize(texts)
    tok.encode_pretokens(pre, max_length=32)  # ENCODE_ROWS
    pieces, offsets = tok.wordpiece(pre)  # COUNT_PIECES, WRITE_PIECES
    tok.pack(pieces, offsets, max_length=32)  # PACK_PIECES
    r = tok.encode(texts)  # ragged: WRITE_RAGGED
    tok.encode_rows(texts, max_length=32, truncation_side="left")  # ENCODE_LEFT_ROWS
    tok.decode(r.ids, r.offsets)  # the WordPiece decoder
    feats = ReadabilityFeatures.fit(texts, n_common=5, n_rare=5)
    feats.transform(texts)  # FEATURES_FUSED
    feats.transform_pretokens(pre)  # FEATURES
    preprocess(tok, feats, texts, max_length=32)  # PREPROCESS
    from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: PLC0415

    bpe = BPETokenizer.from_tiktoken(BPE_VOCAB, encoding="qwen2")  # the variant with NFC
    r = bpe.encode(texts, allowed_special="all")  # the encode kernel (ragged), COMPACT
    bpe.encode_rows(texts, max_length=16)  # the encode kernel (rows)
    bpe.decode(r.ids, r.offsets, errors=None)  # bpe.decode.DECODE_COUNT, DECODE_WRITE
    for name in ("cl100k_base", "o200k_base"):  # the other scanners' variants
        BPETokenizer.from_tiktoken(os.path.join(BPE_DIR, name + ".tiktoken"), encoding=name).encode(texts)
    BPETokenizer.from_gpt2_files(os.path.join(BPE_DIR, "encoder.json"), os.path.join(BPE_DIR, "vocab.bpe")).encode(
        texts)
    from triton_textops.ops.bpe.regex import BYTE_LEVEL_PATTERN, RegexSplitter  # noqa: PLC0415

    RegexSplitter([(r"\p{N}{1,3}", "MergedWithNext", False), (BYTE_LEVEL_PATTERN, "Isolated", False)],
                  "onig").pre_tokenize(texts)  # bpe.regex.match.PIECES
    for pattern in (r"\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",  # the regex variant without the VM
                    r"\p{L}+|\p{N}+x| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"):  # ... with it (a failing attempt: any length)
        rx = BPETokenizer.from_tiktoken(BPE_VOCAB, pattern=pattern, special_tokens={"<s>": 160000})
        assert rx.splitter.dfa_only == pattern.startswith(r"\p{L}+|\p{N}|")
        rx.encode(texts)
        rx.encode_rows(texts, max_length=16)
    from triton_textops.ops.core.unorm import nfc_normalize  # noqa: PLC0415

    nfc_normalize(texts)  # core.unorm.NFC_KERNEL (the tests' and the table generator's host aid)
    from triton_textops.ops.core.unorm import map_normalize  # noqa: PLC0415

    map_normalize(texts, "lower")  # core.unorm.MAP_KERNEL
    import sys  # noqa: PLC0415

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import bpe_oracles  # noqa: PLC0415
    import sp_oracles  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as d:  # a byte-level BPE file with a normalizer program (normalize_prog)
        bpe_oracles.write_tokenizer_json(Path(d), "gpt2", family_pattern=bpe_oracles.LLAMA3_PATTERN, normalizer={
            "type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]})
        BPETokenizer.from_pretrained(d).encode(texts)

    from triton_textops.ops.sentencepiece.tokenizer import SentencePieceTokenizer  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as d:  # a .model trained here (nmt_nfkc, a user symbol, byte fallback)
        model = sp_oracles.train(Path(d) / "sp.model", byte_fallback=True, user_defined_symbols=["<ud>"])
        sp = SentencePieceTokenizer.from_file(model)
        uni = sp_oracles.train(Path(d) / "uni.model", model_type="unigram", byte_fallback=True)
        SentencePieceTokenizer.from_file(uni).encode(texts)  # sentencepiece.encode.SP_ENCODE_UNIGRAM
    r = sp.encode(texts)  # sentencepiece.encode.SP_ENCODE (ragged), COMPACT
    sp.encode_rows(texts, max_length=16)  # SP_ENCODE (rows)
    sp.decode(r.ids, r.offsets, errors=None)  # sentencepiece.decode.SP_DECODE_COUNT, SP_DECODE_WRITE
    from triton_textops.ops.sentencepiece.unigram import Unigram  # noqa: PLC0415

    Unigram.from_pieces(["<unk>", "a", "ab", "\u2581"], [0.0, -1.0, -1.5, -2.0], unk_id=0).encode(texts)  # ENCODE, COMPACT


def _arg_type(value: Any) -> Any:
    """The numba type a GPU launch gives ``value``: arrays writable (CuPy arrays always are; the CPU path
    may pass read-only views of host buffers), tuples of them likewise, everything else as numba types it."""
    if isinstance(value, tuple):
        return numba.types.Tuple([_arg_type(v) for v in value])
    t = numba.typeof(value)
    if isinstance(t, numba.types.Array) and not t.mutable:
        t = t.copy(readonly=False)
    return t


@pytest.fixture(scope="module")
def signatures() -> dict[str, tuple]:
    """Kernel name -> the GPU signature of its first launch by :func:`_exercise` (``n`` as int64)."""
    recorded: dict[int, tuple] = {}
    real = K.launch

    def spy(target: str, pair: tuple, n: int, *args: Any) -> None:
        recorded.setdefault(id(pair[1]), (numba.types.int64, *map(_arg_type, args)))
        real(target, pair, n, *args)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(K, "launch", spy)
        _exercise()
    return {name: recorded[id(lazy)] for name, lazy in KERNELS.items() if id(lazy) in recorded}


PTXAS_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
PTXAS_REGS = re.compile(r"Used (\d+) registers")


def _ptxas() -> str:
    path = importlib.metadata.distribution(WHEELS[0]).locate_file("nvidia/cuda_nvcc/bin/ptxas")
    return str(path)


def _sass_usage(ptxas: str, ptx: str, cc: tuple[int, int], tmp: str, name: str) -> dict:
    """ptxas -v on ``ptx`` for sm_XY: registers (max over entry functions), the largest stack frame and
    the spill bytes over every function, ptxas's report; or an ``error``."""
    src = os.path.join(tmp, f"{name}.sm_{cc[0]}{cc[1]}.ptx")
    with open(src, "w") as f:
        f.write(ptx)
    gpu = f"sm_{cc[0]}{cc[1]}"
    r = subprocess.run([ptxas, "-v", "--gpu-name", gpu, src, "-o", src[:-4] + ".cubin"],
                       capture_output=True, text=True, timeout=300)
    report = r.stdout + r.stderr
    regs = [int(m) for m in PTXAS_REGS.findall(report)]
    frames = [tuple(map(int, m)) for m in PTXAS_STACK.findall(report)]
    if r.returncode or not regs or not frames:
        return {"error": f"ptxas -v --gpu-name {gpu} failed (exit {r.returncode}):\n{report}"}
    return {"registers": max(regs), "stack": max(f[0] for f in frames),
            "spill_stores": sum(f[1] for f in frames), "spill_loads": sum(f[2] for f in frames), "report": report}


@pytest.fixture(scope="module")
def usage(signatures: dict[str, tuple]) -> dict[tuple[tuple[int, int], str], dict]:
    """(cc, kernel name) -> :func:`_sass_usage`'s result, or ``{"error": ...}`` when it did not compile.

    Each kernel is compiled once per compute capability; ptxas runs in the background while the next
    kernel compiles. The device functions are typed once, for the first cc (NVVM, given the whole module,
    compiles them again for each)."""
    from numba import cuda  # noqa: PLC0415
    from numba.cuda import dispatcher  # noqa: PLC0415

    ptxas = _ptxas()
    results: dict = {}
    pending = {}
    current = [CCS[0]]
    with tempfile.TemporaryDirectory(prefix="textops-ptx-") as tmp, ThreadPoolExecutor(2) as pool, \
            pytest.MonkeyPatch.context() as mp:
        # no driver: the device-function dispatchers ask the current device for its compute capability
        mp.setattr(dispatcher, "get_current_device", lambda: types.SimpleNamespace(compute_capability=current[0]))
        # device functions bound afresh (kernels._clone looks _compiled up at call time): not the ops' own
        mp.setattr(K, "_compiled", functools.cache(K._compiled.__wrapped__))
        for cc in CCS:
            current[0] = cc
            for name, lazy in KERNELS.items():
                if name not in signatures or cc not in ccs_of(name):
                    continue
                start = time.perf_counter()
                try:
                    ptx, _ = cuda.compile_ptx(K._clone(lazy.fn, "gpu", lazy.bind), signatures[name], cc=cc)
                except Exception as e:  # noqa: BLE001 - any compile error is the test's finding
                    results[cc, name] = {"error": f"compile_ptx failed for {cc}: {type(e).__name__}: {e}"}
                    continue
                results[cc, name] = {"compile_s": time.perf_counter() - start}
                pending[cc, name] = pool.submit(_sass_usage, ptxas, ptx, cc, tmp, name)
        for key, fut in pending.items():
            results[key].update(fut.result())
    return results


def _table(usage: dict) -> str:
    names = sorted({name for _, name in usage})
    head = f"{'kernel':<26}" + "".join(f"{f'sm_{cc[0]}{cc[1]} regs':>12}{'stack':>7}{'spills':>8}" for cc in CCS)
    lines = [f"ptxas -v ({_ptxas()}), register budget {REGISTER_BUDGET}:", head]
    for name in names:
        row = f"{name:<26}"
        for cc in CCS:
            u = usage.get((cc, name), {})
            if cc not in ccs_of(name):
                row += f"{'-':>12}{'':>7}{'':>8}"
            elif "registers" in u:
                row += f"{u['registers']:>12}{u['stack']:>7}{u['spill_stores'] + u['spill_loads']:>8}"
            else:
                row += f"{'ERROR':>12}{'':>7}{'':>8}"
        lines.append(row)
    versions = ", ".join(f"{w} {importlib.metadata.version(w)}" for w in (*WHEELS, "numba-cuda"))
    lines.append(f"({versions})")
    return "\n".join(lines)


def test_discovery_finds_the_ops_kernels():
    missing = KNOWN - set(KERNELS)
    assert not missing, f"GPU entry points not found by discovery: {sorted(missing)}"


def test_every_kernel_was_launched(signatures):
    missing = sorted(set(KERNELS) - set(signatures))
    assert not missing, (f"no launch of {missing} was recorded: make _exercise() in {__file__} call the op "
                         "that launches it, so its GPU entry point is compiled here")


def test_register_table(usage):
    """The registers, stack and spills of every kernel, printed (pytest -s / -rA)."""
    print()
    print(_table(usage))


@pytest.mark.parametrize(("name", "cc"), [(name, cc) for name in sorted(KERNELS) for cc in ccs_of(name)],
                         ids=[f"{name}-sm_{cc[0]}{cc[1]}" for name in sorted(KERNELS) for cc in ccs_of(name)])
def test_compiles_without_spills(usage, signatures, cc, name):
    if name not in signatures:
        pytest.fail(f"{name} was never launched by _exercise(): nothing to compile (see test_every_kernel_was_launched)")
    u = usage[cc, name]
    assert "error" not in u, u["error"]
    print(f"{name} sm_{cc[0]}{cc[1]}: {u['registers']} registers, {u['stack']} bytes stack, "
          f"{u['spill_stores']}/{u['spill_loads']} bytes spill stores/loads, compiled in {u['compile_s']:.1f} s")
    assert u["stack"] == 0 and u["spill_stores"] == 0 and u["spill_loads"] == 0, u["report"]
    budget = OVER_BUDGET.get(name, REGISTER_BUDGET)
    assert u["registers"] <= budget, (
        f"{name} uses {u['registers']} registers on sm_{cc[0]}{cc[1]}, over the budget of {budget}:\n"
        + u["report"])
