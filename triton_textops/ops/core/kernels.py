"""Kernels written once in Python and compiled twice by numba: ``njit`` for the CPU, ``cuda.jit`` for the GPU.

How one source serves both targets:

- The per-text / per-word logic lives in plain functions marked :func:`device`. They call each other by
  their module-level names. :func:`cpu` and :func:`gpu` compile a *copy* of such a function whose globals
  map every other ``device`` function to the same target's compiled version (``numba.njit`` on the CPU,
  ``numba.cuda.jit(device=True)`` on the GPU), so the very same code object is compiled for both.
- A kernel is ONE per-item body, a device function ``body(t, *groups)`` (``body(t, slot, slots, *groups)`` for a
  :class:`Chunked` one), and :func:`kernel` generates its two entry points from it: on the GPU a grid-stride loop
  over ``t``, on the CPU a worker thread's share ``share, share + shares, ...`` (the compiled code releases the GIL,
  so :func:`run_cpu` runs the shares on a small thread pool at once). Only these generated loops differ. A kernel
  of uneven items (BPE encode) is :class:`Chunked`: its threads take chunks of the batch as they finish
  (:func:`run_cpu_chunked`); ``slot`` is the CPU worker (its own scratch), ``slots`` 0 on the GPU.
- A kernel's arrays travel as named groups: tuples whose fields each stage module documents once with index
  constants (``TEXT``: data, offsets; a vocabulary's tables; ...), so no entry point takes more than ~12
  arguments; the body unpacks them and calls the stages with plain arrays.
- Under ``NUMBA_ENABLE_CUDASIM=1`` the GPU entry points run in numba-cuda's simulator on NumPy arrays:
  CI, which has no GPU, runs the GPU kernels and compares them with the CPU ones.

Every launch and every device-to-host copy of the ops goes through :func:`launch` (or, for a CPU call whose
argument types are fixed, :func:`launch_entry`) / :func:`to_host`, which count them (:data:`COUNTS`): the tests
assert the launch budget with those counters.
"""

from __future__ import annotations

import functools
import itertools
import types
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numba
import numpy as np
from numba.core import caching as _caching

from triton_textops.ops.core import jitcache

SIMULATOR = bool(numba.config.ENABLE_CUDASIM)
jitcache.install(_caching)  # our kernels' on-disk cache: by the sources' content, not their path (see jitcache)
# GPU placement: on a GPU device, a batch of fewer texts runs on the CPU kernels and only its outputs go up.
# The GPU kernels run one thread per text, and one GPU thread is far slower than a CPU core: a batch of n texts
# takes about one text's serial time on the GPU (the texts run in parallel) and n texts' time shared by the cores
# on the CPU, so below a crossover that grows with the cores the CPU is faster. 64 is an estimate of it for a few
# cores (not yet measured on a GPU); the ``gpu_min_batch`` keyword and model parameter override it (0: always the
# GPU). Figures: benchmarks/RESULTS.md, Design measurements, ops/core/kernels.py: GPU_MIN_BATCH.
GPU_MIN_BATCH = 64
COUNTS: defaultdict[str, int] = defaultdict(int)  # "launch" (and "launch_cpu" / "launch_cuda"), "d2h", "h2d": since
# the last reset (not a Counter: its increments were a visible part of a one-text encode)

_DEVICE: dict[str, Callable] = {}  # name -> plain function, for every @device function
_INLINE: set[str] = set()  # the small hot ones, inlined into their callers on the CPU
_IR_INLINE: set[str] = set()  # the stages of a kernel inlined into their one caller by numba (``inline="ir"``)


