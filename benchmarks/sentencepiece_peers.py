"""SentencePiece tokenizers end to end: ours against HF tokenizers, sentencepiece, tokie, kitoken and gigatoken.

Three models are trained here with sentencepiece's trainer on the bundled Austen paragraphs and the tests'
multilingual lines (vocabulary ``--vocab``) and converted to tokenizer.json by transformers' converter
(``tests/sp_oracles.py``): a Gemma-style BPE (nmt_nfkc, byte fallback; ``Replace`` + ``Split(" ")``), a
Llama-2-style BPE (legacy: ``Prepend`` + ``Replace``) and a Unigram (nmt_nfkc: ``Precompiled`` + ``Metaspace``).
``--prepare DIR`` writes them (needs sentencepiece and transformers, e.g. the dev venv); a run reads them from DIR,
so the peers can live in a separate venv without transformers.

Engines per model: ours on the tokenizer.json (HF's rules) and on the ``.model`` (sentencepiece's), HF
``tokenizers``, ``sentencepiece``, and whichever of tokie, kitoken and gigatoken (BPE only) are installed (a peer
that is not installed is skipped). Every engine's ids are checked against its reference (HF for a tokenizer.json,
sentencepiece for a ``.model``) on the first 512 texts: an engine that differs is reported and not timed. Each
repeat builds fresh ("cold") instances, engines taking turns; prints us per text (batch 1, 200 texts one at a time)
and MB/s at batch 32 / 512 / the whole corpus, best of ``--repeats`` [range], and ours' time over each engine's.

``--cpu-time``: one thread per engine (NUMBA_NUM_THREADS=1, RAYON_NUM_THREADS=1, sentencepiece num_threads=1) and
the process's CPU time (``time.process_time``: every thread's, so an engine's own pool is counted too) instead of
wall-clock time: work per byte, what a loaded machine can still compare.

    python benchmarks/sentencepiece_peers.py --prepare DIR [--vocab 6000]       # dev venv
    BENCH_VENV/bin/python benchmarks/sentencepiece_peers.py --models DIR [--repeats 3] [--corpus english multilingual]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # (this checkout's package, not an installed one)
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
CPU_TIME = "--cpu-time" in sys.argv  # (before numba and the peers start their thread pools)
THREADS = 1 if CPU_TIME else os.cpu_count() or 1
os.environ.setdefault("RAYON_NUM_THREADS", str(THREADS))
if CPU_TIME:
    os.environ["NUMBA_NUM_THREADS"] = "1"

from _common import austen, ids_of, machine, time_turns  # noqa: E402

STYLES = {"gemma-bpe": ("bpe", "gemma"), "llama2-bpe": ("bpe", "llama"), "unigram": ("unigram", "spm")}


def prepare(out: Path, vocab: int) -> None:
    """The three models and their tokenizer.json conversions, written to ``out``."""
    import sp_oracles as O  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    for name, (kind, style) in STYLES.items():
        model = O.train(out / f"{name}.model", model_type=kind, vocab_size=vocab, byte_fallback=kind == "bpe",
                        normalization_rule_name="nmt_nfkc")
        O.convert(model, out / f"{name}.json", style)
        print(f"wrote {model} and {name}.json")


def multilingual(n: int = 2000) -> list[str]:
    """Paragraphs of random slices of the tests' multilingual lines (CJK, Thai, Arabic, Hindi, emoji, code), joined
    by spaces, ~200-700 bytes: slices, so that words repeat less (a peer's word cache would time its cache)."""
    import random  # noqa: PLC0415

    import sp_oracles as O  # noqa: PLC0415

    rng = random.Random(7)

    def piece() -> str:
        line = rng.choice(O.MULTILINGUAL)
        i = rng.randrange(len(line))
        return line[i : i + rng.randint(2, 30)]

    return [" ".join(piece() for _ in range(rng.randint(8, 30))) for _ in range(n)]


def engines(d: Path, name: str) -> dict[str, tuple[str, Callable[[], object], Callable, Callable]]:
    """engine -> (reference, make a fresh instance, encode a batch, encode one text), for the installed ones."""
    js, mf = str(d / f"{name}.json"), str(d / f"{name}.model")
    out: dict[str, tuple] = {}
    from triton_textops.ops.tokenizer import Tokenizer as Ours  # noqa: PLC0415

    out["ours (json)"] = ("hf", lambda: Ours.from_file(js), lambda t, xs: t.encode(xs, add_special_tokens=False),
                          lambda t, x: t.encode([x], add_special_tokens=False))
    out["ours (.model)"] = ("spm", lambda: Ours.from_file(mf), lambda t, xs: t.encode(xs),
                            lambda t, x: t.encode([x]))
    try:
        from tokenizers import Tokenizer  # noqa: PLC0415

        out["hf-tokenizers"] = ("hf", lambda: Tokenizer.from_file(js),
                                lambda t, xs: t.encode_batch(xs, add_special_tokens=False),
                                lambda t, x: t.encode(x, add_special_tokens=False))
    except ImportError:
        pass
    try:
        import sentencepiece as spm  # noqa: PLC0415

        out["sentencepiece"] = ("spm", lambda: spm.SentencePieceProcessor(model_file=mf),
                                lambda t, xs: t.encode(xs, num_threads=THREADS), lambda t, x: t.encode(x))
    except ImportError:
        pass
    try:
        import tokie  # noqa: PLC0415

        out["tokie"] = ("hf", lambda: tokie.Tokenizer.from_json(js),
                        lambda t, xs: t.encode_batch(xs, add_special_tokens=False),
                        lambda t, x: t.encode(x, add_special_tokens=False))
    except ImportError:
        pass
    try:
        import kitoken  # noqa: PLC0415

        out["kitoken (.model)"] = ("spm", lambda: kitoken.Kitoken.from_sentencepiece_file(mf),
                                   lambda t, xs: t.encode_all(xs, False), lambda t, x: t.encode(x, False))
        out["kitoken (json)"] = ("hf", lambda: kitoken.Kitoken.from_tokenizers_file(js),
                                 lambda t, xs: t.encode_all(xs, False), lambda t, x: t.encode(x, False))
    except ImportError:
        pass
    if name != "unigram":
        try:
            import gigatoken  # noqa: PLC0415

            out["gigatoken"] = ("hf", lambda: gigatoken.Tokenizer(js), lambda t, xs: t.encode_batch(xs),
                                lambda t, x: t.encode(x))
        except ImportError:
            pass
    return out


def run(d: Path, name: str, corpus: str, texts: list[str], repeats: int) -> None:
    eng = engines(d, name)
    refs = {"hf": ids_of(eng["hf-tokenizers"][2](eng["hf-tokenizers"][1](), texts[:512])) if "hf-tokenizers" in eng
            else None,
            "spm": ids_of(eng["sentencepiece"][2](eng["sentencepiece"][1](), texts[:512])) if "sentencepiece" in eng
            else None}
    timed = {}
    for e, (ref, make, enc, enc1) in eng.items():
        try:
            got = ids_of(enc(make(), texts[:512]))
        except Exception as exc:  # noqa: BLE001 - a peer's API or a load error: reported, not timed
            print(f"  !! {e}: {type(exc).__name__}: {str(exc)[:120]}: not timed")
            continue
        if refs[ref] is not None and got != refs[ref]:
            print(f"  !! {e} differs from {ref} on {sum(a != b for a, b in zip(got, refs[ref]))} of 512 texts: "
                  "not timed")
            continue
        timed[e] = (make, enc, enc1)
    times, nbytes = time_turns(timed, texts, repeats, clock=time.process_time if CPU_TIME else time.perf_counter)
    clock = "CPU time, one thread" if CPU_TIME else "wall clock"
    print(f"\n{name} / {corpus}: {len(texts)} texts, {nbytes['all'] / 1e6:.2f} MB; best of {repeats} [range], {clock}")
    cols = ["1", "32", "512", "all"]
    print(f"  {'engine':17s} " + " ".join(f"{c:>22s}" for c in ["us/text (b=1)", "MB/s b=32", "MB/s b=512",
                                                                    "MB/s corpus"]))
    base = "ours (json)"
    ours = {c: min(times[(base, c)]) for c in cols}
    for e in timed:
        cells = []
        for c in cols:
            ts = times[(e, c)]
            if c == "1":
                cells.append(f"{min(ts) * 1e6:7.1f} [{min(ts) * 1e6:.0f}-{max(ts) * 1e6:.0f}] "
                             f"{ours[c] / min(ts):4.2f}x")
            else:
                nb = nbytes[c]
                cells.append(f"{nb / min(ts) / 1e6:6.2f} [{nb / max(ts) / 1e6:.1f}-{nb / min(ts) / 1e6:.1f}] "
                             f"{ours[c] / min(ts):4.2f}x")
        print(f"  {e:17s} " + " ".join(f"{c:>22s}" for c in cells))
    print("  (ratio: ours' (json) time / the engine's time; > 1 means the engine is faster)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prepare", type=Path, help="train and convert the models into this directory, then exit")
    ap.add_argument("--models", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "sp-bench")
    ap.add_argument("--vocab", type=int, default=6000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", nargs="+", default=list(STYLES), choices=list(STYLES))
    ap.add_argument("--corpus", nargs="+", default=["english", "multilingual"], choices=["english", "multilingual"])
    ap.add_argument("--texts", type=int, default=2000, help="texts per corpus")
    ap.add_argument("--cpu-time", action="store_true", help="one thread per engine, timed by process CPU time")
    a = ap.parse_args()
    if a.prepare:
        prepare(a.prepare, a.vocab)
        return
    print(machine(), f"(threads: {THREADS}; RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']})")
    for name in a.model:
        for corpus in a.corpus:
            texts = austen()[: a.texts] if corpus == "english" else multilingual(a.texts)
            run(a.models, name, corpus, texts, a.repeats)


if __name__ == "__main__":
    main()
