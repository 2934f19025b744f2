"""A real liveness check: one tiny inference per Python-backend model (or per ensemble), answered correctly.

Why: when a model's stub process dies (a crash in ``execute``, the OOM killer), tritonserver 2.51 keeps reporting
the model and the server ready (``/v2/health/ready``, ``/v2/models/M/ready``) while every request to it fails with
"Stub process '...' is not healthy"; the r24.10 Python backend does not restart it. Only a request shows it.

:func:`probe_request` builds a batch-1 request from a model's config (numeric inputs all ones, text inputs a short
sentence), :func:`probe_model` sends it over Triton's HTTP/REST (KServe v2) protocol and checks the answer: every
configured output present with its data type and element count, numbers finite. A decoupled (streaming) model
(``model_transaction_policy { decoupled: true }`` in its config) has no HTTP infer endpoint: :func:`probe_stream`
sends the same request over gRPC as a one-request ``ModelStreamInfer`` stream, bounded in time, and checks each
response the same way (an error response, no response, or the stream ending early fails). All of it uses only the
standard library (``probe_stream`` speaks just enough HTTP/2 and protobuf for this one call: the Triton image has no
grpcio), so the same code runs in ``TritonServer.probe()``, ``triton-textops probe URL`` and, as a ``python3 -c``
script (:func:`exec_probe_command`), inside the Triton container of a Kubernetes liveness probe.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PROBE_TEXT = "It was a fine day."
DEFAULT_TIMEOUT = 10.0
DEFAULT_GRPC_PORT = 8001  # tritonserver's --grpc-port default
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
    decoupled: bool = False  # probed over gRPC streaming (Triton's HTTP infer refuses decoupled models)


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
    return ProbeTarget(model, {"id": "liveness-probe", "inputs": inputs}, expect, is_decoupled(config))


def is_decoupled(config: Mapping[str, Any]) -> bool:
    """``model_transaction_policy.decoupled`` of a config's JSON form (the server's or ``config_to_json_dict``'s)."""
    policy = config.get("model_transaction_policy") or {}
    return bool(policy.get("decoupled", False)) if isinstance(policy, Mapping) else False


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


