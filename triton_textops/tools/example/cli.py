"""``triton-textops example readability DIR``: build the trained example repository of the seed's pipeline
(``example llm DIR``: the LLM example, :mod:`triton_textops.tools.example.llm`).

Trains (or reuses from the cache) the features artifact, the MiniLM regressor ``model.onnx`` and the random
forest ``checkpoint.tl`` (:mod:`triton_textops.tools.example.readability`), then writes the ``ensemble_all``
repository into DIR. ``--backends python`` (default with ``--device cpu``) runs ``bert-large`` and ``cuml`` as
Python-backend models over those files, for servers that only have the Python backend (the PyPI wheel);
``--backends native`` (default with ``--device gpu``) uses Triton's onnxruntime and FIL backends, as the seed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path


def default_cache() -> Path:
    """Where trained artifacts are kept between runs (``<triton-textops cache>/examples``)."""
    from triton_textops.tools.server import cache_dir

    return cache_dir() / "examples"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``triton-textops example readability``."""
    p = sub.add_parser("example", help="build a trained example model repository")
    which = p.add_subparsers(dest="example", required=True)
    r = which.add_parser("readability", help="the seed's readability pipeline (MiniLM + random forest, blended)",
                         description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_build_options(r)
    r.add_argument("directory", help="model repository to write (its five model directories are replaced)")
    r.set_defaults(func=run)
    from triton_textops.tools.example import llm

    g = which.add_parser("llm", help="TensorRT-LLM's ensemble: our llm_preprocess/llm_postprocess around a stand-in "
                         "streaming generator", description=llm.__doc__,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("directory", help="model repository to write")
    g.add_argument("--tokenizer", required=True,
                   help="a directory with tokenizer.json (+ tokenizer_config.json) or a .tiktoken file (copied)")
    g.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a further parameter of both llm models, e.g. the encoding of a .tiktoken file (repeatable)")
    g.add_argument("--max-batch-size", type=int, default=64, help="max_batch_size of every model (default 64)")
    g.add_argument("--instances", type=int, default=1, help="instances of each python model (default 1)")
    g.add_argument("--seed", type=int, default=0, help="the generator's chunk sizes: seed (default 0)")
    g.add_argument("--max-chunk-tokens", type=int, default=4, help="largest chunk the generator streams (default 4)")
    g.add_argument("--step-delay-ms", type=float, default=0.0,
                   help="pause of the generator between chunks, as a model's decoding step (default 0)")
    g.add_argument("--overwrite", action="store_true", help="replace existing model directories of these names")
    g.set_defaults(func=run_llm)


def add_build_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ``example readability`` and ``demo``."""
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu", help="instance kind of every model")
    p.add_argument("--backends", choices=("python", "native"), default=None,
                   help="bert-large/cuml as python models (default for cpu) or onnxruntime/fil (default for gpu)")
    p.add_argument("--artifacts", type=Path, default=None,
                   help="cache of trained artifacts (default: ~/.cache/triton-textops/examples)")
    p.add_argument("--retrain", action="store_true", help="train again even if cached artifacts exist")
    p.add_argument("--limit", type=int, default=None, help="use only this many texts (quick runs)")
    p.add_argument("--encoder-train", type=int, default=None,
                   help="training texts embedded for the BERT head (default 1000; the encoder dominates)")
    p.add_argument("--instances", type=int, default=1, help="instances of every model")
    from triton_textops.tools.envs import add_pack_env_options

    add_pack_env_options(p)


def build(args: argparse.Namespace, directory: Path, out: object = None) -> tuple[Path, dict]:
    """Train or reuse the artifacts and write the repository; print progress and timings to ``out``."""
    from triton_textops.tools.envs import pack_env_options
    from triton_textops.tools.example import readability as rd

    out = out or sys.stdout

    cfg = rd.TrainConfig()
    if args.limit:
        cfg.limit = args.limit
    if args.encoder_train:
        cfg.encoder_train = args.encoder_train
    cache = args.artifacts or default_cache()
    if args.retrain:
        shutil.rmtree(Path(cache) / f"artifacts-{cfg.key()}", ignore_errors=True)
    t0 = time.monotonic()
    artifacts, report, trained = rd.cached_artifacts(cache, cfg, out=out)
    how = f"trained in {time.monotonic() - t0:.1f} s" if trained else "reused from the cache; --retrain to train again"
    print(f"artifacts: {artifacts} ({how})", file=out)
    print(rd.format_report(report), file=out)
    backends = args.backends or ("native" if args.device == "gpu" else "python")
    repo = rd.build_repository(directory, artifacts, device=args.device, backends=backends, instances=args.instances,
                               pack_env=pack_env_options(args), log=lambda line: print(line, file=out, flush=True))
    print(f"repository: {repo} (device {args.device}, {backends} backends for bert-large/cuml)", file=out, flush=True)
    return repo, report


def run(args: argparse.Namespace) -> int:
    from triton_textops.tools.repo.generate import RepositoryError

    try:
        repo, _ = build(args, Path(args.directory))
    except RepositoryError as exc:
        print(f"triton-textops example readability: error: {exc}", file=sys.stderr)
        return 2
    print(f"serve it: triton-textops serve {repo}   (score with: triton-textops demo --repository {repo})")
    return 0


def run_llm(args: argparse.Namespace) -> int:
    """``triton-textops example llm DIR --tokenizer PATH``."""
    from triton_textops.tools.example import llm
    from triton_textops.tools.repo.generate import RepositoryError

    params = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"triton-textops example llm: error: --param {item!r}: expected KEY=VALUE", file=sys.stderr)
            return 2
        params[key] = value
    try:
        repo = llm.build_repository(args.directory, args.tokenizer, overwrite=args.overwrite, tokenizer_params=params,
                                    max_batch_size=args.max_batch_size, instances=args.instances, seed=args.seed,
                                    max_chunk_tokens=args.max_chunk_tokens, step_delay_ms=args.step_delay_ms)
    except RepositoryError as exc:
        print(f"triton-textops example llm: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {repo}: {', '.join(llm.MODELS)}")
    print(f"serve it: triton-textops serve {repo}   (stream with gRPC: model 'ensemble', text_input, max_tokens, "
          "stream=true)")
    return 0
