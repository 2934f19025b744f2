"""A structure-aware fuzzer of tokenizer files, and the reference loaders it compares the package's loader with.

The base files are small but real: cut from the vocabularies under tests/data (GPT-2's encoder.json + vocab.bpe,
cl100k's ranks) and triton_textops/data (bert-base-uncased), written as HF itself serializes them (``to_str``). Each
mutation changes one field: drop it, retype it, duplicate it (an id given to a second token, a line or item listed
twice), negate it, enlarge it. :func:`verdict` loads the mutant with the package and with the reference (HF
``tokenizers`` for tokenizer.json and GPT-2's files, tiktoken's ``load_tiktoken_bpe`` + ``Encoding`` for rank
files): both refuse it, or both accept it and give the same ids on :data:`TEXTS`, or the package refuses it for
one of the reasons of :data:`DIVERGENCES` (documented limits of the package, each named in its message).
"""

from __future__ import annotations

import base64
import copy
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bpe_oracles import DATA, TIKTOKEN_PATTERNS, merges_from_ranks, ranks

from triton_textops.bundled import vocab_path
from triton_textops.ops.bpe import formats as F

TEXTS = ["hello world", "Hello, World! it's 12345 ok\n\n  x", "the theory of everything", "<|endoftext|> the end",
         "[CLS] [MASK] héllo ß", "", "a" * 40]
# why the package may refuse a file the reference loads: (a phrase its message must hold, what it documents)
DIVERGENCES = {
    "over this package's id limit": "ids index dense tables: a sparse id past max(2**20, 2 x entries) is refused",
    "shares id": "two tokens with one id (HF loads it; its id -> token map keeps either one)",
    "lacks single-byte tokens": "a byte-level vocabulary needs all 256 single bytes (tiktoken panics on encode)",
    "not supported": "a component the kernels do not implement",
    "not a known pattern": "a Split regex the hand-written scanners do not implement",
    "has no ByteLevel step": "not a byte-level BPE",
    "is not loaded": "a model type the package does not load",
    "HF fails on any word": "WordPiece without its unk_token (HF fails on the first word it cannot split)",
    "of encoding": "a rank file whose ranks hold the named encoding's special ids",
    "is not a token of the vocabulary": "a template's special token missing from the vocabulary",
    "is not in the vocabulary": "a vocab.txt without [CLS] / [SEP] / [UNK]",
    "this package's int32 kernels hold": "an id or count past 2**31 - 1 (the reference takes u32 / usize)",
    "is not a token id 0 .. 2**32 - 1": "HF's vocab.json reader truncates an id past 2**32 - 1 to 32 bits",
    "have no UNKNOWN piece": "a .model without an UNKNOWN piece (sentencepiece loads a BPE one; the package needs it)",
    "is not UTF-8": "a .model piece that is not UTF-8 (sentencepiece keeps its bytes; the package's pieces are text)",
}


# ------------------------------------------------------------------------------------------------ base files
def _bytes_str(b: bytes) -> str:
    return "".join(F.BYTE_CHAR[x] for x in b)


def small_gpt2(n_merges: int = 300) -> tuple[dict[str, int], list[str]]:
    """GPT-2's 256 byte tokens and first ``n_merges`` merges (their results: ids 256 ..), and <|endoftext|>."""
    enc = json.loads((DATA / "encoder.json").read_text(encoding="utf-8"))
    merges = (DATA / "vocab.bpe").read_text(encoding="utf-8").split("\n")[1:1 + n_merges]
    keep = {t for t, i in enc.items() if i < 256 + n_merges}
    vocab = {t: enc[t] for t in keep}
    vocab["<|endoftext|>"] = 256 + n_merges
    return vocab, merges


