"""`triton-textops fit-features`: corpus formats, artifact, summary, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from triton_textops import ReadabilityFeatures
from triton_textops.cli import main
from triton_textops.tools.features_cli import read_corpus

TEXTS = [f"Text {i} talks about word{i % 7} and the thing{i}. Done!" for i in range(40)]


def test_fit_features_jsonl(tmp_path, capsys):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": t, "id": i}) + "\n" for i, t in enumerate(TEXTS)) + "\n", "utf-8")
    out = tmp_path / "f.json"
    assert main(["fit-features", str(corpus), "-o", str(out), "--n-common", "5", "--n-rare", "5"]) == 0
    cap = capsys.readouterr()
    assert "40 texts" in cap.out and "7 + 5 common + 5 rare" in cap.out and "nltk-179" in cap.out
    assert "words_per_sentence" in cap.out
    assert "normalizing" in cap.err  # progress bar on stderr
    feats = ReadabilityFeatures.load(out)
    direct = ReadabilityFeatures.fit(TEXTS, n_common=5, n_rare=5)
    assert feats.common == direct.common and feats.rare == direct.rare
    np.testing.assert_array_equal(feats.mean, direct.mean)


def test_fit_features_txt_cased_no_progress(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(TEXTS) + "\n\n", "utf-8")
    out = tmp_path / "f.json"
    rc = main(["fit-features", str(corpus), "-o", str(out), "--n-common", "3", "--n-rare", "3",
               "--cased", "--stopwords", "nltk-198", "--no-progress"])
    assert rc == 0
    cap = capsys.readouterr()
    assert cap.err == "" and "casing cased" in cap.out
    feats = ReadabilityFeatures.load(out)
    assert not feats.lowercase and feats.stopwords_name == "nltk-198" and "Text" in feats.common


def test_fit_features_errors(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"txt": "no"}\n', "utf-8")
    assert main(["fit-features", str(bad), "-o", str(tmp_path / "x.json")]) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err
    small = tmp_path / "small.txt"
    small.write_text("the cat\nthe dog\n", "utf-8")
    assert main(["fit-features", str(small), "-o", str(tmp_path / "x.json"), "--no-progress"]) == 2
    assert "fewer than n_common + n_rare = 200" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
    with pytest.raises(ValueError, match="not valid UTF-8"):
        (tmp_path / "b.txt").write_bytes(b"fine\n\xff\n")
        read_corpus(tmp_path / "b.txt")
    with pytest.raises(ValueError, match="does not exist"):
        read_corpus(tmp_path / "nope.txt")
