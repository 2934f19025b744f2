"""A real liveness check: one tiny inference per Python-backend model (or per ensemble), answered correctly.

Why: when a model's stub process dies (a crash in ``execute``, the OOM killer), tritonserver 2.51 keeps reporting
the model and the server ready (``/v2/health/ready``, ``/v2/models/M/ready``) while every request to it fails with
"Stub process '...' is not healthy"; the r24.10 Python backend does not restart it. Only a request shows it.

:func:`probe_request` builds a batch-1 request from a model's config (numeric inputs all ones, text inputs a short
sentence), :func:`probe_model` sends it over Triton's HTTP/REST (KServe v2) protocol and checks the answer: every
configured output present with its data type and element count, numbers finite. Both use only the standard
library, so the same code runs in ``TritonServer.probe()``, ``triton-textops probe URL`` and, as a
``python3 -c`` script (:func:`exec_probe_command`), inside the Triton container of a Kubernetes liveness probe.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PROBE_TEXT = "It was a fine day."
DEFAULT_TIMEOUT = 10.0
# config data_type -> v2 protocol datatype (BF16 has no JSON form: such a model is probed through its ensemble)
_DATATYPES = {"TYPE_BOOL": "BOOL", "TYPE_UINT8": "UINT8", "TYPE_UINT16": "UINT16", "TYPE_UINT32": "UINT32",
              "TYPE_UINT64": "UINT64", "TYPE_INT8": "INT8", "TYPE_INT16": "INT16", "TYPE_INT32": "INT32",
              "TYPE_INT64": "INT64", "TYPE_FP16": "FP16", "TYPE_FP32": "FP32", "TYPE_FP64": "FP64",
              "TYPE_STRING": "BYTES"}


class ProbeError(ValueError):
    """A probe request cannot be built for this model (the message says why)."""


@dataclass(frozen=True)
class ProbeTarget:
    """One probe request: the model, the JSON body, and the outputs expected back ``{name: (datatype, count)}``."""

    model: str
    body: dict[str, Any]
    expect: dict[str, tuple[str, int]]


@dataclass(frozen=True)
class ProbeResult:
    """The answer of one model: ``error`` is None when it answered correctly."""

    model: str
    error: str | None
    seconds: float

    @property
    def ok(self) -> bool:
        return self.error is None

    def render(self) -> str:
        return (f"ok    {self.model}  ({self.seconds * 1000:.1f} ms)" if self.ok
                else f"FAIL  {self.model}: {self.error}")


def _datatype(data_type: str, where: str) -> str:
    try:
        return _DATATYPES[data_type]
    except KeyError:
        raise ProbeError(f"{where}: data type {data_type} has no JSON form in the v2 protocol") from None


def _count(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def probe_request(model: str, config: Mapping[str, Any]) -> ProbeTarget:
    """A batch-1 request for ``config`` (the JSON form: the server's ``/v2/models/M/config`` or
    :func:`triton_textops.triton.config.config_to_json_dict`). Variable dims become 1; optional inputs are left out."""
    batch = [1] if int(config.get("max_batch_size", 0) or 0) > 0 else []
    inputs = []
    for inp in config.get("input", []):
        if inp.get("optional"):
            continue
        shape = batch + [max(int(d), 1) for d in inp.get("dims", [])]
        datatype = _datatype(inp.get("data_type", ""), f"{model} input {inp.get('name')}")
        n = _count(shape)
        data: list[Any] = [PROBE_TEXT] * n if datatype == "BYTES" else [True] * n if datatype == "BOOL" else [1] * n
        inputs.append({"name": inp["name"], "shape": shape, "datatype": datatype, "data": data})
    if not inputs:
        raise ProbeError(f"{model}: no required inputs to send")
    expect = {}
    for out in config.get("output", []):
        dims = [int(d) for d in out.get("dims", [])]
        count = _count(batch + dims) if all(d > 0 for d in dims) else -1  # -1: variable, not checked
        expect[out["name"]] = (_datatype(out.get("data_type", ""), f"{model} output {out.get('name')}"), count)
    return ProbeTarget(model, {"id": "liveness-probe", "inputs": inputs}, expect)


def probe_model(base: str, model: str, body: dict, expect: dict, timeout: float) -> str | None:
    """Send ``body`` to ``base``/v2/models/``model``/infer; None if every expected output came back right, else why not.

    Self-contained (standard library, imports inside): :func:`exec_probe_command` ships its source to the container.
    """
    import json
    import math
    import urllib.error
    import urllib.request

    req = urllib.request.Request(f"{base}/v2/models/{model}/infer", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            answer = json.loads(resp.read().decode())
    except urllib.error.HTTPError as exc:
        try:
            return str(json.loads(exc.read().decode()).get("error", exc))
        except ValueError:
            return f"HTTP {exc.code}"
    except (OSError, ValueError) as exc:
        return f"no answer: {exc}"
    outputs = {o.get("name"): o for o in answer.get("outputs", [])}
    for name, (datatype, count) in expect.items():
        out = outputs.get(name)
        if out is None:
            return f"output {name} missing from the answer"
        if out.get("datatype") != datatype:
            return f"output {name} is {out.get('datatype')}, expected {datatype}"
        data = out.get("data", [])
        if count >= 0 and len(data) != count:
            return f"output {name} has {len(data)} elements, expected {count}"
        if datatype not in ("BYTES", "BOOL") and not all(
                isinstance(x, (int, float)) and math.isfinite(x) for x in data):
            return f"output {name} is not finite: {data[:8]}"
    return None


def base_url(url: str) -> str:
    """``host:port`` (tritonclient style) or ``http://host:port`` -> ``http://host:port``."""
    url = url.rstrip("/")
    return url if url.startswith(("http://", "https://")) else f"http://{url}"