def write_base_files(root: Path) -> dict[str, Path]:
    """The base files: name -> path (a tokenizer.json, a .tiktoken, a vocab.json + merges.txt directory)."""
    from tokenizers import BertWordPieceTokenizer, Regex, Tokenizer, decoders, pre_tokenizers, processors  # noqa
    from tokenizers.models import BPE  # noqa: PLC0415

    root.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    vocab, merges = small_gpt2()
    g = root / "gpt2_files"
    g.mkdir(exist_ok=True)
    (g / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (g / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    out["gpt2_files"] = g
    # GPT-2 as HF writes it: ByteLevel pre-tokenizer and decoder, <|endoftext|> special, a Roberta-style template
    tok = Tokenizer(BPE(vocab, [tuple(m.split(" ")) for m in merges]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])
    tok.post_processor = processors.TemplateProcessing(single="<|endoftext|> $A", pair="$A $B",
                                                       special_tokens=[("<|endoftext|>", vocab["<|endoftext|>"])])
    tok.enable_truncation(64)
    tok.enable_padding(pad_id=0, pad_token="!")
    out["gpt2_json"] = _write(root / "gpt2.json", tok.to_str())
    # Llama-3 style: cl100k's first ranks, Split(regex) + ByteLevel(use_regex false), ignore_merges, a BOS template
    rk = {t: r for t, r in ranks("cl100k_base").items() if r < 1500}
    lv = {_bytes_str(t): r for t, r in rk.items()}
    lm = [(_bytes_str(a), _bytes_str(b)) for a, b in merges_from_ranks(rk)]
    tok = Tokenizer(BPE(lv, lm, ignore_merges=True))
    pattern = next(p for p, f in F.PATTERNS.items() if f == F.CL100K)
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pattern), "isolated"),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|begin_of_text|>", "<|end_of_text|>"])
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="$A $B",
                                                       special_tokens=[("<|begin_of_text|>", bos)])
    out["llama3_json"] = _write(root / "llama3.json", tok.to_str())
    # BERT WordPiece: bert-base-uncased's first 2000 lines ([PAD], [UNK], [CLS], [SEP], [MASK] among them)
    lines = vocab_path().read_text(encoding="utf-8").split("\n")[:2000]
    (root / "vocab.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out["vocab_txt"] = root / "vocab.txt"
    bert = BertWordPieceTokenizer(str(root / "vocab.txt"), lowercase=True)
    out["bert_json"] = _write(root / "bert.json", bert._tokenizer.to_str())
    # a rank file: cl100k's first 1500 ranks
    out["tiktoken"] = _write(root / "small.tiktoken", "".join(
        f"{base64.b64encode(t).decode()} {r}\n" for t, r in sorted(rk.items(), key=lambda x: x[1])))
    return out


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------ mutations
BIG = [2**20, 2**30, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 10**30]
RETYPES = [None, "x", "", 1, -1, 2.5, True, [], {}, [1, 2, 3]]


def _paths(node: Any, path: tuple, rng: random.Random, per_list: int) -> Iterator[tuple]:
    """Paths of the nodes of a JSON document, a few items of each long list / object (vocabularies, merges)."""
    yield path
    if isinstance(node, dict):
        keys = list(node)
        if len(keys) > per_list:
            keys = rng.sample(keys, per_list)
        for k in keys:
            yield from _paths(node[k], (*path, k), rng, per_list)
    elif isinstance(node, list):
        idx = list(range(len(node)))
        if len(idx) > per_list:
            idx = rng.sample(idx, per_list)
        for i in idx:
            yield from _paths(node[i], (*path, i), rng, per_list)


def _get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def json_mutants(doc: Any, rng: random.Random, n: int, per_list: int = 3) -> Iterator[tuple[str, Any]]:
    """``n`` mutants of a JSON document: (what was done, the new document)."""
    paths = [p for p in _paths(doc, (), rng, per_list) if p]
    for _ in range(n):
        path = rng.choice(paths)
        parent, k = _get(doc, path[:-1]), path[-1]
        value = parent[k]
        op = rng.choice(["drop", "retype", "duplicate", "negate", "enlarge"])
        new = copy.deepcopy(doc)
        p2 = _get(new, path[:-1])
        if op == "drop":
            del p2[k]
        elif op == "retype":
            p2[k] = rng.choice(RETYPES + ([float(value)] if type(value) is int else []))
        elif op == "duplicate":
            if isinstance(p2, list):
                p2.insert(k, copy.deepcopy(value))
            else:  # an entry's value under a second key (a vocabulary: two tokens with one id)
                other = rng.choice([x for x in p2 if x != k] or [k])
                p2[other] = copy.deepcopy(value)
        elif op == "negate":
            if type(value) is int:
                p2[k] = -value - rng.choice([0, 1])
            elif isinstance(value, bool):
                p2[k] = not value
            else:
                p2[k] = rng.choice(RETYPES)
        elif type(value) is int:  # (not a padding length: HF would pad every text to it)
            p2[k] = rng.choice([value + 1, 4096] if "padding" in path else BIG + [value + 1])
        elif isinstance(value, str):
            p2[k] = value + rng.choice(["x", " ", " y", "\u0100"])
        else:
            p2[k] = rng.choice(RETYPES)
        yield f"{op} {'/'.join(map(str, path))} ({json.dumps(value)[:40]})", new


def line_mutants(lines: list[str], rng: random.Random, n: int) -> Iterator[tuple[str, list[str]]]:
    """``n`` mutants of a line file (a rank file, merges.txt): a line dropped, duplicated, or one of its fields
    negated, enlarged or retyped."""
    for _ in range(n):
        i = rng.randrange(len(lines))
        new = list(lines)
        parts = new[i].split(" ")
        op = rng.choice(["drop", "duplicate", "negate", "enlarge", "retype", "split"])
        if op == "drop":
            del new[i]
        elif op == "duplicate":  # the line again, or its last field given to another line
            j = rng.randrange(len(lines))
            if rng.random() < 0.5:
                new.insert(j, lines[i])
            else:
                new[j] = " ".join(new[j].split(" ")[:-1] + parts[-1:])
        elif op == "negate" and parts[-1].isdigit():
            new[i] = " ".join(parts[:-1] + [f"-{parts[-1]}"])
        elif op == "enlarge" and parts[-1].isdigit():
            new[i] = " ".join(parts[:-1] + [str(rng.choice(BIG + [int(parts[-1]) + 1]))])
        elif op == "split":
            new[i] = rng.choice([new[i] + " x", parts[0], "", " ", new[i].replace(" ", "\t"), new[i] + "\r"])
        else:
            new[i] = " ".join(parts[:-1] + [rng.choice(["x", "1.0", "+3", "3_0", "", "0x1f", "\u0663", "!!"])])
        yield f"{op} line {i + 1} ({lines[i][:30]!r})", new


# ------------------------------------------------------------------------------------------------ loaders
def ours(path: Path, family: str) -> tuple[bool, Any]:
    """(accepted, ids of TEXTS or the one-line error) with the package's loader."""
    from triton_textops.ops.tokenizer import Tokenizer  # noqa: PLC0415

    try:
        tok = Tokenizer.from_file(path, encoding="cl100k_base" if family == "tiktoken" else None)
    except (ValueError, FileNotFoundError) as e:  # (ConfigError is a ValueError; anything else fails the test)
        return False, str(e)
    if family == "tiktoken":
        return True, tok.encode(TEXTS, allowed_special=()).tolist()
    return True, tok.encode(TEXTS).tolist()


def reference(path: Path, family: str) -> tuple[bool, Any]:
    """(accepted, ids of TEXTS or the error) with the reference loader, an encode of TEXTS included (a file it loads
    but panics on is refused)."""
    try:
        if family == "tiktoken":
            os.environ["TIKTOKEN_CACHE_DIR"] = ""  # (else tiktoken caches a local file's contents by its name)
            import tiktoken  # noqa: PLC0415
            from tiktoken.load import load_tiktoken_bpe  # noqa: PLC0415

            enc = tiktoken.Encoding("x", pat_str=TIKTOKEN_PATTERNS["cl100k_base"],
                                    mergeable_ranks=load_tiktoken_bpe(str(path)),
                                    special_tokens=F.ENCODINGS["cl100k_base"][1])
            return True, [enc.encode_ordinary(t) for t in TEXTS]
        from tokenizers import ByteLevelBPETokenizer, Tokenizer  # noqa: PLC0415

        if family == "gpt2_files":
            tok = ByteLevelBPETokenizer(str(path / "vocab.json"), str(path / "merges.txt"))
        elif family == "vocab_txt":
            from tokenizers import BertWordPieceTokenizer  # noqa: PLC0415

            tok = BertWordPieceTokenizer(str(path), lowercase=True)
        else:
            tok = Tokenizer.from_str(path.read_text(encoding="utf-8"))
        return True, [e.ids for e in tok.encode_batch(TEXTS)]
    except BaseException as e:  # noqa: BLE001 (pyo3's PanicException is a BaseException)
        if isinstance(e, KeyboardInterrupt):
            raise
        return False, f"{type(e).__name__}: {e}"


def verdict(path: Path, family: str) -> str | None:
    """None when the package agrees with the reference on ``path`` (see the module docstring), else what differs."""
    return compare(path, ours(path, family), reference(path, family), TEXTS)


def compare(path: Path, mine: tuple[bool, Any], ref: tuple[bool, Any], texts: list[str]) -> str | None:
    """The verdict on one file from the package's and the reference's (accepted, ids or error) on ``texts``."""
    (ok, got), (ref_ok, want) = mine, ref
    if not ok:
        if "\n" in got or str(path) not in got:
            return f"the package's error is not one line naming the file: {got!r}"
        if not ref_ok or any(p in got for p in DIVERGENCES):
            return None
        return f"the package refuses what the reference loads: {got}"
    if not ref_ok:
        return f"the package loads what the reference refuses ({want[:200]})"
    if ENCODE_FAILS in (got, want) and got != want:
        return f"one fails to encode the texts: {got if got == ENCODE_FAILS else want}"
    if got != want:
        bad = next(i for i in range(len(texts)) if got[i] != want[i])
        return f"ids differ on {texts[bad]!r}: {got[bad][:12]} vs {want[bad][:12]}"
    return None


def mutants(base: dict[str, Path], root: Path, rng: random.Random, n: int) -> Iterator[tuple[str, str, Path]]:
    """``n`` mutants of each base file, written under ``root``: (family, what was done, the path to load)."""
    root.mkdir(parents=True, exist_ok=True)
    for family, path in base.items():
        for k in range(n):
            if family in ("tiktoken", "vocab_txt"):
                lines = path.read_text(encoding="utf-8").split("\n")[:-1]
                what, new = next(line_mutants(lines, rng, 1))
                dst = _write(root / f"{family}-{k}{path.suffix}", "\n".join(new) + "\n")
            elif family == "gpt2_files":
                dst = root / f"{family}-{k}"
                dst.mkdir(exist_ok=True)
                if rng.random() < 0.5:
                    what, new_doc = next(json_mutants(json.loads((path / "vocab.json").read_text("utf-8")), rng, 1))
                    (dst / "vocab.json").write_text(json.dumps(new_doc), encoding="utf-8")
                    (dst / "merges.txt").write_bytes((path / "merges.txt").read_bytes())
                else:
                    lines = (path / "merges.txt").read_text(encoding="utf-8").split("\n")[:-1]
                    what, new = next(line_mutants(lines, rng, 1))
                    (dst / "vocab.json").write_bytes((path / "vocab.json").read_bytes())
                    (dst / "merges.txt").write_text("\n".join(new) + "\n", encoding="utf-8")
            else:
                what, new_doc = next(json_mutants(json.loads(path.read_text(encoding="utf-8")), rng, 1))
                dst = _write(root / f"{family}-{k}.json", json.dumps(new_doc, ensure_ascii=False))
            yield family, what, dst


# ------------------------------------------------------------------------------------------------ SentencePiece, Tekken
SP_TEXTS = TEXTS + ["中文字符测试，日本語のテキスト", "emoji 😀👍🏽 \u2581x  y", "Tiếng Việt có dấu: Hà Nội"]
SP_MODELS = {"sp_bpe": {"model_type": "bpe", "byte_fallback": True, "vocab_size": 500,
                        "character_coverage": 0.98},
             "sp_unigram": {"model_type": "unigram", "vocab_size": 500, "character_coverage": 0.98,
                            "normalization_rule_name": "identity"}}


def write_sp_base_files(root: Path) -> dict[str, Path]:
    """SentencePiece and Tekken base files: two tiny models trained by sentencepiece's trainer (tests/sp_oracles.py)
    as ``.model`` files and as tokenizer.json (transformers' converter: Llama's for BPE, the generic one for
    Unigram), and a Tekken file cut from mistral-common's tekken_240911.json (its first 1000 ranks)."""
    import sp_oracles as O  # noqa: PLC0415

    root.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for name, kw in SP_MODELS.items():
        out[f"{name}_model"] = O.train(root / f"{name}.model", **kw)
    out["sp_bpe_json"] = O.convert(out["sp_bpe_model"], root / "sp_bpe.json", "llama")
    out["sp_unigram_json"] = O.convert(out["sp_unigram_model"], root / "sp_unigram.json", "spm")
    out["tekken"] = _write(root / "tekken.json", json.dumps(small_tekken()))
    return out


def small_tekken(n: int = 1000, n_special: int = 20) -> dict:
    """mistral-common's tekken_240911.json cut to its first ``n`` ranks, with ``n_special`` special tokens listed
    (mistral-common's list for files that list none, filled up with ``<SPECIAL_i>``)."""
    from importlib import resources  # noqa: PLC0415

    doc = json.loads((resources.files("mistral_common") / "data" / "tekken_240911.json").read_text("utf-8"))
    doc["vocab"] = doc["vocab"][:n]
    from triton_textops.ops.bpe.rankfiles import TEKKEN_OLD_SPECIALS  # noqa: PLC0415

    doc["special_tokens"] = [{"rank": i, "token_str": t, "is_control": True}
                             for i, t in enumerate(TEKKEN_OLD_SPECIALS[:n_special])]
    doc["config"].update(default_vocab_size=n + n_special, default_num_special_tokens=n_special)
    for k in [k for k in doc if k not in ("vocab", "special_tokens", "config")]:
        del doc[k]
    return doc


PIECE_TYPES = [1, 2, 3, 4, 5, 6]  # (protobuf's Python runtime refuses a number the enum lacks)
SCORES = [float("nan"), float("inf"), -float("inf"), 1e39, -1e30, 0.0, 5.0]


def proto_mutants(data: bytes, rng: random.Random, n: int) -> Iterator[tuple[str, bytes]]:
    """``n`` mutants of a serialized ModelProto: a piece dropped, duplicated, retyped, its score or text changed;
    trainer_spec fields changed; the bytes cut or garbled. A garbled precompiled charsmap is not made: sentencepiece
    validates its double-array trie (darts' ``validate``), which the package does not replicate yet."""
    from triton_textops.ops.sentencepiece.model_proto import model_proto_class  # noqa: PLC0415

    cls = model_proto_class()
    for _ in range(n):
        m = cls.FromString(data)
        i = rng.randrange(len(m.pieces))
        p = m.pieces[i]
        op = rng.choice(["drop", "duplicate", "type", "score", "piece", "model_type", "byte_fallback", "cut",
                         "garble", "unk"])
        what = f"{op} pieces[{i}] ({p.piece!r} type {p.type})"
        if op == "drop":
            del m.pieces[i]
        elif op == "duplicate":
            j = rng.randrange(len(m.pieces))
            m.pieces.insert(j, type(p)(piece=p.piece, score=p.score, type=rng.choice([p.type, 1])))
        elif op == "type":
            p.type = rng.choice(PIECE_TYPES)
        elif op == "score":
            p.score = rng.choice(SCORES)
        elif op == "piece":
            p.piece = rng.choice(["", "<0xZZ>", "<0x1>", "<0x41>", m.pieces[rng.randrange(len(m.pieces))].piece,
                                  p.piece + "x", "\u2581"])
        elif op == "model_type":
            m.trainer_spec.model_type = rng.choice([3, 4, 1 if m.trainer_spec.model_type == 2 else 2])
            what = f"model_type {m.trainer_spec.model_type}"
        elif op == "byte_fallback":
            m.trainer_spec.byte_fallback = not m.trainer_spec.byte_fallback
            what = f"byte_fallback {m.trainer_spec.byte_fallback}"
        elif op == "unk":
            m.trainer_spec.unk_id = rng.choice([-1, 1, len(m.pieces), 3])
            what = f"unk_id {m.trainer_spec.unk_id}"
        raw = m.SerializeToString()
        if op == "cut":
            k = rng.randrange(1, len(raw))
            raw, what = raw[:k], f"cut at {k}"
        elif op == "garble":  # (not in the precompiled charsmap: its double-array trie is not checked, see below)
            k = rng.randrange(len(raw) - len(m.normalizer_spec.precompiled_charsmap) - 64)
            raw, what = raw[:k] + bytes([rng.randrange(256)]) + raw[k + 1:], f"byte {k} garbled"
        yield what, raw


_SPM_WORKER = """
import json, sys
import sentencepiece as spm
sp = spm.SentencePieceProcessor(model_proto=open(sys.argv[1], "rb").read())
print(json.dumps([sp.encode(t) for t in json.loads(sys.argv[2])]))
"""


def sp_reference(path: Path, family: str, texts: list[str]) -> tuple[bool, Any]:
    """(accepted, ids or the error) with the SentencePiece-family reference: sentencepiece's processor in its own
    process for ``.model`` files (it may abort the process), HF ``tokenizers`` for tokenizer.json, mistral-common's
    ``Tekkenizer`` for Tekken."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    if family.endswith("_model"):
        r = subprocess.run([sys.executable, "-c", _SPM_WORKER, str(path), json.dumps(texts)], capture_output=True,
                           text=True, timeout=120)
        if r.returncode:
            return False, (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        return True, json.loads(r.stdout)
    try:
        if family == "tekken":
            from mistral_common.tokens.tokenizers.tekken import Tekkenizer  # noqa: PLC0415

            tk = Tekkenizer.from_file(path)
            return True, [tk.encode(t, bos=False, eos=False) for t in texts]
        from tokenizers import Tokenizer  # noqa: PLC0415

        tok = Tokenizer.from_str(path.read_text(encoding="utf-8"))
    except BaseException as e:  # noqa: BLE001 (pyo3's PanicException is a BaseException)
        if isinstance(e, KeyboardInterrupt):
            raise
        return False, f"{type(e).__name__}: {e}"
    try:
        return True, [e.ids for e in tok.encode_batch(texts)]
    except Exception:  # noqa: BLE001 (HF's "Encountered an unknown token but `unk_id` is missing")
        return True, ENCODE_FAILS
    except BaseException as e:  # noqa: BLE001 (a panic: a file HF cannot use)
        if isinstance(e, KeyboardInterrupt):
            raise
        return False, f"{type(e).__name__}: {e}"


ENCODE_FAILS = "loads, but fails to encode the texts"


def sp_ours(path: Path, texts: list[str]) -> tuple[bool, Any]:
    """(accepted, ids of ``texts`` or the one-line error) with the package's loader."""
    import numpy as np  # noqa: PLC0415

    from triton_textops.errors import InputError  # noqa: PLC0415
    from triton_textops.ops.tokenizer import Tokenizer  # noqa: PLC0415

    try:
        tok = Tokenizer.from_file(path)
    except (ValueError, FileNotFoundError) as e:
        return False, str(e)
    try:
        r = tok.encode(texts)
    except InputError:  # (a text no piece covers, without an unknown id: HF fails the batch too)
        return True, ENCODE_FAILS
    if hasattr(r, "tolist"):
        return True, r.tolist()
    ids, off = np.asarray(r.ids), np.asarray(r.offsets)
    return True, [ids[off[i]:off[i + 1]].tolist() for i in range(len(off) - 1)]


def sp_verdict(path: Path, family: str) -> str | None:
    """:func:`verdict` for the SentencePiece and Tekken families."""
    return compare(path, sp_ours(path, SP_TEXTS), sp_reference(path, family, SP_TEXTS), SP_TEXTS)


def sp_mutants(base: dict[str, Path], root: Path, rng: random.Random, n: int) -> Iterator[tuple[str, str, Path]]:
    """``n`` mutants of each SentencePiece / Tekken base file: (family, what was done, the path)."""
    root.mkdir(parents=True, exist_ok=True)
    for family, path in base.items():
        for k in range(n):
            if family.endswith("_model"):
                what, raw = next(proto_mutants(path.read_bytes(), rng, 1))
                dst = root / f"{family}-{k}.model"
                dst.write_bytes(raw)
            else:
                what, new_doc = next(json_mutants(json.loads(path.read_text(encoding="utf-8")), rng, 1))
                dst = _write(root / f"{family}-{k}.json", json.dumps(new_doc, ensure_ascii=False))
            yield family, what, dst
