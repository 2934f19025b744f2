"""Load time of the ``tokenize`` and ``preprocess`` models: cold (numba compiles every kernel) and cached
(numba loads them from its cache), each in a fresh process, as a Triton stub would load them.

``initialize`` compiles every kernel signature a request will use (a warm-up batch of one text and one of
two), so the time is all paid at load and none on a request. Cold: an empty ``NUMBA_CACHE_DIR``; cached:
the same directory again. Usage: python benchmarks/model_load.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "tokenize": """
        max_batch_size: 64
        input [{ name: "TEXT" data_type: TYPE_STRING dims: [1] }]
        output [{ name: "INPUT_IDS" data_type: TYPE_INT64 dims: [128] },
                { name: "ATTENTION_MASK" data_type: TYPE_INT64 dims: [128] }]
        """,
    "preprocess": """
        max_batch_size: 64
        input [{ name: "INPUT0" data_type: TYPE_STRING dims: [1] }]
        output [{ name: "BERT_IDS" data_type: TYPE_INT64 dims: [128] },
                { name: "BERT_AM" data_type: TYPE_INT64 dims: [128] },
                { name: "TREE_FEATS" data_type: TYPE_FP32 dims: [207] }]
        """,
}
CHILD = """
import json, sys, time
t0 = time.perf_counter()
from triton_textops.testing import load_model
t1 = time.perf_counter()
with load_model(sys.argv[1], placement="cpu") as m:
    t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1}))
"""


def write_models(root: Path) -> dict[str, Path]:
    from triton_textops import ReadabilityFeatures
    from triton_textops.bundled import austen_paragraphs, vocab_path

    feats = root / "features.json"
    ReadabilityFeatures.fit(austen_paragraphs()[::2]).save(feats)
    dirs = {}
    for name, cfg in CONFIGS.items():
        d = root / name
        (d / "1").mkdir(parents=True)
        (d / "1" / "model.py").write_text(f"from triton_textops.models.{name} import TritonPythonModel  # noqa: F401\n")
        (d / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "python"\n' + textwrap.dedent(cfg))
        (d / "vocab.txt").write_bytes(Path(vocab_path()).read_bytes())
        (d / "features.json").write_bytes(feats.read_bytes())
        dirs[name] = d
    return dirs


def load_once(model_dir: Path, cache: Path) -> dict[str, float]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(model_dir)], env=env, check=True,
                         capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2, help="cached loads per model")
    args = ap.parse_args()
    print(f"# {machine()}")
    print(f"{'model':<11} {'state':<7} {'load s':>7} {'import s':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        dirs = write_models(Path(tmp))
        for name, d in dirs.items():
            cache = Path(tmp) / f"numba-cache-{name}"
            cold = load_once(d, cache)
            print(f"{name:<11} {'cold':<7} {cold['load']:7.2f} {cold['import']:9.2f}", flush=True)
            for _ in range(args.repeat):
                warm = load_once(d, cache)
                print(f"{name:<11} {'cached':<7} {warm['load']:7.2f} {warm['import']:9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
