"""The usual alternative to our ``preprocess`` model: a plain Python-backend model, written the way people do.

HF ``tokenizers`` (``BertWordPieceTokenizer`` over the same bert-base-uncased ``vocab.txt``) for the BERT inputs,
and per-text Python loops (regexes, ``collections.Counter``, a stop-word ``set``) for the readability features,
one request at a time. Same tensors as ``preprocess``: ``INPUT0`` (BYTES ``[batch, 1]``) → ``BERT_IDS``,
``BERT_AM`` (INT64 ``[batch, max_length]``) and ``TREE_FEATS`` (FP32 ``[batch, 207]``, normalized with the
features artifact's mean/std). The word lists, stop words and normalization come from the same
``features.json``; the word/sentence splitting is a simpler regex one, so the features are comparable, not
bit-identical. With the parameter ``tokenize_only: "true"`` it returns only ``BERT_IDS`` and ``BERT_AM`` (the
peer of our ``tokenize`` model). Used by ``benchmarks/perf.py``, which copies this file to ``<name>/1/model.py``
with ``vocab.txt`` and ``features.json`` next to ``1/``; the stub's environment needs ``tokenizers``.
"""

import json
import os
import re
from collections import Counter

import numpy as np
import triton_python_backend_utils as pb_utils
from tokenizers import BertWordPieceTokenizer

TOKEN = re.compile(r"\w+|[^\w\s]")
SENTENCE_END = re.compile(r"[.!?\u2026]+[\"')\]\u201d\u2019\u00bb]*(?=\s|$)")


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        model_dir = args["model_repository"]
        self.max_length = int(params.get("max_length", "128"))
        self.tokenize_only = params.get("tokenize_only", "false").lower() == "true"

        self.tokenizer = BertWordPieceTokenizer(os.path.join(model_dir, "vocab.txt"), lowercase=True)
        self.tokenizer.enable_truncation(self.max_length)
        self.tokenizer.enable_padding(length=self.max_length)

        with open(os.path.join(model_dir, "features.json"), encoding="utf-8") as f:
            artifact = json.load(f)
        self.stopwords = set(artifact["stopwords"]["words"])
        self.common = artifact["common"]
        self.rare = artifact["rare"]
        self.mean = np.array(artifact["mean"], dtype=np.float32)
        self.std = np.array(artifact["std"], dtype=np.float32)

    def text_features(self, text):
        text = text.lower()
        tokens = TOKEN.findall(text)
        words = [t for t in tokens if t[0].isalnum() or t[0] == "_"]
        n_punct = len(tokens) - len(words)
        ends = list(SENTENCE_END.finditer(text))
        n_sentences = len(ends)
        tail = text[ends[-1].end():] if ends else text
        if any(c.isalnum() for c in tail):
            n_sentences += 1
        counts = Counter(words)
        n_stop = 0
        for w in words:
            if w in self.stopwords:
                n_stop += 1
        per_sentence = (len(words) / n_sentences, n_stop / n_sentences) if n_sentences else (0.0, 0.0)
        row = [len(words), len(counts), n_punct, n_sentences, per_sentence[0], n_stop, per_sentence[1]]
        row += [counts.get(w, 0) for w in self.common]
        row += [counts.get(w, 0) for w in self.rare]
        return row

    def execute(self, requests):
        responses = []
        for request in requests:
            excerpts = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            texts = [e[0].decode("utf-8") if isinstance(e[0], bytes) else str(e[0]) for e in excerpts]
            encodings = self.tokenizer.encode_batch(texts)
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            outputs = [pb_utils.Tensor("BERT_IDS", ids), pb_utils.Tensor("BERT_AM", mask)]
            if not self.tokenize_only:
                feats = np.array([self.text_features(t) for t in texts], dtype=np.float32)
                feats = (feats - self.mean) / self.std
                outputs.append(pb_utils.Tensor("TREE_FEATS", feats.astype(np.float32)))
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