def probe_stream(host: str, port: int, model: str, body: dict, expect: dict, timeout: float) -> str | None:
    """Send ``body`` (the JSON request of :func:`probe_request`) to a decoupled ``model`` over gRPC as a one-request
    ``inference.GRPCInferenceService/ModelStreamInfer`` stream; None if at least one response came, no response was
    an error and each response has every expected output right, else why not. The whole call ends by ``timeout``.

    Self-contained (standard library, imports inside) like :func:`probe_model`: a minimal HTTP/2 client (prior
    knowledge, no TLS, HPACK literals) and protobuf coder for this one call, so it also runs in the Triton image.
    The request asks for Triton's empty final response (``triton_enable_empty_final_response``): the stream is done
    when that response (``triton_final_response``) or the end of the gRPC stream arrives.
    """
    import math
    import socket
    import struct
    import time

    def varint(n: int) -> bytes:
        n &= (1 << 64) - 1
        out = bytearray()
        while True:
            b, n = n & 0x7F, n >> 7
            out.append(b | (0x80 if n else 0))
            if not n:
                return bytes(out)

    def field(num: int, payload: bytes) -> bytes:  # a length-delimited field
        return varint(num << 3 | 2) + varint(len(payload)) + payload

    def fields(buf: bytes) -> list:
        out, i = [], 0
        while i < len(buf):
            key, i = read_varint(buf, i)
            num, wire = key >> 3, key & 7
            if wire == 0:
                value, i = read_varint(buf, i)
            elif wire == 2:
                n, i = read_varint(buf, i)
                value, i = buf[i:i + n], i + n
            elif wire in (1, 5):
                n = 8 if wire == 1 else 4
                value, i = buf[i:i + n], i + n
            else:
                raise ValueError(f"protobuf wire type {wire}")
            out.append((num, wire, value))
        return out

    def read_varint(buf: bytes, i: int) -> tuple:
        n = shift = 0
        while True:
            b = buf[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n, i

    formats = {"BOOL": "?", "UINT8": "B", "UINT16": "H", "UINT32": "I", "UINT64": "Q", "INT8": "b", "INT16": "h",
               "INT32": "i", "INT64": "q", "FP16": "e", "FP32": "f", "FP64": "d"}
    request, raws = field(1, model.encode()) + field(3, str(body.get("id", "")).encode()), []
    request += field(4, field(1, b"triton_enable_empty_final_response") + field(2, b"\x08\x01"))  # bool_param: true
    for inp in body["inputs"]:
        shape = b"".join(varint(d) for d in inp["shape"])
        request += field(5, field(1, inp["name"].encode()) + field(2, inp["datatype"].encode()) + field(3, shape))
        if inp["datatype"] == "BYTES":
            raws.append(b"".join(struct.pack("<I", len(x.encode())) + x.encode() for x in inp["data"]))
        else:
            raws.append(struct.pack(f"<{len(inp['data'])}{formats[inp['datatype']]}", *inp["data"]))
    request += b"".join(field(7, r) for r in raws)

    def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload

    def literal(name: str, value: str) -> bytes:  # HPACK: literal header field without indexing, new name
        def string(s: str) -> bytes:
            data = s.encode()
            n = len(data)
            if n < 127:
                return bytes([n]) + data
            n -= 127
            out = bytearray([127])
            while n >= 128:
                out.append(n & 0x7F | 0x80)
                n >>= 7
            return bytes(out) + bytes([n]) + data
        return b"\x00" + string(name) + string(value)

    headers = b"".join(literal(k, v) for k, v in (
        (":method", "POST"), (":scheme", "http"), (":path", "/inference.GRPCInferenceService/ModelStreamInfer"),
        (":authority", f"{host}:{port}"), ("content-type", "application/grpc"), ("te", "trailers"),
        ("grpc-timeout", f"{max(int(timeout * 1000), 1)}m")))
    message = b"\x00" + struct.pack(">I", len(request)) + request
    deadline = time.monotonic() + timeout

    def check(response: bytes) -> tuple:
        """(error or None, final flag, whether it has outputs) of one ModelInferResponse."""
        outputs, raw, final = [], [], False
        for num, _, value in fields(response):
            if num == 4:  # parameters: map<string, InferParameter>
                entry = dict((n, v) for n, _, v in fields(value))
                if entry.get(1) == b"triton_final_response":
                    final = any(n == 1 and v == 1 for n, _, v in fields(entry.get(2, b"")))
            elif num == 5:
                outputs.append(value)
            elif num == 6:
                raw.append(value)
        if final and not outputs:
            return None, True, False
        got = {}
        for k, out in enumerate(outputs):
            name, datatype, shape = "", "", []
            for num, wire, value in fields(out):
                if num == 1:
                    name = value.decode()
                elif num == 2:
                    datatype = value.decode()
                elif num == 3 and wire == 0:
                    shape.append(value)
                elif num == 3:
                    i = 0
                    while i < len(value):
                        d, i = read_varint(value, i)
                        shape.append(d)
            got[name] = (datatype, shape, raw[k] if k < len(raw) else b"")
        for name, (datatype, count) in expect.items():
            if name not in got:
                return f"output {name} missing from a streamed response", final, True
            kind, shape, data = got[name]
            if kind != datatype:
                return f"output {name} is {kind}, expected {datatype}", final, True
            n = 1
            for d in shape:
                n *= d
            if count >= 0 and n != count:
                return f"output {name} has {n} elements, expected {count}", final, True
            if datatype in ("FP16", "FP32", "FP64"):
                fmt = formats[datatype]
                values = struct.unpack(f"<{len(data) // struct.calcsize(fmt)}{fmt}", data)
                if not all(math.isfinite(x) for x in values):
                    return f"output {name} is not finite: {list(values[:8])}", final, True
        return None, final, True

    answers = 0
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0) + frame(1, 0x4, 1, headers)
                         + frame(0, 0x1, 1, message))  # SETTINGS; HEADERS (END_HEADERS); DATA (END_STREAM)
            buf, grpc = b"", b""
            while True:
                while len(buf) < 9 or len(buf) < 9 + int.from_bytes(buf[:3], "big"):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return f"no complete answer within {timeout:g} s ({answers} response(s) so far)"
                    sock.settimeout(left)
                    try:
                        chunk = sock.recv(65536)
                    except TimeoutError:  # (socket.timeout; the Triton images have Python >= 3.10)
                        chunk = None
                    if chunk is None or time.monotonic() >= deadline:
                        return f"no complete answer within {timeout:g} s ({answers} response(s) so far)"
                    if not chunk:
                        return f"the server closed the connection ({answers} response(s) so far)"
                    buf += chunk
                n = int.from_bytes(buf[:3], "big")
                kind, flags, stream = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                payload, buf = buf[9:9 + n], buf[9 + n:]
                if kind == 4 and not flags & 0x1:
                    sock.sendall(frame(4, 0x1, 0))  # SETTINGS ACK
                elif kind == 6 and not flags & 0x1:
                    sock.sendall(frame(6, 0x1, 0, payload))  # PING ACK
                elif kind == 7:
                    return f"the server ended the connection (GOAWAY {payload[4:8].hex()}: {payload[8:]!r})"
                elif kind == 3 and stream == 1:
                    return f"the server reset the stream (HTTP/2 error {int.from_bytes(payload[:4], 'big')})"
                elif kind == 0 and stream == 1:
                    if flags & 0x8:  # PADDED
                        payload = payload[1:len(payload) - payload[0]]
                    grpc += payload
                    if n:
                        sock.sendall(frame(8, 0, 0, struct.pack(">I", n)) + frame(8, 0, 1, struct.pack(">I", n)))
                    while len(grpc) >= 5 and len(grpc) >= 5 + int.from_bytes(grpc[1:5], "big"):
                        m = int.from_bytes(grpc[1:5], "big")
                        reply, grpc = grpc[5:5 + m], grpc[5 + m:]
                        parts = dict((num, value) for num, _, value in fields(reply))
                        if parts.get(1):
                            return parts[1].decode(errors="replace")
                        error, final, has_outputs = check(parts.get(2, b""))
                        if error:
                            return error
                        answers += has_outputs
                        if final:
                            return None if answers else "the stream ended without a response"
                if kind in (0, 1) and stream == 1 and flags & 0x1:  # END_STREAM: the gRPC status came
                    return None if answers else "the stream ended without a response (gRPC error status)"
    except (OSError, ValueError, IndexError, struct.error) as exc:
        return f"no answer: {exc}"


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