def device(fn: Callable | None = None, *, inline: bool | str = False) -> Any:
    """Mark ``fn`` as device code: callable from kernels on both targets (returns ``fn`` unchanged).

    ``@device(inline=True)`` is for small functions called per word or per piece: on the CPU LLVM inlines
    them into their callers (``forceinline``). Otherwise a call between separately compiled njit
    functions that is over LLVM's inlining threshold passes every array argument field by field on the
    stack, as costly as the small work it calls (a hash lookup): inlined, the hot kernels run faster at the
    same compile time. numba's own ``inline="always"`` is as fast but compiles longer. On the GPU, NVVM
    inlines device functions itself. (Figures: benchmarks/RESULTS.md, Design measurements,
    ops/core/kernels.py: device(inline=True).)

    ``@device(inline="ir")`` is for a stage of a kernel: a large function called from one place between the kernel
    and the device functions it calls (BPE's ``bpe_text`` -> ``encode_span`` -> ``encode_gap``). numba inlines
    it into its caller's numba IR (``inline="always"``), so it is never compiled on its own. Compiled on its own,
    each function is a library with its callees linked in, and numba optimizes and emits machine code for the
    whole library again at every level of the chain (a large part of the BPE kernel's cold compile). Inlined, the
    first encode compiles sooner and the kernel runs faster (fewer calls passing the table tuples field by field).
    Only for a function with one call site: each call site types and compiles its own copy (numba typing a larger
    function costs more, so inlining the merge step as well saved LLVM time but not total time).
    (Figures: benchmarks/RESULTS.md, Design measurements, ops/core/kernels.py: device(inline="ir").)"""

    if inline not in (False, True, "ir"):
        raise ValueError(f"device(inline=...): False, True or 'ir', not {inline!r}")

    def mark(f: Callable) -> Callable:
        known = _DEVICE.get(f.__name__)
        if known is not None and known.__module__ != f.__module__:  # (a module reloaded may mark its own again)
            raise RuntimeError(f"device function {f.__name__} of {f.__module__} has the name of one in "
                               f"{known.__module__}: kernels bind device functions by name")
        _DEVICE[f.__name__] = f
        if inline == "ir":
            _IR_INLINE.add(f.__name__)
        elif inline:
            _INLINE.add(f.__name__)
        return f

    return mark if fn is None else mark(fn)


Bind = tuple[tuple[str, str], ...]  # a kernel variant: (device function name, the device function it calls instead)


@functools.cache
def _reach(name: str) -> frozenset[str]:
    """The device functions that device function ``name`` calls, directly or not (itself included)."""
    seen = {name}
    todo = [name]
    while todo:
        for callee in _DEVICE[todo.pop()].__code__.co_names:
            if callee in _DEVICE and callee not in seen:
                seen.add(callee)
                todo.append(callee)
    return frozenset(seen)


def _bind_for(fn: Callable, bind: Bind) -> Bind:
    """The part of ``bind`` that changes what ``fn`` calls (none: every variant shares one compiled ``fn``),
    through the functions bound in as well (a binding inside one that another binding brings in)."""
    calls = set()
    for name in fn.__code__.co_names:
        if name in _DEVICE:
            calls |= _reach(name)
    while True:
        more = set().union(*(_reach(b) for a, b in bind if a in calls)) - calls
        if not more:
            return tuple((a, b) for a, b in bind if a in calls)
        calls |= more


def _clone(fn: Callable, target: str, bind: Bind = ()) -> Callable:
    """``fn`` with a globals dict in which every device function is bound to ``target``'s compiled one (the
    function ``bind`` names instead, in ``fn`` and everything it calls). A variant gets its own qualified name,
    which numba's on-disk cache keys by."""
    bind = _bind_for(fn, bind)
    instead = dict(bind)
    glb = dict(fn.__globals__)
    for name in fn.__code__.co_names:
        if name in _DEVICE and _DEVICE[name] is not fn:
            real = instead.get(name, name)
            sub = _bind_for(_DEVICE[real], bind)  # (no binding: the 2-argument call, one cache key per function)
            glb[name] = _compiled(real, target, sub) if sub else _compiled(real, target)
    clone = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__qualname__ = fn.__qualname__ + "".join(f"__{b}" for _, b in bind)
    clone.__module__ = fn.__module__
    return clone


