"""A KServe ``InferenceService`` (``serving.kserve.io/v1beta1``) that serves a model repository with Triton.

Built with the official ``kserve`` SDK's model classes (``pip install 'triton-textops[deploy]'``) and
written as YAML for ``kubectl apply -f``. The predictor uses the ``triton`` model format (KServe's
``kserve-tritonserver`` runtime: Triton on ``/mnt/models``, HTTP 8080, gRPC 9000), the v2 (Open
Inference) protocol, the repository's ``storageUri``, CPU/memory/GPU resources and replica autoscaling.
The startup and readiness probes ask Triton whether the served ensemble is ready, so a replica takes traffic
only once every model of the repository has loaded. Triton keeps saying "ready" when a Python model's stub process
has died (every request to it then fails; the r24.10 Python backend does not restart it), so the liveness probe
sends one tiny real inference instead (:mod:`triton_textops.tools.probe`: an exec probe running ``python3``, which the
Triton image has for its Python backend; decoupled models over gRPC streaming) to the served ensemble and to every
python model outside it; three failures in a row make Kubernetes restart the container.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from triton_textops.tools.deploy import DeployError, RepositoryInfo
from triton_textops.tools.probe import ProbeError, ProbeTarget, exec_probe_command, probe_request

__all__ = [
    "ANNOTATION_MODELS",
    "ANNOTATION_DEFAULT_MODEL",
    "TRITON_HTTP_PORT",
    "build_inference_service",
    "liveness_targets",
    "inference_service_from_dict",
    "inference_service_to_dict",
    "inference_service_to_yaml",
    "runtime_image_tag",
]

TRITON_HTTP_PORT = 8080  # the kserve-tritonserver runtime's --http-port
TRITON_GRPC_PORT = 9000  # and its --grpc-port (decoupled models are probed over gRPC streaming)
LIVENESS_TIMEOUT_S = 10.0  # per probe request; a dead stub answers an error after ~1.2 s
ANNOTATION_MODELS = "triton-textops/models"
ANNOTATION_DEFAULT_MODEL = "triton-textops/default-model"
STORAGE_SCHEMES = ("s3", "gs", "pvc", "https", "http", "hdfs", "webhdfs", "oci", "hf", "azure")
SCALE_METRICS = ("concurrency", "rps", "cpu", "memory")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


def _sdk() -> Any:
    try:
        import kserve  # noqa: PLC0415
        import yaml  # noqa: F401, PLC0415 - the manifest's writer
        from kubernetes import client as k8s  # noqa: PLC0415
    except ImportError as exc:
        raise DeployError(
            f"deploy kserve needs the KServe SDK ({exc.name} is missing): pip install 'triton-textops[deploy]'"
        ) from None
    return kserve, k8s


def runtime_image_tag(version: str) -> str:
    """``24.10`` -> ``24.10-py3`` (the Triton image tag); a full tag is kept as given."""
    v = str(version).strip()
    if re.fullmatch(r"\d{2}\.\d{2}", v):
        return f"{v}-py3"
    if re.fullmatch(r"\d{2}\.\d{2}-[A-Za-z0-9._-]+", v):
        return v
    raise DeployError(f"runtime version {version!r}: expected a Triton release like 24.10 or an image tag like 24.10-py3")


def _positive(value: int | None, option: str, minimum: int) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
        raise DeployError(f"{option}: expected an integer >= {minimum}, got {value!r}")
    return value


def liveness_targets(info: RepositoryInfo, served: str) -> list[ProbeTarget]:
    """Probe requests for the liveness check: ``served`` (through an ensemble this reaches all its steps) and every
    python model the ensemble does not run."""
    from triton_textops.triton.config import config_to_json_dict  # noqa: PLC0415

    covered = {served} | {s.model_name for s in info.configs[served].ensemble_scheduling.step}
    names = [served] + [m for m in info.python_models if m not in covered]
    try:
        return [probe_request(n, config_to_json_dict(info.configs[n])) for n in names]
    except ProbeError as exc:
        raise DeployError(f"liveness probe: {exc}") from None


def build_inference_service(
    info: RepositoryInfo,
    *,
    storage_uri: str,
    name: str | None = None,
    namespace: str | None = None,
    default_model: str | None = None,
    gpus: int | None = None,
    replicas: int | None = None,
    min_replicas: int | None = None,
    max_replicas: int | None = None,
    scale_metric: str | None = None,
    scale_target: int | None = None,
    cpu: str = "2",
    memory: str = "4Gi",
    runtime_version: str = "24.10",
    runtime: str | None = "kserve-tritonserver",
    deployment_mode: str | None = None,
) -> Any:
    """``V1beta1InferenceService`` for the repository ``info`` stored at ``storage_uri``.

    ``gpus`` defaults to what the repository's instance groups need (1 when a model uses ``KIND_GPU``,
    more when configs pin higher device ids, else 0); fewer than that is an error. ``replicas`` fixes the
    count; otherwise ``min_replicas`` (default 1) .. ``max_replicas`` (default ``max(min, 3)``) autoscale
    on ``scale_metric``/``scale_target`` (KServe's defaults when not given).
    """
    kserve, k8s = _sdk()
    scheme = storage_uri.split("://", 1)[0] if "://" in storage_uri else ""
    if scheme not in STORAGE_SCHEMES or not storage_uri.split("://", 1)[1].strip("/"):
        raise DeployError(
            f"storage URI {storage_uri!r}: expected <scheme>://<location> with a scheme KServe downloads from "
            f"({', '.join(STORAGE_SCHEMES)})"
        )
    served = info.default_model(default_model)
    name = name if name is not None else served.replace("_", "-").lower()
    if not _DNS1035.match(name) or len(name) > 63:
        raise DeployError(f"name {name!r}: an InferenceService name is lower-case letters, digits and '-' (DNS-1035)")
    _positive(gpus, "gpus", 0)
    n_gpus = info.gpus if gpus is None else gpus
    if n_gpus < info.gpus:
        raise DeployError(
            f"gpus={n_gpus}: the repository needs {info.gpus} (KIND_GPU instance groups in "
            f"{', '.join(info.gpu_models)}); regenerate it with --device cpu or ask for more GPUs"
        )
    for option, value in (("cpu", cpu), ("memory", memory)):
        if not _QUANTITY.match(str(value)):
            raise DeployError(f"{option} {value!r}: expected a Kubernetes quantity (e.g. 2, 500m, 4Gi)")
    for option, value in (("replicas", replicas), ("min_replicas", min_replicas), ("max_replicas", max_replicas)):
        _positive(value, option, 0 if option == "min_replicas" else 1)
    if replicas is not None:
        if min_replicas is not None or max_replicas is not None:
            raise DeployError("replicas fixes the replica count: give it or min/max replicas, not both")
        lo, hi = replicas, replicas
    else:
        lo = 1 if min_replicas is None else min_replicas
        hi = max(lo, 3) if max_replicas is None else max_replicas
        if hi < max(lo, 1):
            raise DeployError(f"max_replicas ({hi}) must be >= min_replicas ({lo}) and >= 1")
    if scale_metric is not None and scale_metric not in SCALE_METRICS:
        raise DeployError(f"scale metric {scale_metric!r}: one of {', '.join(SCALE_METRICS)}")
    _positive(scale_target, "scale_target", 1)
    if deployment_mode not in (None, "Serverless", "RawDeployment"):
        raise DeployError(f"deployment mode {deployment_mode!r}: Serverless or RawDeployment")

    quantities = {"cpu": str(cpu), "memory": str(memory)}
    if n_gpus:
        quantities["nvidia.com/gpu"] = str(n_gpus)
    resources = k8s.V1ResourceRequirements(requests=dict(quantities), limits=dict(quantities))
    ready = k8s.V1HTTPGetAction(path=f"/v2/models/{served}/ready", port=TRITON_HTTP_PORT)
    probe = k8s.V1Probe(http_get=ready, period_seconds=10, failure_threshold=3)
    # liveness starts once startup succeeded: loading the models (up to 10 minutes) never counts as dead
    startup = k8s.V1Probe(http_get=ready, period_seconds=10, failure_threshold=60)
    liveness = k8s.V1Probe(
        _exec=k8s.V1ExecAction(command=exec_probe_command(liveness_targets(info, served), port=TRITON_HTTP_PORT,
                                                          grpc_port=TRITON_GRPC_PORT, timeout=LIVENESS_TIMEOUT_S)),
        period_seconds=30,
        timeout_seconds=int(LIVENESS_TIMEOUT_S * 2),
        failure_threshold=3,
    )
    model = kserve.V1beta1ModelSpec(
        name="kserve-container",
        model_format=kserve.V1beta1ModelFormat(name="triton"),
        runtime=runtime,
        runtime_version=runtime_image_tag(runtime_version),
        protocol_version="v2",
        storage_uri=storage_uri,
        resources=resources,
        readiness_probe=probe,
        startup_probe=startup,
        liveness_probe=liveness,
    )
    predictor = kserve.V1beta1PredictorSpec(
        model=model,
        min_replicas=lo,
        max_replicas=hi,
        scale_metric=scale_metric,
        scale_target=scale_target,
    )
    annotations = {ANNOTATION_DEFAULT_MODEL: served, ANNOTATION_MODELS: ",".join(info.models)}
    if deployment_mode is not None:
        annotations["serving.kserve.io/deploymentMode"] = deployment_mode
    return kserve.V1beta1InferenceService(
        api_version=kserve.constants.KSERVE_V1BETA1,
        kind=kserve.constants.KSERVE_KIND_INFERENCESERVICE,
        metadata=k8s.V1ObjectMeta(name=name, namespace=namespace, annotations=annotations),
        spec=kserve.V1beta1InferenceServiceSpec(predictor=predictor),
    )


def inference_service_to_dict(isvc: Any) -> dict[str, Any]:
    """The manifest as the SDK serializes it (camelCase keys, unset fields dropped)."""
    kserve, _ = _sdk()
    from kserve.api_client import ApiClient  # noqa: PLC0415

    return ApiClient().sanitize_for_serialization(isvc)


def inference_service_to_yaml(isvc: Any) -> str:
    """The manifest as YAML for ``kubectl apply -f``."""
    import yaml  # noqa: PLC0415

    return yaml.safe_dump(inference_service_to_dict(isvc), sort_keys=False, default_flow_style=False)


def _model_class(type_name: str) -> Any:
    kserve, k8s = _sdk()
    for module in (kserve.models, k8s.models):
        cls = getattr(module, type_name, None)
        if cls is not None:
            return cls
    raise DeployError(f"no SDK class {type_name!r}")


def _from_data(data: Any, type_name: str) -> Any:
    if data is None:
        return None
    # the two generators' spellings: list[X] / List[X], dict(str, X) / Dict[str, X]
    if type_name.startswith(("list[", "List[")):
        return [_from_data(x, type_name[5:-1]) for x in data]
    if type_name.startswith(("dict(", "Dict[")):
        value_type = type_name[5:-1].split(",", 1)[1].strip()
        return {k: _from_data(v, value_type) for k, v in data.items()}
    if type_name in ("str", "int", "float", "bool", "object", "datetime", "date"):
        return data
    cls = _model_class(type_name)
    if not isinstance(data, dict):
        raise DeployError(f"{type_name}: expected a mapping, got {type(data).__name__}")
    unknown = set(data) - set(cls.attribute_map.values())
    if unknown:
        raise DeployError(f"{type_name}: unknown field(s) {', '.join(sorted(unknown))}")
    kwargs = {
        attr: _from_data(data[key], cls.openapi_types[attr])
        for attr, key in cls.attribute_map.items()
        if key in data
    }
    return cls(**kwargs)


def inference_service_from_dict(data: dict[str, Any]) -> Any:
    """Rebuild the SDK object from a manifest dict (KServe and Kubernetes classes; unknown fields refused)."""
    if not isinstance(data, dict) or data.get("kind") != "InferenceService":
        raise DeployError("not an InferenceService manifest")
    return _from_data(data, "V1beta1InferenceService")


def write_inference_service(isvc: Any, path: str | Path) -> Path:
    """Write the YAML manifest to ``path``."""
    p = Path(path)
    p.write_text(inference_service_to_yaml(isvc), encoding="utf-8")
    return p
