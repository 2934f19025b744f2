"""``triton-textops repo create DIR --device cpu|gpu ...``: write the seed's ``ensemble_all`` repository."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from triton_textops.bundled import vocab_path
from triton_textops.tools.envs import add_pack_env_options, pack_env_options
from triton_textops.tools.repo.generate import (
    DEFAULT_QUEUE_DELAY_US,
    REQUIREMENTS_FILE,
    RepositoryError,
    create_repository,
    plan_repository,
)


def add_parser(subparsers: Any) -> None:
    """Register ``repo create`` with the ``triton-textops`` command line."""
    repo = subparsers.add_parser("repo", help="model-repository tools")
    sub = repo.add_subparsers(dest="repo_command", required=True)
    p = sub.add_parser(
        "create",
        help="write the ensemble_all repository (preprocess, bert-large, cuml, postprocess)",
        description="Write the seed's Triton repository: preprocess -> bert-large + cuml -> postprocess, "
        "wired by the ensemble 'ensemble_all' (excerpt, BERT_WEIGHT -> SCORE). --device sets the "
        "instance_group kind of each model and nothing else: bert-large runs on Triton's onnxruntime/pytorch "
        "backend and cuml on FIL (treelite_checkpoint) for both, so the cpu and gpu repositories differ only in "
        "instance_group. --backends python writes Python stand-ins for bert-large and cuml instead (ONNX Runtime "
        "and forest models), for a server that has only the Python backend, such as triton-textops serve's.",
    )
    p.add_argument("dir", help="repository directory to write")
    p.add_argument("--device", choices=("cpu", "gpu"), required=True, help="instance_group kind of every model")
    p.add_argument("--vocab", default=None, help="WordPiece vocab.txt (default: bundled bert-base-uncased)")
    p.add_argument("--features", required=True, help="features artifact (triton-textops fit-features)")
    p.add_argument("--bert-model", default=None, help="model.onnx (onnxruntime) or model.pt (pytorch)")
    p.add_argument("--forest", default=None, help="treelite checkpoint for the FIL model 'cuml'")
    p.add_argument("--backends", choices=("native", "python"), default="native",
                   help="native: pytorch/onnxruntime + fil, the seed's (default); python: the Python stand-ins "
                        "(our ONNX Runtime and forest models) for a server with only the Python backend")
    p.add_argument("--env", default=None,
                   help="execution environment (tarball or directory) copied into every python model's directory")
    add_pack_env_options(p)
    p.add_argument("--stub", default=None, help="custom triton_python_backend_stub for python models")
    p.add_argument("--instances", type=int, default=1, help="instances per model (default 1)")
    p.add_argument("--max-batch-size", type=int, default=32, help="max_batch_size of every model (default 32)")
    p.add_argument("--max-queue-delay-us", type=int, default=DEFAULT_QUEUE_DELAY_US,
                   help=f"dynamic batching max_queue_delay_microseconds (default {DEFAULT_QUEUE_DELAY_US})")
    p.add_argument("--warmup", action="store_true", help="add model_warmup samples")
    p.add_argument("--max-length", type=int, default=128, help="BERT sequence length (default 128)")
    p.add_argument("--overwrite", action="store_true", help="replace existing model directories of these names")
    p.set_defaults(func=_create)


def _create(args: argparse.Namespace) -> int:
    backends = args.backends  # native for both devices: the cpu and gpu repositories differ in instance_group only
    try:
        options = dict(
            device=args.device,
            vocab=args.vocab if args.vocab is not None else vocab_path(),
            features=args.features,
            bert_model=args.bert_model,
            forest=args.forest,
            backends=backends,
            env=args.env,
            stub=args.stub,
            instances=args.instances,
            max_batch_size=args.max_batch_size,
            max_queue_delay_us=args.max_queue_delay_us,
            warmup=args.warmup,
            max_length=args.max_length,
        )
        plan = plan_repository(**options)
        root = create_repository(args.dir, **options, overwrite=args.overwrite, pack_env=pack_env_options(args))
    except RepositoryError as exc:
        print(f"triton-textops repo create: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {root}: {', '.join(plan.configs)} (instance_group {args.device.upper()}, {backends} backends for "
          f"bert-large and cuml); "
          f"{REQUIREMENTS_FILE}: {', '.join(plan.requirements) or 'nothing beyond numpy and triton-textops'}")
    for note in plan.notes:
        print(f"note: {note}")
    return 0