def _wide(t: Any) -> Any:
    """The type a device function is compiled for, given an argument's type: integer constants and
    integers narrower than 64 bits as int64, anything else as it is."""
    t = numba.types.unliteral(t)
    if isinstance(t, numba.types.Integer) and (t.signed or t.bitwidth < 64):
        return numba.types.int64
    return t


def _one_signature(disp: Any) -> Any:
    """Make the CPU dispatcher ``disp`` compile one version for every caller: numba would compile another
    for each literal constant (``find_bytes(..., 0, ...)``) and each integer width a call site passes, each one
    more cold compilation of the same code (figures: benchmarks/RESULTS.md, Design measurements,
    ops/core/kernels.py: _one_signature)."""
    get = disp.get_call_template

    def get_call_template(args: tuple, kws: dict) -> Any:
        return get(tuple(_wide(a) for a in args), kws)

    disp.get_call_template = get_call_template
    return disp


@functools.cache
def _compiled(name: str, target: str, bind: Bind = ()) -> Callable:
    fn = _clone(_DEVICE[name], target, bind)
    if target == "cpu":
        # no NRT: device code never allocates, and calls then skip reference counting. No Python or C
        # wrapper: only kernels call device functions, and each wrapper (unboxing every array argument)
        # was compiled again in every caller's module, a share of every cold compile
        if name in _IR_INLINE:  # (never compiled on its own: no cache, no signature)
            return numba.njit(inline="always", nogil=True, _nrt=False, no_cpython_wrapper=True,
                              no_cfunc_wrapper=True)(fn)
        return _one_signature(numba.njit(cache=True, nogil=True, _nrt=False, forceinline=name in _INLINE,
                                         no_cpython_wrapper=True, no_cfunc_wrapper=True)(fn))
    from numba import cuda  # noqa: PLC0415

    return cuda.jit(device=True)(fn)


def cpu(fn: Callable, bind: Bind = ()) -> Callable:
    """The CPU entry point of a kernel: ``njit(nogil=True, cache=True)`` of ``fn(share, shares, n, ...)``, its
    device calls bound to their CPU versions (``bind``: a variant, see :func:`variant`).

    Why not ``parallel=True`` with ``prange``: parfor lowering adds much to a kernel's compile time (the
    whole load must stay under ~15 s), and waking numba's pool for a batch of one text cost more than the
    text. Shares run on :func:`run_cpu`'s threads instead, with the same number of threads numba would use by
    default. Compiled without numba's reference counting (``_nrt=False``): kernels never allocate, and every
    call of a device function then skips an incref/decref per array argument, a large part of a short call
    (figures: benchmarks/RESULTS.md, Design measurements, ops/core/kernels.py: cpu)."""
    return numba.njit(nogil=True, cache=True, _nrt=False, no_cfunc_wrapper=True)(_clone(fn, "cpu", bind))


_THREADS = [numba.config.NUMBA_NUM_THREADS]
_POOL: list[Any] = [None]
PARALLEL_MIN_ITEMS = 8  # below this a batch runs in the calling thread (handing work over costs more than it saves)


def set_num_threads(n: int | None) -> None:
    """Threads of the CPU kernels (``None``: numba's default, the number of cores)."""
    _THREADS[0] = numba.config.NUMBA_NUM_THREADS if n is None else max(1, int(n))


def get_num_threads() -> int:
    return _THREADS[0]


def _pool(workers: int) -> Any:
    """The kernels' thread pool, with at least ``workers`` threads."""
    pool = _POOL[0]
    if pool is None or pool._max_workers < workers:
        from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

        pool = _POOL[0] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="textops-kernel")
    return pool


def run_cpu(kernel: Callable, n: int, *args: Any) -> None:
    """Run a CPU entry point over items ``0 .. n-1``: in the calling thread for small batches, else in
    ``get_num_threads()`` interleaved shares at once (the compiled code holds no GIL)."""
    k = min(_THREADS[0], n)
    if k <= 1 or n < PARALLEL_MIN_ITEMS:
        kernel(0, 1, n, *args)
        return
    shares = [_pool(k - 1).submit(kernel, j, k, n, *args) for j in range(1, k)]
    kernel(0, k, n, *args)
    for f in shares:
        f.result()


