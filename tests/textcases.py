"""Text cases shared by the CPU tests (tests/ops) and the CUDA-simulator tests (tests/sim)."""

import random

ADVERSARIAL = [
    "Café, naïve résumé — ÉCOLE élève; São Paulo, Ångström, Øre, Łódź",
    "e\u0301 a\u0300\u0301\u0302 combining marks on x\u0327\u0328 and alone \u0301",
    "中文字符测试，日本語のテキスト、한국어 텍스트 and 𠀀𠀁 ext-B",
    "emoji 😀👍🏽 👨‍👩‍👧 flags 🇫🇷 and ❤️",
    "zero\u200bwidth\u200c join\u200d bom\ufeff soft\u00adhyphen",
    "controls \x00\x01\x07\x0b\x0c\x1c\x1f\x7f\x85 tab\tnewline\ncr\r end \ufffd",
    "nbsp\u00a0thin\u2009ideo\u3000en\u2002line\u2028para\u2029 narrow\u202f",
    "ＦＵＬＬ ｗｉｄｔｈ １２３ ！？ and ﬁ ﬂ ﬀ ligatures Ⅻ ½ ²",
    "Ελληνικά ΣΟΦΙΑ σοφία ς Σ, Кириллица ПРИВЕТ, العربية مرحبا, עברית",
    "İstanbul ı I i Ǆ ǅ ǆ ß ẞ ŉ ﬃ",
    "a" * 99,
    "b" * 100,
    "c" * 101,
    "d" * 250,
    "é" * 100 + " " + "é" * 101,
    "literal [CLS] and [SEP] [PAD] [UNK] [MASK] [cls] [Cls] x[CLS]y [[CLS]] [CLS",
    "## ##ing ###a #hash # ## word##piece",
    "...!!!???,,,;;;:::---((()))[[[]]]{{{}}}\"\"''``~~@@##$$%%^^&&**__++==||\\\\//<<>>",
    "¿Qué? ¡Olé! «guillemets» “curly” ‘single’ „low“ …ellipsis… – — ‐ ‑",
    "math ≠ ≤ ≥ ∑ ∫ √ ∞ ≮ ≯ currency $ € £ ¥ ₹ ₿ degree ° §¶ ©®™",
    "Tiếng Việt có dấu: Hà Nội, Đà Nẵng; हिन्दी; ภาษาไทย; ქართული",
    "   leading and trailing   ",
    "",
    " ",
    "\t\n\r \u00a0\u3000",
]


# (text, n_sentences) by features.md's sentence rule
SENTENCES = [
    ("", 0),
    ("   \n\t ", 0),
    ("One two three", 1),  # no final terminator
    ("One. Two", 2),
    ("Mr. Smith arrived. Dr. Jones left.", 2),  # abbreviations
    ("Mrs. Ms. Prof. Capt. Col. Gen. Lt. Sgt. Rev. St. Jr. Sr. Mt. Vs. end.", 1),
    ("J. R. R. Tolkien wrote books.", 1),  # initials
    ("U.S.A. is big.", 1),
    ("It costs 3.5 dollars. Cheap.", 2),  # "3.5"
    ("He scored 10. Then left.", 2),  # two-character word before '.'
    ("Really?! Yes.", 2),  # "?!" is one run
    ("What?!? No!!! Fine...", 3),
    ("Wait... what", 2),
    ("Well\u2026 fine\u2026", 2),  # ellipsis character
    ('He said "Stop." Then he left.', 2),  # closing quotes
    ("'Go!' she said.", 2),
    ("(Yes.) No.", 2),
    ("[Done.] Next", 2),
    ("\u201cGo.\u201d Then \u2018so.\u2019 And \u00abnon.\u00bb Fin", 4),
    ('"Stop."" Go', 2),  # two closers
    ("He left.[1] Next", 1),  # '[' is not a closer
    ("end.Next one", 1),  # no gap after the terminator
    ("I met Mr.", 1),  # abbreviation at the end: no sentence end, but words
    ("I met Mr.!", 1),  # run of two: ends
    ("A. B. c", 1),
    ("a .", 1),  # '.' with a gap after a one-letter word ends a sentence
    ("!!!", 1),  # punctuation only
    (". . .", 3),
    ("\u4e2d\u6587\u3002\u597d", 1),  # ideographic full stop is not a terminator
    ("Yes.\u00a0No.", 2),  # non-breaking space is whitespace
    ("Yes.\u200bNo.", 1),  # zero-width space is not whitespace
    ("Yes.\x00 No.", 2),  # NUL removed by the normalizer
    ("\u00c9t\u00e9. \u00c0 bient\u00f4t!", 2),
    ("x\u0301. Next", 1),  # one character after accent stripping
]


# Character pools for mixed_texts: every script and character class the normalizer and pre-tokenizer treat apart.
_POOLS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    " \t\n\r\x0b\x0c\x00\x7f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u205f\u3000\u200b\u200c\u200d\ufeff\u00ad\u034f",
    "àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞßĀāĂăĄąĆćİıŁłŒœŠšŸŽžǅǆǈǉǋǌ",
    "\u0300\u0301\u0302\u0303\u0308\u0327\u0345\u20d0\u0488\u064b\u05b0\u0e31\u093f\u0903",
    "中文字符测试日本語のテキスト한국어텍스트\u3400\u4dbf\U00020000\U0002a6df\uf900\ufaff\U0002f800",
    "ΑΒΓΔΣσςΩωάέήίΰАБВГДЖЗабвгджзЁёЇїΐ",
    "ไทยภาษาالعربيةעבריתहिन्दीবাংলাதமிழ்",
    "😀👍🏽👨\u200d👩\u200d👧\u200d👦🇯🇵✨❤️\U0001f9d1\u2764\ufe0f",
    "ﬁﬂﬃﬆ℃℉№™Ⅻⅻ①⑩⒜㎏㍿ＡＢＣａｂｃ０１２！？，。「」『』【】",
    "\ue000\uf8ff\U000f0000\U0010fffd\ufffd\ufffe\uffff\u0378\u0530",
    "¡¿«»‹›–—―‘’‚“”„†‡•…‰′″‴※‼⁇⁈€£¥¢§¶©®°±×÷",
]
_SPECIALS = ["[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]", "[cls]", "[SEP", "[[SEP]]"]
_SENTENCE_BITS = ["Mr.", "Dr.", "e.g.", "U.S.A.", "...", "?!", '"', "'", ")", "»", "”", "。", "…", "3.5", "A.", "b."]


def mixed_texts(seed: int, n: int, words: list[str]) -> list[str]:
    """``n`` seeded random texts: vocabulary ``words`` and abbreviations mixed with runs from every pool above,
    raw special tokens, and ASCII words of 95-210 characters (around WordPiece's 100-character limit)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(0, 40)):
            k = rng.random()
            if k < 0.3:
                parts.append(rng.choice(words) + rng.choice(["", " ", "  ", ".", ",", "\n"]))
            elif k < 0.35:
                parts.append(rng.choice(_SENTENCE_BITS))
            elif k < 0.4:
                parts.append(rng.choice(_SPECIALS))
            elif k < 0.43:
                parts.append("".join(rng.choice(_POOLS[0]) for _ in range(rng.randint(95, 210))))
            else:
                pool = rng.choice(_POOLS)
                parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 12))))
            if rng.random() < 0.5:
                parts.append(" ")
        out.append("".join(parts))
    return out