def grpc_address(url: str, grpc_url: str | None = None) -> tuple[str, int]:
    """``(host, port)`` of the gRPC endpoint: ``grpc_url`` (``host:port``), else the HTTP host on port 8001."""
    if grpc_url:
        host, _, port = grpc_url.rpartition(":")
        return host.strip("[]") or "127.0.0.1", int(port)
    host = urllib.parse.urlsplit(base_url(url)).hostname or "127.0.0.1"
    return host, DEFAULT_GRPC_PORT


def probe(url: str, models: Iterable[str] | None = None, *, timeout: float = DEFAULT_TIMEOUT,
          grpc_url: str | None = None) -> list[ProbeResult]:
    """Probe ``models`` (default: every loaded Python-backend model) of the server at ``url`` (HTTP); decoupled
    models over gRPC streaming at ``grpc_url`` (default: the same host, port 8001).

    A model whose config cannot be read or whose request cannot be built counts as failed, with the reason.
    """
    base = base_url(url)
    names = list(models) if models is not None else python_models(url, timeout)
    results = []
    for name in names:
        t0 = time.monotonic()
        try:
            target = probe_request(name, _get_json(f"{base}/v2/models/{name}/config", timeout))
            if target.decoupled:
                error = probe_stream(*grpc_address(url, grpc_url), name, target.body, target.expect, timeout)
            else:
                error = probe_model(base, name, target.body, target.expect, timeout)
        except urllib.error.HTTPError as exc:
            error = f"config not available (HTTP {exc.code})"
        except (OSError, ValueError) as exc:
            error = str(exc)
        results.append(ProbeResult(name, error, time.monotonic() - t0))
    return results


def exec_probe_command(targets: Sequence[ProbeTarget], *, port: int, grpc_port: int = DEFAULT_GRPC_PORT,
                       timeout: float = DEFAULT_TIMEOUT, python: str = "python3") -> list[str]:
    """An exec-probe command (``python3 -c SCRIPT``) that sends ``targets`` to ``127.0.0.1`` (HTTP ``port``;
    decoupled models over gRPC ``grpc_port``) and exits 1 with the reason on the first wrong answer. Needs only a
    ``python3`` in the container (the Triton image has one)."""
    spec = [[t.model, t.body, t.expect, t.decoupled] for t in targets]
    script = "\n".join([
        "from __future__ import annotations",  # the hints of probe_model on a Python < 3.10
        inspect.getsource(probe_model),
        *([inspect.getsource(probe_stream)] if any(t.decoupled for t in targets) else []),
        "import json, sys",
        f"for _m, _b, _e, _d in json.loads({json.dumps(spec)!r}):",
        f"    _err = (probe_stream('127.0.0.1', {grpc_port}, _m, _b, _e, {timeout!r}) if _d else",
        f"            probe_model('http://127.0.0.1:{port}', _m, _b, _e, {timeout!r}))",
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
Triton's HTTP/REST (KServe v2) protocol, to a decoupled (streaming) model over gRPC as a one-request stream (--grpc,
default: the same host, port 8001); the answer must have every configured output with its data type and
element count, numbers finite. One line per model; exit status 1 when any model failed (or none could be probed).
The KServe manifest's liveness probe (triton-textops deploy kserve) runs the same check inside the container."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``triton-textops probe URL [--model M]``."""
    p = sub.add_parser("probe", help="send one tiny real inference to each python model; fail if one is dead",
                       description=_CLI_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url", help="HTTP endpoint of the server: host:port or http://host:port")
    p.add_argument("--model", action="append", default=None,
                   help="model to probe, e.g. the ensemble (repeatable; default: every python model)")
    p.add_argument("--grpc", default=None, metavar="HOST:PORT",
                   help="gRPC endpoint for decoupled models (default: the URL's host, port 8001)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per request (default 10)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        results = probe(args.url, args.model, timeout=args.timeout, grpc_url=args.grpc)
    except (OSError, ValueError) as exc:
        print(f"probe: cannot list the models of {args.url}: {exc}", file=sys.stderr)
        return 1
    if not results:
        print(f"probe: {args.url} serves no python models (name one with --model)", file=sys.stderr)
        return 1
    for r in results:
        print(r.render(), file=sys.stdout if r.ok else sys.stderr)
    return 0 if all(r.ok for r in results) else 1