CHUNKS_PER_THREAD = 8  # chunks of a batch per thread for a chunked kernel (each chunk: one call, with its overhead)
MIN_CHUNK_ITEMS = 16  # ... but no fewer items per chunk than this


def run_cpu_chunked(kernel: Callable, n: int, *args: Any) -> None:
    """:func:`run_cpu` for a kernel of :class:`Chunked`: ``kernel(slot, slots, chunk, chunks, n, *args)`` runs items
    ``chunk, chunk + chunks, ...`` on worker ``slot`` of ``slots`` (its own scratch). The threads take the chunks
    one after the other as they finish, so a thread slowed down (a core taken by another process, longer texts)
    does less of the batch instead of holding the whole call up; fixed shares waited for the slowest thread."""
    k = min(_THREADS[0], n)
    if k <= 1 or n < PARALLEL_MIN_ITEMS:
        kernel(0, 1, 0, 1, n, *args)
        return
    chunks = max(k, min(k * CHUNKS_PER_THREAD, n // MIN_CHUNK_ITEMS))
    ticket = itertools.count()  # next() of a count is atomic under the GIL

    def work(slot: int) -> None:
        while (c := next(ticket)) < chunks:
            kernel(slot, k, c, chunks, n, *args)

    others = [_pool(k - 1).submit(work, j) for j in range(1, k)]
    work(0)
    for f in others:
        f.result()


class Chunked(tuple):
    """A kernel pair (CPU entry, GPU entry) whose CPU entry is chunked (:func:`run_cpu_chunked`)."""


class _LazyGpu:
    """The GPU entry point of a kernel, compiled (``cuda.jit``) on first use: importing the ops never
    needs numba-cuda."""

    def __init__(self, fn: Callable, bind: Bind = ()) -> None:
        self.fn = fn
        self.bind = bind
        self._k: Any = None

    def get(self) -> Any:
        if self._k is None:
            from numba import cuda  # noqa: PLC0415

            try:  # numba-cuda's own cache machinery (older ones use numba's, done at import)
                from numba.cuda.core import caching as cuda_caching  # noqa: PLC0415

                jitcache.install(cuda_caching)
            except ImportError:
                pass
            self._k = cuda.jit(cache=not SIMULATOR)(_clone(self.fn, "gpu", self.bind))
        return self._k


def gpu(fn: Callable, bind: Bind = ()) -> _LazyGpu:
    """The GPU entry point of a kernel (``numba.cuda.jit``), its device calls bound to their GPU versions."""
    return _LazyGpu(fn, bind)


@functools.cache
def variant(cpu_fn: Callable, gpu_fn: Callable, bind: Bind, chunked: bool = False) -> tuple[Callable, _LazyGpu]:
    """A kernel pair in which the device function named ``a`` is replaced by the one named ``b`` for each
    ``(a, b)`` of ``bind``, in the entry points and everything they call: a choice fixed per tokenizer (its
    pre-tokenizer, its normalizer) made at compile time, so a kernel compiles only the code it runs. Made once
    per ``bind``; functions that reach no replaced name are shared by all variants. ``chunked``: the CPU entry
    takes ``(slot, slots, chunk, chunks, n, ...)`` (:func:`run_cpu_chunked`)."""
    pair = (Chunked if chunked else tuple)((cpu(cpu_fn, bind), gpu(gpu_fn, bind)))
    VARIANTS[gpu_fn.__module__ + "." + gpu_fn.__name__ + "".join(f"__{b}" for _, b in bind)] = pair
    return pair


VARIANTS: dict[str, tuple[Callable, _LazyGpu]] = {}  # every kernel variant made so far, by name (tests/ptx)

_LOOP_CPU = """def {name}(share, shares, n, {args}):
    for t in range(share, n, shares):
        {body}(t, {args})
"""
_LOOP_GPU = """def {name}(n, {args}):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        {body}(t, {args})
"""
_CHUNKED_CPU = """def {name}(slot, slots, chunk, chunks, n, {args}):
    for t in range(chunk, n, chunks):
        {body}(t, slot, slots, {args})
"""
_CHUNKED_GPU = """def {name}(n, {args}):
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        {body}(t, 0, 0, {args})
"""


@functools.cache
def loops(body: Callable, chunked: bool = False) -> tuple[Callable, Callable]:
    """The CPU and GPU loops over a kernel's items, generated from its per-item ``body`` (a :func:`device`
    function): plain functions, compiled by :func:`cpu` / :func:`gpu`. They are compiled as code of the body's file
    (at its line: tracebacks and numba's on-disk cache point there), named ``<body>__cpu`` / ``<body>__gpu``."""
    if _DEVICE.get(body.__name__) is not body:
        raise RuntimeError(f"kernel body {body.__name__} must be a @device function")
    BODIES.add(body.__name__)
    code = body.__code__
    lead = 3 if chunked else 1
    params = code.co_varnames[lead:code.co_argcount]
    if code.co_flags & 0x0C or body.__defaults__ or not 0 < len(params) <= MAX_KERNEL_ARGS:
        raise RuntimeError(f"kernel body {body.__name__}: (t{', slot, slots' if chunked else ''}, then 1 to "
                           f"{MAX_KERNEL_ARGS} groups), no defaults, *args or **kwargs")
    try:
        from numba import cuda  # noqa: PLC0415
    except ImportError:  # pragma: no cover - numba without its CUDA target: GPU loops never compiled
        cuda = None
    out = []
    for suffix, tmpl in (("cpu", _CHUNKED_CPU if chunked else _LOOP_CPU), ("gpu", _CHUNKED_GPU if chunked else _LOOP_GPU)):
        name = f"{body.__name__}__{suffix}"
        src = "\n" * (code.co_firstlineno - 1) + tmpl.format(name=name, args=", ".join(params), body=body.__name__)
        glb = {body.__name__: body, "cuda": cuda, "__name__": body.__module__}
        exec(compile(src, code.co_filename, "exec"), glb)  # noqa: S102 - our own template, no outside input
        fn = glb[name]
        fn.__module__ = body.__module__
        fn.__qualname__ = name
        out.append(fn)
    return out[0], out[1]


MAX_KERNEL_ARGS = 12  # groups a kernel body takes after its item arguments
BODIES: set[str] = set()  # the device functions that are a kernel's per-item body (called by its generated loops)


def kernel(body: Callable, bind: Bind = (), chunked: bool = False) -> tuple[Callable, _LazyGpu]:
    """The kernel pair (CPU entry, GPU entry) that runs ``body(t, *groups)`` for items ``t = 0 .. n-1``
    (:func:`loops`), its device calls bound as ``bind`` says (:func:`variant`)."""
    return variant(*loops(body, chunked), bind, chunked)


def cpu_kernel(body: Callable) -> Callable:
    """The CPU entry alone of a kernel that only ever runs on host arrays (no GPU half: nothing for tests/ptx)."""
    return cpu(loops(body)[0])


def threads_per_block() -> int:
    """Threads per block: 128 on a GPU; 32 in the simulator (each simulated thread is a Python thread)."""
    return 32 if SIMULATOR else 128


def launch(target: str, pair: tuple[Callable, _LazyGpu], n: int, *args: Any) -> None:
    """Run kernel ``pair`` (CPU entry, GPU entry) over ``n`` items on ``target`` ("cpu" or "cuda").

    GPU launches go on CuPy's current stream (outside the simulator), so they are ordered with the CuPy
    operations around them and tensors handed over by DLPack need no extra synchronization."""
    COUNTS["launch"] += 1
    COUNTS[f"launch_{target}"] += 1
    if target == "cpu":
        (run_cpu_chunked if isinstance(pair, Chunked) else run_cpu)(pair[0], n, *args)
        return
    kern = pair[1].get()
    tpb = threads_per_block()
    blocks = max(1, min((n + tpb - 1) // tpb, 65535))
    if SIMULATOR:
        kern[blocks, tpb](n, *args)
        return
    import cupy  # noqa: PLC0415
    from numba import cuda  # noqa: PLC0415

    stream = cuda.external_stream(cupy.cuda.get_current_stream().ptr)
    kern[blocks, tpb, stream](n, *args)


def cpu_entry(pair: tuple[Callable, _LazyGpu], *args: Any) -> Callable:
    """The compiled CPU entry of kernel ``pair`` for arguments of exactly the types of ``args`` (the leading item
    arguments included), compiled now if it is not yet: to call through :func:`launch_entry` with no dispatch.
    numba's dispatch types every argument at every call, for the BPE kernel's ~30 arrays as long as the kernel
    takes for a short text. The caller must pass arguments of these types only (numba's entry does not
    check them: an array of another dtype or layout would be read as one of these)."""
    disp = pair[0]
    if not hasattr(disp, "compile"):  # NUMBA_DISABLE_JIT: the Python function
        return disp
    key = (disp, tuple(_type_key(disp, a) for a in args))
    got = _ENTRIES.get(key)
    if got is None:  # (typing ~30 arrays and numba's lookup of the compiled overload: once per key, not a call)
        got = _ENTRIES[key] = disp.compile(tuple(disp.typeof_pyval(a) for a in args))
    return got


_ENTRIES: dict[tuple, Callable] = {}  # (dispatcher, argument type keys) -> compiled entry, for cpu_entry


def _type_key(disp: Any, a: Any) -> Any:
    """What numba's ``typeof`` of ``a`` depends on, cheaply: an array's dtype, dimensions, layout, writability and
    alignment; a tuple's items' keys; a bool, or an int in int64's range, its type; otherwise numba's type."""
    t = type(a)
    if t is np.ndarray:
        f = a.flags
        return a.dtype, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned
    if t is tuple:
        return tuple(_type_key(disp, x) for x in a)
    if t is bool or (t is int and -(1 << 63) <= a < (1 << 63)):
        return t
    return disp.typeof_pyval(a)


def launch_entry(entry: Callable, args: Sequence[Any]) -> None:
    """Call a :func:`cpu_entry` with ``args`` (counted as a CPU launch, as :func:`launch` counts). The arguments
    come as one sequence, which a caller can keep and update between calls: a kernel of ~35 arguments passed as
    ``*args`` through this function would build two tuples a call."""
    COUNTS["launch"] += 1
    COUNTS["launch_cpu"] += 1
    entry(*args)


def to_host(arr: Any, target: str) -> np.ndarray:
    """Copy a kernel's output to the host, counting device-to-host copies (none on the CPU)."""
    if target == "cpu":
        return arr
    COUNTS["d2h"] += 1
    return arr if isinstance(arr, np.ndarray) else arr.get()  # the simulator's "device" arrays are NumPy


def to_device_many(arrays: list[np.ndarray], target: str, xp: Any) -> list[Any]:
    """Host arrays on ``target``'s device as ONE upload (packed into one buffer, 8-byte aligned): the
    outputs of a batch that ran on the CPU kernels for a GPU device."""
    if target == "cpu":
        return list(arrays)
    sizes = [(a.nbytes + 7) // 8 * 8 for a in arrays]
    buf = np.empty(sum(sizes), dtype=np.uint8)
    at = 0
    for a, size in zip(arrays, sizes):
        buf[at : at + a.nbytes] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        at += size
    dev = to_device(buf, target, xp)
    out, at = [], 0
    for a, size in zip(arrays, sizes):
        out.append(dev[at : at + a.nbytes].view(a.dtype).reshape(a.shape))
        at += size
    return out


def to_device(arr: np.ndarray, target: str, xp: Any) -> Any:
    """Upload a host array for a kernel on ``target`` (counted); the simulator needs a writable copy."""
    if target == "cpu":
        return arr
    COUNTS["h2d"] += 1
    if SIMULATOR:
        return arr if arr.flags.writeable else arr.copy()
    return xp.asarray(arr)
