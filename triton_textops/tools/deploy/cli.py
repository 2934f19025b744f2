"""``triton-textops deploy kserve|sagemaker REPO ...``: manifests and archives for managed serving."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from triton_textops.tools.deploy import (
    DeployError,
    RepositoryInfo,
    inspect_repository,
    needs_problems,
    stock_image_problems,
)

_IMAGE_FLAG = "--image-has-textops"


def add_parser(subparsers: Any) -> None:
    """Register ``deploy kserve`` and ``deploy sagemaker`` with the ``triton-textops`` command line."""
    deploy = subparsers.add_parser("deploy", help="serve a model repository on KServe or SageMaker")
    sub = deploy.add_subparsers(dest="deploy_command", required=True)

    k = sub.add_parser(
        "kserve",
        help="write a KServe InferenceService (Triton predictor) for a repository",
        description="Write a serving.kserve.io/v1beta1 InferenceService that serves REPO (uploaded to "
        "--storage-uri) with KServe's Triton runtime, protocol v2, resources and autoscaling. Needs "
        "pip install 'triton-textops[deploy]'. See deploy/README.md.",
    )
    k.add_argument("repo", help="the model repository folder (as uploaded to --storage-uri)")
    k.add_argument("--storage-uri", required=True, help="where the repository is uploaded: s3://, gs://, pvc://, ...")
    k.add_argument("-o", "--output", default=None,
                   help="write the YAML to this file, or into this existing directory as <name>.yaml; missing "
                        "parent directories are created (default: stdout)")
    _add_image_flag(k)
    k.add_argument("--name", default=None, help="InferenceService name (default: the served model, '_' -> '-')")
    k.add_argument("--namespace", default=None, help="Kubernetes namespace")
    k.add_argument("--default-model", default=None, help="model the readiness probe checks (default: ensemble_all)")
    k.add_argument("--gpus", type=int, default=None,
                   help="GPUs per replica (default: what the KIND_GPU instance groups need, else 0)")
    k.add_argument("--replicas", type=int, default=None, help="fixed replica count (instead of min/max)")
    k.add_argument("--min-replicas", type=int, default=None, help="autoscaling minimum (default 1)")
    k.add_argument("--max-replicas", type=int, default=None, help="autoscaling maximum (default max(min, 3))")
    k.add_argument("--scale-metric", default=None, choices=("concurrency", "rps", "cpu", "memory"),
                   help="autoscaling metric (default: KServe's)")
    k.add_argument("--scale-target", type=int, default=None, help="autoscaling target per replica")
    k.add_argument("--cpu", default="2", help="CPU request and limit per replica (default 2)")
    k.add_argument("--memory", default="4Gi", help="memory request and limit per replica (default 4Gi)")
    k.add_argument("--runtime-version", default="24.10", help="Triton release or image tag (default 24.10)")
    k.add_argument("--runtime", default="kserve-tritonserver", help="ServingRuntime name (default kserve-tritonserver)")
    k.add_argument("--deployment-mode", default=None, choices=("Serverless", "RawDeployment"),
                   help="serving.kserve.io/deploymentMode annotation (default: the cluster's)")
    k.set_defaults(func=_kserve)

    s = sub.add_parser(
        "sagemaker",
        help="pack a repository as model.tar.gz for SageMaker's Triton container",
        description="Write REPO as model.tar.gz with the model folders at the archive root (what "
        "SageMaker's sagemaker-tritonserver image expects) and the container environment "
        "(SAGEMAKER_TRITON_DEFAULT_MODEL_NAME) as JSON next to it. See deploy/README.md.",
    )
    s.add_argument("repo", help="the model repository folder")
    s.add_argument("-o", "--output", default="model.tar.gz", help="archive to write (default model.tar.gz)")
    s.add_argument("--env-file", default=None, help="environment JSON to write (default: sagemaker-env.json next to -o)")
    s.add_argument("--default-model", default=None, help="model to serve (default: ensemble_all)")
    s.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="extra container environment, e.g. SAGEMAKER_TRITON_SHM_DEFAULT_BYTE_SIZE=33554432")
    _add_image_flag(s)
    s.set_defaults(func=_sagemaker)


def _add_image_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--image-has", action="append", default=[], metavar="PACKAGE",
                   help="a package the serving image has (repeatable), for python models without a packed env "
                        "(with --image-has-textops): e.g. onnxruntime, treelite")
    p.add_argument(_IMAGE_FLAG, action="store_true",
                   help="the serving image already has triton-textops and its dependencies (a custom image): do "
                        "not refuse python models that have no EXECUTION_ENV_PATH env with triton_textops in it")


def _check_image(command: str, info: RepositoryInfo, image_has_textops: bool, image_has: list[str]) -> bool:
    """Refuse python models that will not find what they import (their env, or the image: --image-has), and
    refuse (or, with --image-has-textops, only warn about) python models the stock image cannot load."""
    needs = needs_problems(info, set(image_has), image_has_textops)
    for p in needs:
        print(f"triton-textops deploy {command}: error: {p}", file=sys.stderr)
    if needs:
        return False
    problems = stock_image_problems(info)
    if not problems:
        return True
    if image_has_textops:
        for p in problems:
            print(f"warning: {p} ({_IMAGE_FLAG}: the image is expected to have it)", file=sys.stderr)
        return True
    for p in problems:
        print(f"triton-textops deploy {command}: error: {p}", file=sys.stderr)
    print("fix: pack an env into the repository (triton-textops repo create ... --pack-env, or triton-textops env "
          f"pack + repo create --env), or pass {_IMAGE_FLAG} when the serving image has triton-textops",
          file=sys.stderr)
    return False


def _fail(command: str, exc: Exception) -> int:
    print(f"triton-textops deploy {command}: error: {exc}", file=sys.stderr)
    return 2


def _notes(info: RepositoryInfo) -> None:
    for note in info.notes:
        print(f"note: {note}", file=sys.stderr)


def _kserve(args: argparse.Namespace) -> int:
    from triton_textops.tools.deploy.kserve import (  # noqa: PLC0415
        _sdk,
        build_inference_service,
        inference_service_to_yaml,
    )

    try:
        _sdk()  # the deploy extra, checked before the repository
        info = inspect_repository(args.repo)
        isvc = build_inference_service(
            info,
            storage_uri=args.storage_uri,
            name=args.name,
            namespace=args.namespace,
            default_model=args.default_model,
            gpus=args.gpus,
            replicas=args.replicas,
            min_replicas=args.min_replicas,
            max_replicas=args.max_replicas,
            scale_metric=args.scale_metric,
            scale_target=args.scale_target,
            cpu=args.cpu,
            memory=args.memory,
            runtime_version=args.runtime_version,
            runtime=args.runtime,
            deployment_mode=args.deployment_mode,
        )
        text = inference_service_to_yaml(isvc)
    except DeployError as exc:
        return _fail("kserve", exc)
    _notes(info)
    if not _check_image("kserve", info, args.image_has_textops, args.image_has):
        return 2
    if args.output is None:
        sys.stdout.write(text)
        return 0
    out = Path(args.output)
    if out.is_dir():
        out = out / f"{isvc.metadata.name}.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    pred = isvc.spec.predictor
    gpus = pred.model.resources.limits.get("nvidia.com/gpu", "0")
    print(
        f"wrote {out}: InferenceService {isvc.metadata.name} serving {', '.join(info.models)} "
        f"from {args.storage_uri} ({gpus} GPU, replicas {pred.min_replicas}..{pred.max_replicas})",
        file=sys.stderr,
    )
    return 0


def _sagemaker(args: argparse.Namespace) -> int:
    from triton_textops.tools.deploy.sagemaker import (  # noqa: PLC0415
        ENV_FILE_NAME,
        container_environment,
        write_environment,
        write_model_archive,
    )

    try:
        extra = {}
        for item in args.env:
            key, sep, value = item.partition("=")
            if not sep:
                raise DeployError(f"--env {item!r}: expected KEY=VALUE")
            extra[key] = value
        info = inspect_repository(args.repo)
        env = container_environment(info, args.default_model, extra)
        if not _check_image("sagemaker", info, args.image_has_textops, args.image_has):
            return 2
        print(f"writing {args.output} (gzip; an env in the repository makes this minutes)...", file=sys.stderr,
              flush=True)
        archive = write_model_archive(info, args.output,
                                      progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True))
    except DeployError as exc:
        return _fail("sagemaker", exc)
    env_file = Path(args.env_file) if args.env_file else archive.parent / ENV_FILE_NAME
    write_environment(env, env_file)
    _notes(info)
    print(f"wrote {archive} ({', '.join(info.models)} at the archive root) and {env_file}:")
    print(json.dumps(env, indent=1, sort_keys=True))
    if info.gpu_models:
        print(f"note: {', '.join(info.gpu_models)} use KIND_GPU: deploy on a GPU instance type (ml.g5.*, ml.g6.*, ...)")
    return 0
