"""``triton-textops demo`` (``make demo``): the trained readability pipeline in a real tritonserver.

1. finds a tritonserver (or unpacks Triton 2.51.0 from the nvidia-pytriton wheel into the cache);
2. trains the example (cached under ``.cache/demo/`` of the current directory) and writes its repository, which
   records what its python models need (``requirements.txt``: onnxruntime, treelite);
3. builds (once, cached) the model runtime venv the Python-backend stub runs in from that record (numpy<2 + it);
4. serves the repository as written (``TritonServer(repo)``), sends the excerpts through ``ensemble_all`` with
   tritonclient, and also walks the ensemble's steps one model at a time to show the BERT and forest scores
   behind each blended score;
5. measures latency (one excerpt per request) and throughput (batched and concurrent requests), stops the server.

Excerpts: held-out bundled Austen paragraphs, or a file with one excerpt per line (``-``: stdin).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from triton_textops.tools import import_client

ENSEMBLE = "ensemble_all"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``triton-textops demo``."""
    from triton_textops.tools.example.cli import add_build_options

    p = sub.add_parser("demo", help="serve the trained example pipeline in a real tritonserver and score text",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", nargs="?", help="file with one excerpt per line ('-' for stdin); default: bundled")
    p.add_argument("--count", type=int, default=16, help="bundled excerpts to score (default 16)")
    p.add_argument("--weight", type=float, default=None, help="BERT_WEIGHT of the blend (default 0.5)")
    p.add_argument("--cache", type=Path, default=Path(".cache") / "demo",
                   help="trained artifacts and the repository (default .cache/demo)")
    p.add_argument("--repository", type=Path, default=None, help="serve this repository instead of building one")
    p.add_argument("--protocol", choices=("http", "grpc"), default="grpc",
                   help="tritonclient protocol the excerpts are scored with (default grpc)")
    add_build_options(p)
    p.set_defaults(func=run)


# ------------------------------------------------------------------------------------------------ client side


def _client(url: str, protocol: str) -> tuple[Any, Any]:
    tc = import_client(protocol)
    return tc, tc.InferenceServerClient(url)


def infer(tc: Any, client: Any, model: str, inputs: Mapping[str, np.ndarray], outputs: list[str]) -> dict:
    """One request: ``{output: array}``."""
    from tritonclient.utils import np_to_triton_dtype

    req = []
    for name, arr in inputs.items():
        ii = tc.InferInput(name, list(arr.shape), np_to_triton_dtype(arr.dtype))
        ii.set_data_from_numpy(arr)
        req.append(ii)
    result = client.infer(model, req, outputs=[tc.InferRequestedOutput(n) for n in outputs])
    return {n: result.as_numpy(n) for n in outputs}


def ensemble_inputs(texts: list[str], weight: float) -> dict[str, np.ndarray]:
    """``ensemble_all`` inputs for a batch of excerpts."""
    return {"excerpt": np.array([[t.encode()] for t in texts], dtype=np.object_),
            "BERT_WEIGHT": np.full((len(texts), 1), weight, dtype=np.float32)}


def walk_ensemble(tc: Any, client: Any, steps: list[dict], inputs: Mapping[str, np.ndarray]) -> dict:
    """Run an ensemble's steps from the client, one member at a time: every ensemble tensor by name."""
    tensors = dict(inputs)
    pending = list(steps)
    while pending:
        step = next(s for s in pending if all(v in tensors for v in s["input_map"].values()))
        pending.remove(step)
        feed = {k: tensors[v] for k, v in step["input_map"].items()}
        out = infer(tc, client, step["model_name"], feed, list(step["output_map"]))
        tensors.update({v: out[k] for k, v in step["output_map"].items()})
    return tensors


def _chunks(n: int, size: int) -> list[slice]:
    return [slice(lo, min(lo + size, n)) for lo in range(0, n, size)]


def _ms(xs: list[float]) -> str:
    a = np.asarray(xs) * 1000
    return f"p50 {np.percentile(a, 50):7.1f} ms   p99 {np.percentile(a, 99):7.1f} ms"


# ------------------------------------------------------------------------------------------------ the demo


def read_excerpts(source: str | None, count: int, seed: int = 0, n_test: int = 300) -> tuple[list[str], str]:
    """Excerpts to score and where they came from. A line that is not valid UTF-8 is skipped with a message on
    stderr naming it (the text tensors carry UTF-8; stdin's own decoding would otherwise end in a traceback)."""
    if source:
        where = "stdin" if source == "-" else source
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
        lines = []
        for number, raw in enumerate(data.split(b"\n"), 1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                print(f"demo: {where} line {number} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
                      f"{exc.start}): skipped", file=sys.stderr)
                continue
            if line:
                lines.append(line)
        if not lines:
            raise SystemExit(f"demo: no excerpts in {where}")
        return lines, where
    from triton_textops.bundled import austen_paragraphs

    texts = austen_paragraphs()
    held_out = np.random.default_rng(seed).permutation(len(texts))[: min(n_test, len(texts) // 4)]
    return [texts[i] for i in held_out[:count]], f"{count} held-out bundled Austen paragraphs"


def _step(n: int, total: int, what: str) -> Callable[[], None]:
    t0 = time.monotonic()
    print(f"\n[{n}/{total}] {what}", flush=True)

    def done(extra: str = "") -> None:
        print(f"      done in {time.monotonic() - t0:.1f} s{extra}", flush=True)

    return done  # type: ignore[return-value]


def run(args: argparse.Namespace) -> int:
    from triton_textops.tools.example.readability import DEMO_BERT_WEIGHT, TrainConfig
    from triton_textops.tools.example.readability import flesch_kincaid_grade as fk
    from triton_textops.tools.repo.generate import RepositoryError
    from triton_textops.tools.repo.requirements import REQUIREMENTS_FILE, read_requirements
    from triton_textops.tools.server import (
        TritonServer,
        TritonServerError,
        find_server,
        repository_runtime_env,
    )
    from triton_textops.triton import config as cfgmod

    # what serving and scoring import, checked before minutes of training (a missing one: one line naming the extra)
    import_client(args.protocol)
    cfgmod.model_config_pb2()
    t_start = time.monotonic()
    weight = DEMO_BERT_WEIGHT if args.weight is None else args.weight
    texts, source = read_excerpts(args.input, args.count, TrainConfig().seed, TrainConfig().n_test)
    total = 5
    print("triton-textops demo: the seed's readability pipeline (preprocess → MiniLM regressor + random forest → "
          "blend) in a real tritonserver")

    try:  # the download is announced only when it happens
        find_server(install=False)
        what = "tritonserver"
    except TritonServerError:
        what = "tritonserver (first run: downloads the nvidia-pytriton wheel, ~55 MB, and unpacks it)"
    done = _step(1, total, what)
    install = find_server()
    done(f": {install.executable} ({install.origin})")

    if args.repository:
        done = _step(2, total, f"example repository: using {args.repository}")
        repo = args.repository
        done()
    else:
        from triton_textops.tools.example.cli import build

        done = _step(2, total, "example: train (or reuse) the models and write the repository")
        if args.artifacts is None:
            args.artifacts = args.cache / "artifacts"
        backends = args.backends or ("native" if args.device == "gpu" else "python")
        try:
            repo, _ = build(args, args.cache / f"repo-{args.device}-{backends}")
        except RepositoryError as exc:
            print(f"demo: {exc}", file=sys.stderr)
            return 1
        done()

    needs = read_requirements(repo)
    what = "numpy<2" + "".join(f", {r}" for r in needs or ())
    done = _step(3, total, f"model runtime venv for the Python-backend stub ({what}: the repository's {REQUIREMENTS_FILE})")
    if install.from_wheel:
        done(f": {repository_runtime_env(repo)}")
    else:
        done(f": none; {install.origin} server: its own Python environment")

    done = _step(4, total, "start tritonserver on the repository as written")
    server = TritonServer(repo, install=install, startup_timeout=300)
    try:
        server.start()
    except TritonServerError as err:
        print(err, file=sys.stderr)
        return 1
    try:
        done(f": HTTP {server.http_url}, gRPC {server.grpc_url}")
        done = _step(5, total, f"score {len(texts)} excerpts ({source}) through '{ENSEMBLE}' over {args.protocol}")
        _score(server, repo, texts, weight, args.protocol, fk, cfgmod)
        done()
    finally:
        t0 = time.monotonic()
        server.stop()
        print(f"\nserver stopped in {time.monotonic() - t0:.1f} s; demo took {time.monotonic() - t_start:.1f} s")
    return 0


def _score(server: Any, repo: Path, texts: list[str], weight: float, protocol: str, fk: Callable[[str], float],
           cfgmod: Any) -> None:
    url = server.grpc_url if protocol == "grpc" else server.http_url
    tc, client = _client(url, protocol)
    ens = cfgmod.config_to_json_dict(cfgmod.load_config(Path(repo) / ENSEMBLE))
    mbs = int(ens.get("max_batch_size", 0)) or len(texts)
    steps = ens["ensemble_scheduling"]["step"]
    out_name = ens["output"][0]["name"]
    member_out = {s["model_name"]: next(iter(s["output_map"].values())) for s in steps}

    scores, walked = [], []
    for sl in _chunks(len(texts), mbs):
        inputs = ensemble_inputs(texts[sl], weight)
        scores.append(infer(tc, client, ENSEMBLE, inputs, [out_name])[out_name][:, 0])
        walked.append(walk_ensemble(tc, client, steps, inputs))
    score = np.concatenate(scores)
    bert = np.concatenate([w[member_out["bert-large"]][:, 0] for w in walked])
    tree = np.concatenate([w[member_out["cuml"]][:, 0] for w in walked])
    blend = np.float32(weight) * bert + np.float32(1 - weight) * tree

    print(f"\n  {'#':>3}  {'FK grade':>8}  {'BERT':>6}  {'forest':>6}  {'SCORE':>6}   excerpt  (FK grade: the "
          "training target, computed from the text)")
    for i, t in enumerate(texts):
        short = t if len(t) <= 60 else t[:57] + "..."
        print(f"  {i + 1:>3}  {fk(t):8.2f}  {bert[i]:6.2f}  {tree[i]:6.2f}  {score[i]:6.2f}   {short}")
    diff = float(np.abs(score - blend).max())
    print(f"\n  check: SCORE = {weight:g} * BERT + {1 - weight:g} * forest for every excerpt "
          f"(max |difference| {diff:.2e}) -> {'ok' if diff <= 1e-4 * max(1.0, float(np.abs(blend).max())) else 'MISMATCH'}")

    # latency: one excerpt per request, sequentially
    lat = []
    for t in texts:
        t0 = time.perf_counter()
        infer(tc, client, ENSEMBLE, ensemble_inputs([t], weight), [out_name])
        lat.append(time.perf_counter() - t0)
    print(f"\n  latency, 1 excerpt per request, sequential ({len(lat)} requests): {_ms(lat)}")
    # one request carrying a batch
    batch = texts[:mbs]
    t0 = time.perf_counter()
    infer(tc, client, ENSEMBLE, ensemble_inputs(batch, weight), [out_name])
    secs = time.perf_counter() - t0
    print(f"  one request of {len(batch)} excerpts: {secs * 1000:.1f} ms ({len(batch) / secs:.1f} excerpts/s)")

    # concurrent clients, 1 excerpt per request (the server's dynamic batching groups them)
    workers = 4
    reqs = [texts[i % len(texts)] for i in range(max(len(texts), 4 * workers))]

    def one(t: str) -> float:
        c = tls_client()
        t1 = time.perf_counter()
        infer(tc, c, ENSEMBLE, ensemble_inputs([t], weight), [out_name])
        return time.perf_counter() - t1

    local = threading.local()
    opened: list[Any] = []

    def tls_client() -> Any:
        if not hasattr(local, "client"):
            local.client = tc.InferenceServerClient(url)
            opened.append(local.client)
        return local.client

    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        lat_c = list(pool.map(one, reqs))
    secs = time.perf_counter() - t0
    for c in opened:
        c.close()
    print(f"  {workers} concurrent clients, {len(reqs)} requests of 1 excerpt: {len(reqs) / secs:.1f} excerpts/s, "
          f"{_ms(lat_c)}")
    print("  (on CPU the MiniLM encoder dominates: ~128 tokens x 6 layers per excerpt)")
    client.close()