def _get_json(url: str, timeout: float, data: bytes | None = None) -> Any:
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read().decode())


def python_models(url: str, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """The loaded Python-backend models of the server at ``url`` (from its repository index and configs)."""
    base = base_url(url)
    index = _get_json(f"{base}/v2/repository/index", timeout, data=b"{}")
    names = sorted({m["name"] for m in index if m.get("state", "READY") == "READY"})
    return [n for n in names if _get_json(f"{base}/v2/models/{n}/config", timeout).get("backend") == "python"]


def probe(url: str, models: Iterable[str] | None = None, *, timeout: float = DEFAULT_TIMEOUT) -> list[ProbeResult]:
    """Probe ``models`` (default: every loaded Python-backend model) of the server at ``url``.

    A model whose config cannot be read or whose request cannot be built counts as failed, with the reason.
    """
    base = base_url(url)
    names = list(models) if models is not None else python_models(url, timeout)
    results = []
    for name in names:
        t0 = time.monotonic()
        try:
            target = probe_request(name, _get_json(f"{base}/v2/models/{name}/config", timeout))
            error = probe_model(base, name, target.body, target.expect, timeout)
        except urllib.error.HTTPError as exc:
            error = f"config not available (HTTP {exc.code})"
        except (OSError, ValueError) as exc:
            error = str(exc)
        results.append(ProbeResult(name, error, time.monotonic() - t0))
    return results


def exec_probe_command(targets: Sequence[ProbeTarget], *, port: int, timeout: float = DEFAULT_TIMEOUT,
                       python: str = "python3") -> list[str]:
    """An exec-probe command (``python3 -c SCRIPT``) that sends ``targets`` to ``127.0.0.1:port`` and exits 1 with
    the reason on the first wrong answer. Needs only a ``python3`` in the container (the Triton image has one)."""
    spec = [[t.model, t.body, t.expect] for t in targets]
    script = "\n".join([
        "from __future__ import annotations",  # the hints of probe_model on a Python < 3.10
        inspect.getsource(probe_model),
        "import json, sys",
        f"for _m, _b, _e in json.loads({json.dumps(spec)!r}):",
        f"    _err = probe_model('http://127.0.0.1:{port}', _m, _b, _e, {timeout!r})",
        "    if _err:",
        "        sys.exit('liveness probe: ' + _m + ': ' + _err)",
    ])
    return [python, "-c", script]


# --------------------------------------------------------------------------------------------------------- CLI


_CLI_DESCRIPTION = """\
A real liveness check: one tiny inference per Python-backend model (or to the models named), answered correctly.

Why: when a model's stub process dies (a crash in execute, the OOM killer), tritonserver 2.51 keeps reporting the
model and the server ready (/v2/health/ready, /v2/models/M/ready) while every request to it fails with "Stub
process '...' is not healthy". Only a request shows it.

Each request is built from the model's config (numeric inputs all ones, text inputs a short sentence) and sent over
Triton's HTTP/REST (KServe v2) protocol; the answer must have every configured output with its data type and
element count, numbers finite. One line per model; exit status 1 when any model failed (or none could be probed).
The KServe manifest's liveness probe (triton-textops deploy kserve) runs the same check inside the container."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``triton-textops probe URL [--model M]``."""
    p = sub.add_parser("probe", help="send one tiny real inference to each python model; fail if one is dead",
                       description=_CLI_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url", help="HTTP endpoint of the server: host:port or http://host:port")
    p.add_argument("--model", action="append", default=None,
                   help="model to probe, e.g. the ensemble (repeatable; default: every python model)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per request (default 10)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        results = probe(args.url, args.model, timeout=args.timeout)
    except (OSError, ValueError) as exc:
        print(f"probe: cannot list the models of {args.url}: {exc}", file=sys.stderr)
        return 1
    if not results:
        print(f"probe: {args.url} serves no python models (name one with --model)", file=sys.stderr)
        return 1
    for r in results:
        print(r.render(), file=sys.stdout if r.ok else sys.stderr)
    return 0 if all(r.ok for r in results) else 1
