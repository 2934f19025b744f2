"""Byte-level BPE speed: our BPETokenizer against tiktoken, HF tokenizers, fastokens and gigatoken, in one run.

Engines take turns (round-robin per repeat) on the same batches; each repeat builds fresh ("cold") instances, since
fastokens and gigatoken cache pre-tokens per instance (``--warm`` also times re-encoding on one instance). Every
engine's ids are checked equal to tiktoken's before timing. Prints MB/s (batch 32 / 512 / whole corpus) and us per
text (batch 1), best of ``--repeats`` with the range, and each engine's ratio to ours, plus the threads each used.

    python benchmarks/bpe.py [--vocab cl100k_base o200k_base gpt2] [--repeats 5] [--warm]
    python benchmarks/bpe.py --vocab cl100k_base o200k_base qwen2 llama3 --sets english cjk thai korean code base64
        # long pre-tokens (benchmarks/bpe_texts.py): scripts without spaces, identifiers, base64
    python benchmarks/bpe.py --gpu     # ours on the GPU against ours on the CPU (a lent GPU machine; no peers)
    python benchmarks/bpe.py --load    # our load time: cold (empty numba cache) and cached, fresh processes
    python benchmarks/bpe.py --fresh   # one text as a served model meets it: each engine loaded in a fresh process,
        # then the first 200 texts one at a time (then the next 200); engines take turns, a process each
    python benchmarks/bpe.py --load --python ENV/bin/python   # ... in a served model's environment, e.g. one
        # built from this checkout by `envs/pack_env.sh --kind cpu --dir -o ENV` (numpy, numba and ours only)
    python benchmarks/bpe.py --load --python ENV/bin/python --relocate   # ... each load from a copy of ENV at a
        # new path: a tarball EXECUTION_ENV_PATH, which Triton extracts anew at every server start
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
THREADS = os.cpu_count() or 1
os.environ.setdefault("RAYON_NUM_THREADS", str(THREADS))

import bpe_oracles as O  # noqa: E402
import bpe_texts as T  # noqa: E402
from _common import austen, hf_file_peers, ids_of, machine, time_turns  # noqa: E402

from triton_textops.ops.bpe.tokenizer import BPETokenizer  # noqa: E402
from triton_textops.ops.core import kernels as K  # noqa: E402

# real sentences in 12 languages, mixed into paragraphs of ~600 bytes (no multilingual corpus ships here)
MULTI = [
    "The quick brown fox jumps over the lazy dog while the children watch from the garden.",
    "Le renard brun rapide saute par-dessus le chien paresseux pendant que les enfants regardent.",
    "Der schnelle braune Fuchs springt über den faulen Hund, während die Kinder im Garten zusehen.",
    "El rápido zorro marrón salta sobre el perro perezoso mientras los niños miran desde el jardín.",
    "Быстрая коричневая лиса прыгает через ленивую собаку, а дети смотрят из сада.",
    "敏捷的棕色狐狸跳过了懒狗，孩子们在花园里看着。这是一个简单的句子。",
    "素早い茶色の狐が怠け者の犬を飛び越え、子供たちは庭から見ている。",
    "빠른 갈색 여우가 게으른 개를 뛰어넘고 아이들은 정원에서 지켜본다.",
    "الثعلب البني السريع يقفز فوق الكلب الكسول بينما يشاهد الأطفال من الحديقة.",
    "तेज़ भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है और बच्चे बगीचे से देखते हैं।",
    "Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο ενώ τα παιδιά κοιτούν.",
    "จิ้งจอกสีน้ำตาลกระโดดข้ามสุนัขขี้เกียจขณะที่เด็กๆ ดูอยู่ในสวน 🙂👍🏽",
]


def multilingual(n: int = 3000) -> list[str]:
    import random  # noqa: PLC0415

    rng = random.Random(7)
    return [" ".join(rng.choice(MULTI) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def engines(name: str) -> dict[str, tuple[Callable[[], object], Callable, Callable]]:
    """name -> (make a fresh instance, encode a batch, encode one text) for each installed engine. ``llama3``: a
    Llama-3-style tokenizer.json (cl100k's ranks as ranked merges, ``ignore_merges``, its Split regex) for every
    engine that reads one (ours then merges by (left id, right id), not by the pair's bytes); ids checked against
    tiktoken's cl100k_base, which it equals."""
    if name == "llama3":
        return _llama3_engines()
    path = O.DATA / (O.RANK_FILES[name] or "")
    out: dict[str, tuple] = {}
    if name == "gpt2":
        out["ours"] = (lambda: BPETokenizer.from_gpt2_files(O.DATA / "encoder.json", O.DATA / "vocab.bpe"),
                       lambda t, xs: t.encode(xs), lambda t, x: t.encode([x]))
    else:
        out["ours"] = (lambda: BPETokenizer.from_tiktoken(path, encoding=name),
                       lambda t, xs: t.encode(xs), lambda t, x: t.encode([x]))

    def tk() -> object:
        O.tiktoken_encoding.cache_clear()
        return O.tiktoken_encoding(name)

    out["tiktoken"] = (tk, lambda e, xs: e.encode_ordinary_batch(xs, num_threads=THREADS),
                       lambda e, x: e.encode_ordinary(x))
    try:
        from tokenizers import Tokenizer  # noqa: PLC0415

        tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"bpe-bench-{name}"
        if name == "gpt2":
            from tokenizers import ByteLevelBPETokenizer  # noqa: PLC0415

            tmp.mkdir(parents=True, exist_ok=True)
            ByteLevelBPETokenizer(str(O.DATA / "encoder.json"), str(O.DATA / "vocab.bpe")).save(str(tmp / "t.json"))
            hf_file = tmp / "t.json"
        else:
            pat = {"cl100k_base": O.LLAMA3_PATTERN, "o200k_base": O.F._O200K, "qwen2": O.TIKTOKEN_PATTERNS["qwen2"]}[name]
            hf_file = O.write_tokenizer_json(tmp, name, family_pattern=pat)
        out["hf-tokenizers"] = (lambda: Tokenizer.from_file(str(hf_file)),
                                lambda t, xs: t.encode_batch(xs, add_special_tokens=False),
                                lambda t, x: t.encode(x, add_special_tokens=False))
    except ImportError:
        pass
    try:
        import fastokens  # noqa: PLC0415

        make = (lambda: fastokens.Tokenizer.from_tiktoken(str(path), encoding=name)) if name != "gpt2" else \
            (lambda: fastokens.Tokenizer.from_file(str(hf_file)))
        out["fastokens"] = (make, lambda t, xs: t.encode_batch(xs, add_special_tokens=False),
                            lambda t, x: t.encode(x, add_special_tokens=False))
    except ImportError:
        pass
    try:
        import gigatoken  # noqa: PLC0415

        make = (lambda: gigatoken.Tokenizer.from_tiktoken(str(path))) if name != "gpt2" else \
            (lambda: gigatoken.Tokenizer(str(hf_file)))
        out["gigatoken"] = (make, lambda t, xs: t.encode_batch(xs), lambda t, x: t.encode(x))
    except ImportError:
        pass
    return out


def _llama3_engines() -> dict[str, tuple[Callable[[], object], Callable, Callable]]:
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / "bpe-bench-llama3"
    hf_file = O.write_tokenizer_json(tmp, "cl100k_base", family_pattern=O.LLAMA3_PATTERN)
    out: dict[str, tuple] = {"ours": (lambda: BPETokenizer.from_file(hf_file), lambda t, xs: t.encode(xs),
                                      lambda t, x: t.encode([x]))}
    out.update(hf_file_peers(hf_file))
    return out


def run(name: str, corpus: str, texts: list[str], repeats: int, warm: bool, only: list[str] | None = None) -> None:
    eng = {e: v for e, v in engines(name).items() if not only or e in only}
    ref = O.tiktoken_encoding("cl100k_base" if name == "llama3" else name).encode_ordinary_batch(texts[:512])
    for e, (make, enc, _) in eng.items():
        got = ids_of(enc(make(), texts[:512]))
        if got != ref:
            print(f"  !! {e} differs from tiktoken on {sum(a != b for a, b in zip(got, ref))} texts: not timed")
    times, nbytes = time_turns(eng, texts, repeats, warm)
    print(f"\n{name} / {corpus}: {len(texts)} texts, {nbytes['all'] / 1e6:.2f} MB; best of {repeats} [range]")
    cols = ["1", "32", "512", "all"] + (["warm"] if warm else [])
    print(f"  {'engine':14s} " + " ".join(f"{c:>22s}" for c in ["us/text (b=1)", "MB/s b=32", "MB/s b=512",
                                                                    "MB/s corpus"] + (["MB/s warm"] if warm else [])))
    ours = {c: min(times[("ours", c)]) for c in cols}
    for e in eng:
        cells = []
        for c in cols:
            ts = times[(e, c)]
            if c == "1":
                cells.append(f"{min(ts) * 1e6:7.1f} [{min(ts) * 1e6:.0f}-{max(ts) * 1e6:.0f}] {ours[c] / min(ts):4.2f}x")
            else:
                nb = nbytes["all" if c == "warm" else c]
                cells.append(f"{nb / min(ts) / 1e6:6.1f} [{nb / max(ts) / 1e6:.0f}-{nb / min(ts) / 1e6:.0f}] "
                             f"{ours[c] / min(ts):4.2f}x")
        print(f"  {e:14s} " + " ".join(f"{c:>22s}" for c in cells))
    print("  (ratio: ours' time / the engine's time; > 1 means the engine is faster; b=1: a fresh instance made late in"
          " a long process, after batches of every engine: gigatoken's time there moved 3-10 us on cl100k with what"
          " ran before it; --fresh times one text as a served model meets it)")


def gpu_run(name: str, texts: list[str], repeats: int) -> None:
    """Our encode (ragged) and encode_rows (max_length 128) on the GPU vs the CPU kernels, batch 512 and all."""
    path = O.DATA / O.RANK_FILES[name]
    cpu = BPETokenizer.from_tiktoken(path, encoding=name, device="cpu")
    gpu = BPETokenizer.from_tiktoken(path, encoding=name, device="cuda")
    import cupy  # noqa: PLC0415

    for size in (512, len(texts)):
        batch = texts[:size]
        nb = sum(len(t.encode()) for t in batch)
        best = {}
        for label, tok in (("cpu", cpu), ("gpu", gpu)):
            for what in ("encode", "rows"):
                ts = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    if what == "encode":
                        tok.encode(batch, gpu_min_batch=0)
                    else:
                        tok.encode_rows(batch, max_length=128, gpu_min_batch=0)
                    cupy.cuda.get_current_stream().synchronize()
                    ts.append(time.perf_counter() - t0)
                best[(label, what)] = min(ts)
        for what in ("encode", "rows"):
            c, g = best[("cpu", what)], best[("gpu", what)]
            print(f"{name} batch {size} {what}: CPU {nb / c / 1e6:.1f} MB/s, GPU {nb / g / 1e6:.1f} MB/s, GPU/CPU {c / g:.2f}x")


FRESH_SCRIPT = '''
import sys, time
sys.path.insert(0, sys.argv[4])
import bpe as B
name, corpus, engine = sys.argv[1:4]
texts = (B.austen() if corpus == "english" else B.multilingual())[:400]
make, _, enc1 = B.engines(name)[engine]
inst = make()
out = []
for part in (texts[:200], texts[200:]):
    t0 = time.perf_counter()
    for x in part:
        enc1(inst, x)
    out.append((time.perf_counter() - t0) / len(part))
print(*out)
'''


def fresh_one(name: str, corpus: str, repeats: int) -> None:
    """One text at a time as a served model meets it: each engine made in a fresh process (a Triton model loads in
    its own stub process), its first 200 texts timed, then the next 200; engines take turns, a process each. The
    in-run batch-1 column (:func:`run`) makes each engine's instance late in a long process, after batches of its
    own and of the other engines; this one starts from nothing, as after a server start."""
    import subprocess  # noqa: PLC0415

    names = list(engines(name))
    times: dict[str, list[list[float]]] = {e: [] for e in names}
    for _ in range(repeats):
        for e in names:  # engines take turns
            out = subprocess.run([sys.executable, "-c", FRESH_SCRIPT, name, corpus, e, str(ROOT / "benchmarks")],
                                 capture_output=True, text=True, check=True).stdout.split()
            times[e].append([float(x) for x in out])
    print(f"\n{name} / {corpus}: one text in a fresh process, us/text, best of {repeats} [range]")
    print(f"  {'engine':14s} {'texts 1-200':>24s} {'texts 201-400':>24s}")
    ours = [min(r[k] for r in times["ours"]) for k in (0, 1)]
    for e in names:
        cells = []
        for k in (0, 1):
            ts = [r[k] for r in times[e]]
            cells.append(f"{min(ts) * 1e6:6.1f} [{min(ts) * 1e6:.1f}-{max(ts) * 1e6:.1f}] {ours[k] / min(ts):4.2f}x")
        print(f"  {e:14s} " + " ".join(f"{c:>24s}" for c in cells))
    print("  (ratio: ours' time / the engine's time; > 1 means the engine is faster)")


LOAD_SCRIPT = '''
import sys, time
t0 = time.perf_counter()
from triton_textops.ops.bpe.tokenizer import BPETokenizer
import bpe_oracles as O
t1 = time.perf_counter()
name = sys.argv[1]
if name == "gpt2":
    tok = BPETokenizer.from_gpt2_files(O.DATA / "encoder.json", O.DATA / "vocab.bpe")
else:
    tok = BPETokenizer.from_tiktoken(O.DATA / O.RANK_FILES[name], encoding=name)
t2 = time.perf_counter()
tok.encode(["Hello, world! 123"])
t3 = time.perf_counter()
print(f"{t3 - t0:.2f} {t1 - t0:.2f} {t2 - t1:.2f} {t3 - t2:.2f}")
'''


def load_times(name: str, repeats: int, python: str | None = None, relocate: bool = False) -> None:
    """Our load as a served model sees it, each in a fresh process: import, tables, first encode (the kernel's
    compile when cold). Cold: an empty ``NUMBA_CACHE_DIR`` (then the same directory again: cached). ``python``:
    the interpreter of another environment, importing the triton_textops installed there (else this checkout's,
    in this environment, which also holds the peers and their numba extensions). ``relocate``: each load runs
    from a fresh copy of that environment at a new path, as Triton extracts a tarball ``EXECUTION_ENV_PATH`` to
    a new ``/tmp/python_env_*`` at every server start."""
    import shutil  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import tempfile  # noqa: PLC0415

    rows: dict[str, list[list[float]]] = {"cold": [], "cached": []}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="bpe-numba-") as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT / "tests")}
            for kind in ("cold", "cached"):
                exe = python or sys.executable
                if relocate:  # (the venv's bin/python is a link to the base interpreter: copy links as links)
                    prefix = Path(exe).absolute().parents[1]
                    copy = Path(cache) / f"python_env_{kind}"
                    shutil.copytree(prefix, copy, symlinks=True)
                    exe = str(copy / Path(exe).absolute().relative_to(prefix))
                out = subprocess.run([exe, "-c", LOAD_SCRIPT, name], env=env,
                                     capture_output=True, text=True, check=True,
                                     cwd=cache if python else ROOT).stdout.split()
                rows[kind].append([float(x) for x in out])
                if relocate:
                    shutil.rmtree(copy)
    for kind, runs in rows.items():
        tot = sorted(r[0] for r in runs)
        best = min(runs)
        print(f"{name} load {kind}: best {tot[0]:.1f} s [{tot[0]:.1f}-{tot[-1]:.1f}] (import {best[1]:.1f}, tokenizer "
              f"{best[2]:.1f}: tables and the kernel's compile or cache read, first encode {best[3]:.1f}); goal "
              f"{'<= 15' if kind == 'cold' else '<= 3'} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", nargs="+", default=["cl100k_base", "o200k_base", "gpt2"],
                    help="cl100k_base o200k_base gpt2 qwen2 llama3 (a Llama-3-style tokenizer.json of cl100k's ranks)")
    ap.add_argument("--sets", nargs="+", default=["english", "multilingual"],
                    help=f"text sets: english multilingual {' '.join(T.SETS)} (the last: long pre-tokens, issue 45; "
                         "benchmarks/bpe_texts.py)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warm", action="store_true")
    ap.add_argument("--gpu", action="store_true", help="ours on the GPU vs ours on the CPU only")
    ap.add_argument("--load", action="store_true", help="our load + first encode, cold and cached, per vocab")
    ap.add_argument("--fresh", action="store_true",
                    help="one text per call, each engine in a fresh process (its first 200 texts, then the next 200)")
    ap.add_argument("--python", help="--load: the Python of a served model's environment (its triton_textops)")
    ap.add_argument("--relocate", action="store_true",
                    help="--load --python: each load from a fresh copy of the environment at a new path (as Triton "
                         "extracts a tarball EXECUTION_ENV_PATH anew at each server start)")
    ap.add_argument("--engines", nargs="+", help="time only these engines (e.g. `ours`, for old/new builds taking turns)")
    ap.add_argument("--texts", type=int, help="the first N texts of each set")
    a = ap.parse_args()
    print(machine())
    if a.load:
        if a.relocate and not a.python:
            ap.error("--relocate needs --python ENV/bin/python")
        if a.python:
            print(f"environment: {a.python}" + (" (each load from a fresh copy at a new path)" if a.relocate else ""))
        for name in a.vocab:
            load_times(name, a.repeats, a.python, a.relocate)
        return
    if a.fresh:
        for name in a.vocab:
            for corpus in ("english", "multilingual"):
                fresh_one(name, corpus, a.repeats)
        return
    if a.gpu:
        for name in ("cl100k_base", "o200k_base"):
            gpu_run(name, austen(), max(a.repeats, 3))
        return
    print(f"threads: ours {K.get_num_threads()} (kernel threads taking chunks of the batch), tiktoken {THREADS} (encode_ordinary_batch), "
          f"HF tokenizers / fastokens RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']}, gigatoken its pool "
          f"(parallel batches); batch 1: the calling thread")
    t0 = time.perf_counter()
    BPETokenizer.from_tiktoken(O.DATA / "cl100k_base.tiktoken", encoding="cl100k_base").encode(["warm up"])
    print(f"our cl100k load + first encode (numba cache as it is): {time.perf_counter() - t0:.1f} s")
    made = {"english": austen, "multilingual": multilingual, **T.SETS}
    corpora = {s: made[s]()[: a.texts] for s in a.sets}
    for name in a.vocab:
        for corpus, texts in corpora.items():
            run(name, corpus, texts, a.repeats, a.warm, a.engines)


if __name__ == "__main__":
    main()
