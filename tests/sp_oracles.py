"""SentencePiece models trained here with sentencepiece's trainer, and their tokenizer.json conversions by
transformers' converter: the oracles of the SentencePiece tests (sentencepiece and HF tokenizers)."""

from __future__ import annotations

import io
import json
import types
from pathlib import Path

from triton_textops.ops.sentencepiece.model_proto import model_proto_class

AUSTEN = Path(__file__).resolve().parents[1] / "triton_textops" / "data" / "austen-paragraphs.jsonl"
MULTILINGUAL = [
    "中文字符测试，日本語のテキスト、한국어 텍스트。北京是中国的首都，上海是最大的城市。",
    "ภาษาไทยเป็นภาษาที่มีวรรณยุกต์ กรุงเทพมหานคร",
    "العربية لغة جميلة، مرحبا بكم في المدينة",
    "हिन्दी भारत की राजभाषा है। नमस्ते दुनिया",
    "Ελληνικά γλώσσα, Кириллица русский язык, עברית שפה",
    "Tiếng Việt có dấu: Hà Nội, Đà Nẵng; ქართული ენა",
    "emoji 😀👍🏽 👨‍👩‍👧 🇫🇷 ❤️ and e\u0301 a\u0300",
    "def f(x):\n    return x**2 + 1  # comment\n\tif a<b: print('hi')",
]


def corpus(n: int = 1200) -> list[str]:
    """Austen paragraphs and multilingual lines: the training text."""
    with open(AUSTEN, encoding="utf-8") as f:
        texts = [json.loads(ln)["text"] for ln in f][:n]
    return texts + MULTILINGUAL * 30


def train(path: Path, **kw: object) -> Path:
    """A SentencePiece model trained on :func:`corpus` with the trainer's options ``kw``, written to ``path``."""
    import sentencepiece as spm  # noqa: PLC0415

    out = io.BytesIO()
    opts = {"vocab_size": 1000, "model_type": "bpe", "character_coverage": 0.9995, "minloglevel": 2}
    opts.update(kw)
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus()), model_writer=out, **opts)
    path.write_bytes(out.getvalue())
    return path


def _converters() -> types.ModuleType:
    """transformers' converter module, made to read .model files with this package's schema (sentencepiece's own
    generated module needs a newer protobuf than the one installed) and to extract BPE merges by score (its
    generic extractor breaks on BPE in transformers 5.x)."""
    import transformers.convert_slow_tokenizer as C  # noqa: PLC0415
    from transformers.tokenization_utils_base import generate_merges  # noqa: PLC0415

    C.import_protobuf = lambda *a, **k: types.SimpleNamespace(ModelProto=model_proto_class())

    class Extractor(C.SentencePieceExtractor):
        def extract(self, vocab_scores: object = None) -> tuple:
            vocab = {p.piece: i for i, p in enumerate(self.proto.pieces)}
            return vocab, generate_merges(vocab, vocab_scores)

    C.SpmConverter.SpmExtractor = Extractor
    C.GemmaConverter.SpmExtractor = Extractor
    return C


def convert(model: Path, out: Path, style: str) -> Path:
    """``model`` converted to a tokenizer.json by transformers' converter: ``style`` "llama" (legacy: Prepend +
    Replace normalizer), "llama-metaspace" (legacy=False: Metaspace prepend_scheme first), "gemma" (Replace +
    Split(" ")) or "spm" (the generic SpmConverter); BOS added by a TemplateProcessing as Llama's."""
    import sentencepiece as spm  # noqa: PLC0415
    from tokenizers import processors  # noqa: PLC0415

    C = _converters()
    sp = spm.SentencePieceProcessor(model_file=str(model))
    orig = types.SimpleNamespace(
        vocab_file=str(model), legacy=style != "llama-metaspace", add_prefix_space=True, sp_model=sp,
        convert_ids_to_tokens=sp.id_to_piece, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
        add_bos_token=True, add_eos_token=False)
    cls = {"llama": C.LlamaConverter, "llama-metaspace": C.LlamaConverter, "gemma": C.GemmaConverter,
           "spm": C.SpmConverter}[style]
    tok = cls(orig).converted()
    if style != "spm":
        bos = sp.bos_id()
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)])
    tok.save(str(out))
    return out
