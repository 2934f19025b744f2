"""The Unigram model stage alone, on one core: ours (sentencepiece's rules and HF's) against sentencepiece and HF
tokenizers' ``models.Unigram``, in one run, on text sentencepiece normalized first.

Models are trained here (``sentencepiece`` unigram, nmt_nfkc, byte fallback) on the bundled Austen paragraphs and
the tests' multilingual lines. sentencepiece runs the same pieces in a ModelProto with identity normalization and no
whitespace handling, so its ``encode`` of the normalized text is its model stage (plus a copy); HF runs a
``Tokenizer`` of the ``Unigram`` model alone. Every engine's ids are checked equal to its reference before timing;
engines take turns, best of ``--repeats`` (with the range). Prints characters per second and each peer's time
over ours.

    python benchmarks/unigram_stage.py [--vocab 8000 32000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # (one core: HF's batch encode is parallel otherwise)
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # (this checkout's package, not an installed one)
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import unigram_cases as U  # noqa: E402
from _common import machine  # noqa: E402

from triton_textops.ops.core import kernels as K  # noqa: E402


def train(vocab_size: int) -> bytes:
    import sentencepiece as spm  # noqa: PLC0415

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(U.austen_paragraphs() + U.MULTILINGUAL * 20),
                                   model_writer=out, model_type="unigram", vocab_size=vocab_size, minloglevel=2,
                                   normalization_rule_name="nmt_nfkc", byte_fallback=True, num_threads=1,
                                   max_sentence_length=100000)
    return out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, nargs="+", default=[8000])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    K.set_num_threads(1)
    print(machine())
    for vocab_size in args.vocab:
        proto = train(vocab_size)
        sp_full = U.sp_processor(proto)
        pieces, scores, types, fallback = U.read_model(proto)
        sp = U.sp_processor(U.write_model(pieces, scores, types, fallback))
        vocab, unk, _ = U.hf_vocab(proto)
        hf = U.hf_model(vocab, unk, fallback)
        ours_sp, ours_hf = U.ours_sp(proto), U.ours_hf(vocab, unk, fallback)
        paragraphs = [sp_full.normalize(t) for t in U.austen_paragraphs()]
        cases = {"Austen, a paragraph each": paragraphs,
                 "multilingual, a line each": [sp_full.normalize(t) for t in U.MULTILINGUAL * 50],
                 "1 MB of 中": ["中" * 333333], "1 MB of a": ["a" * 1000000],
                 "Austen in one text": ["".join(paragraphs)]}
        print(f"\nvocab {vocab_size} ({len(pieces)} pieces), one thread; chars/s, best of {args.repeats} (range)")
        for name, texts in cases.items():
            run_case(name, texts, ours_sp, sp, ours_hf, hf, args.repeats)


def run_case(name: str, texts: list[str], ours_sp: object, sp: object, ours_hf: object, hf: object,
             repeats: int) -> None:
    """Check each engine against its reference on ``texts``, then time them in turns and print."""
    chars = sum(map(len, texts))
    engines = {
        "ours (sentencepiece rules)": lambda: ours_sp.encode(texts),
        "sentencepiece": lambda: [sp.encode(x) for x in texts],
        "ours (HF rules)": lambda: ours_hf.encode(texts),
        "HF tokenizers": lambda: hf.encode_batch(texts, add_special_tokens=False),
    }
    got = {k: f() for k, f in engines.items()}
    assert got["ours (sentencepiece rules)"].tolist() == got["sentencepiece"], name
    assert got["ours (HF rules)"].tolist() == [e.ids for e in got["HF tokenizers"]], name
    times: dict[str, list[float]] = {k: [] for k in engines}
    for _ in range(repeats):
        for k, f in engines.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    print(f"  {name} ({chars / 1e6:.2f} M chars, {len(texts)} texts)")
    for k, ts in times.items():
        ref = min(times["ours (sentencepiece rules)" if "sentence" in k else "ours (HF rules)"])
        ratio = "" if k.startswith("ours") else f"   {min(ts) / ref:5.1f}x ours' time"
        print(f"    {k:28s} {chars / min(ts) / 1e6:8.2f} M chars/s ({chars / max(ts) / 1e6:.2f}-"
              f"{chars / min(ts) / 1e6:.2f}){ratio}")

if __name__ == "__main__":
    main()
