"""Parse a pre-tokenizer regex into a small syntax tree, in the dialect of its reference engine.

``onig``: Oniguruma's Ruby syntax, as HF tokenizers compiles a ``Split`` pattern (``x{n,m}+`` is ``(?:x{n,m})+``,
``x{n}?`` is ``(?:x{n})?``, ``^`` / ``$`` are line anchors). ``fancy``: fancy-regex over the Rust ``regex`` syntax,
as tiktoken compiles its ``pat_str`` (``x{n,m}+`` is possessive, ``^`` / ``$`` are text anchors).

Nodes are tuples: ``("set", S)`` one character of the set expression ``S`` (``("cp", lo, hi)``, ``("gc", name)``,
``("prop", name)``, ``("not", S)``, ``("or", [S...])``, ``("and", [S...])``, ``("fold", S)``: ``S`` matched
case-insensitively), ``("cat", [n...])``, ``("alt", [n...])``, ``("rep", n, lo, hi, mode)`` (``hi`` -1: no bound;
mode ``greedy`` / ``lazy`` / ``possessive``), ``("atomic", n)``, ``("assert", kind)``, ``("look", ahead, negated,
n)``. Anything else the engines accept (backreferences, conditionals, flags other than ``i`` ...) is a
:class:`~triton_textops.errors.ConfigError` naming the construct and where it is.
"""

from __future__ import annotations

import re
from typing import Any

from triton_textops.errors import ConfigError

Node = tuple
FLAVORS = ("onig", "fancy")
GC_GROUPS = {"L": ("Lu", "Ll", "Lt", "Lm", "Lo"), "M": ("Mn", "Mc", "Me"), "N": ("Nd", "Nl", "No"),
             "P": ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"), "S": ("Sm", "Sc", "Sk", "So"), "Z": ("Zs", "Zl", "Zp")}
GC_NAMES = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf",
            "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn")
_LONG = {"Letter": "L", "Mark": "M", "Number": "N", "Punctuation": "P", "Symbol": "S", "Separator": "Z",
         "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt", "Modifier_Letter": "Lm",
         "Other_Letter": "Lo", "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me",
         "Decimal_Number": "Nd", "Letter_Number": "Nl", "Other_Number": "No", "Connector_Punctuation": "Pc",
         "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps", "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi",
         "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Math_Symbol": "Sm", "Currency_Symbol": "Sc",
         "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Space_Separator": "Zs", "Line_Separator": "Zl",
         "Paragraph_Separator": "Zp", "Control": "Cc", "Format": "Cf", "Private_Use": "Co", "Unassigned": "Cn"}
SCRIPTS = ("Han", "Hiragana", "Katakana", "Hangul", "Latin", "Greek", "Cyrillic", "Arabic", "Hebrew", "Thai",
           "Devanagari", "Common", "Inherited")  # (the measured ones: scripts/gen_regex_tables.py)
_SIMPLE = {"n": 10, "r": 13, "t": 9, "f": 12, "v": 11, "a": 7, "e": 27}
_CLASS_ESC = {"s": ("prop", "s"), "d": ("prop", "d"), "w": ("prop", "w"), "h": ("prop", "h")}
# a case-sensitive property under (?i) (the engines fold it differently: refused)
_CASED = {"Lu", "Ll", "Lt"}


def unicode_set(name: str, where: str) -> Node:
    """The set of ``\\p{name}``: a general category or group, a measured script or property."""
    key = name.replace(" ", "").replace("-", "_")
    key = _LONG.get(key, key)
    if key in GC_NAMES:
        return ("gc", key)
    if key in GC_GROUPS:
        return ("or", [("gc", g) for g in GC_GROUPS[key]])
    if key in ("L&", "LC"):
        return ("or", [("gc", g) for g in ("Lu", "Ll", "Lt")])
    if key in ("Any",):
        return ("not", ("or", []))
    for s in SCRIPTS:
        if key.lower() == s.lower():
            return ("prop", s)
    raise ConfigError(f"{where}: the Unicode property \\p{{{name}}} is not supported (general categories and the "
                      f"scripts {', '.join(SCRIPTS)})")


class _Parser:
    def __init__(self, pattern: str, flavor: str) -> None:
        if flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {FLAVORS}, got {flavor!r}")
        self.p = pattern
        self.i = 0
        self.flavor = flavor

    def fail(self, what: str, at: int | None = None) -> None:
        at = self.i if at is None else at
        raise ConfigError(f"regex {self.p!r}: {what} at offset {at} is not supported by the kernels' regex engine")

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < len(self.p) else ""

    def take(self) -> str:
        c = self.peek()
        if not c:
            raise ConfigError(f"regex {self.p!r}: unexpected end of pattern")
        self.i += 1
        return c

    def parse(self) -> Node:
        node = self.alt(False)
        if self.i < len(self.p):
            raise ConfigError(f"regex {self.p!r}: unbalanced ')' at offset {self.i}")
        return node

    def alt(self, fold: bool) -> Node:
        """Alternatives up to the group's end; an inline ``(?i)`` / ``(?-i)`` holds to that end (fancy: across
        ``|``, the alternatives after it; onig: the rest of the group is one alternative of the one it is in)."""
        node, fold = self.cat(fold)
        branches = [node]
        while self.peek() == "|":
            self.i += 1
            node, fold = self.cat(fold)
            branches.append(node)
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def cat(self, fold: bool) -> tuple[Node, bool]:
        """One alternative and the case-folding flag in force at its end."""
        items: list[Node] = []
        while self.peek() and self.peek() not in "|)":
            if self.p.startswith("(?i)", self.i) or self.p.startswith("(?-i)", self.i):
                on = self.p[self.i + 2] == "i"
                self.i += 4 if on else 5
                if self.flavor == "onig":  # Oniguruma: a(?i)b|c is a(?i:b|c), the rest of the group
                    items.append(self.alt(on))
                    break
                fold = on  # Rust / Perl: a(?i)b|c is a(?i:b)|(?i:c)
                continue
            atom = self.atom(fold)
            items.append(self.quantifiers(atom))
        if not items:
            return ("cat", []), fold
        return (items[0] if len(items) == 1 else ("cat", items)), fold

    def quantifiers(self, atom: Node) -> Node:
        while True:
            c = self.peek()
            start = self.i
            if c in ("*", "+", "?"):
                self.i += 1
                lo, hi = {"*": (0, -1), "+": (1, -1), "?": (0, 1)}[c]
                interval = False
            elif c == "{" and self.interval_ahead():
                lo, hi = self.interval()
                interval = True
            else:
                return atom
            if atom[0] == "assert" or atom[0] == "look":
                self.fail("a quantifier on an assertion", start)
            mode = "greedy"
            m = self.peek()
            if m == "?":
                if self.flavor == "onig" and interval and lo == hi:  # Ruby: x{n}? is (?:x{n})?
                    atom = ("rep", atom, lo, hi, "greedy")
                    lo, hi = 0, 1
                    self.i += 1
                else:
                    mode = "lazy"
                    self.i += 1
            elif m == "+":
                if self.flavor == "onig" and interval:  # Ruby: x{n,m}+ is (?:x{n,m})+
                    atom = ("rep", atom, lo, hi, "greedy")
                    lo, hi = 1, -1
                    self.i += 1
                else:
                    mode = "possessive"
                    self.i += 1
            atom = ("rep", atom, lo, hi, mode)

    def interval_ahead(self) -> bool:
        """``{n}``, ``{n,}``, ``{n,m}`` (and Oniguruma's ``{,m}``) start here."""
        form = r"\{\d+(,\d*)?\}" + (r"|\{,\d+\}" if self.flavor == "onig" else "")
        return re.match(form, self.p[self.i:]) is not None

    def interval(self) -> tuple[int, int]:
        end = self.p.index("}", self.i)
        body = self.p[self.i + 1:end]
        self.i = end + 1
        if "," not in body:
            return int(body), int(body)
        a, b = body.split(",")
        lo, hi = int(a or 0), (int(b) if b else -1)
        if hi != -1 and hi < lo:
            self.fail(f"the interval {{{body}}} (max below min)", end)
        return lo, hi

    def atom(self, fold: bool) -> Node:
        start = self.i
        c = self.take()
        if c == "(":
            return self.group(fold, start)
        if c == "[":
            return ("set", self.bracket(fold))
        if c == ".":
            return ("set", ("prop", "dot"))
        if c == "^":
            return ("assert", "bol" if self.flavor == "onig" else "bot")
        if c == "$":
            return ("assert", "eol" if self.flavor == "onig" else "eot")
        if c == "\\":
            return self.escape(fold, start, False)
        if c in "*+?":
            self.fail(f"a quantifier {c!r} with nothing to repeat", start)
        if c == "{" and self.flavor == "fancy":
            self.fail("a literal '{'", start)
        return ("set", self.literal(ord(c), fold))

    def literal(self, cp: int, fold: bool) -> Node:
        s = ("cp", cp, cp)
        return ("fold", s) if fold else s

    def group(self, fold: bool, start: int) -> Node:
        if self.peek() != "?":
            body = self.alt(fold)
        else:
            self.i += 1
            kind = self.take()
            if kind == ":":
                body = self.alt(fold)
            elif kind in "=!":
                body = ("look", True, kind == "!", self.alt(fold))
            elif kind == "<" and self.peek() in "=!":
                neg = self.take() == "!"
                body = ("look", False, neg, self.alt(fold))
            elif kind == ">":
                body = ("atomic", self.alt(fold))
            elif kind in "<P" or kind == "'":
                if kind == "P":
                    if self.take() != "<":
                        self.fail("a (?P group other than (?P<name>...)", start)
                close = ">" if kind != "'" else "'"
                end = self.p.find(close, self.i)
                if end < 0:
                    self.fail("an unterminated group name", start)
                self.i = end + 1
                body = self.alt(fold)
            elif kind in "i-":
                flags = kind
                while self.peek() and self.peek() not in ":)":
                    flags += self.take()
                if flags not in ("i", "-i"):
                    self.fail(f"the inline flags (?{flags}...) (only i and -i)", start)
                if self.take() == ")":  # (handled in cat; here only "(?i" + ")" inside nested forms)
                    self.fail("inline flags in this position", start)
                body = self.alt(flags == "i")
            else:
                self.fail(f"the group (?{kind}", start)
        if self.take() != ")":
            raise ConfigError(f"regex {self.p!r}: unbalanced '(' at offset {start}")
        return body

    def hexdigits(self, start: int) -> int:
        if self.peek() == "{":
            end = self.p.index("}", self.i)
            text = self.p[self.i + 1:end]
            self.i = end + 1
        else:
            text = self.p[self.i:self.i + 2]
            self.i += 2
        try:
            return int(text, 16)
        except ValueError:
            self.fail(f"the escape \\x{text}", start)
            raise

    def escape(self, fold: bool, start: int, in_bracket: bool) -> Any:
        c = self.take()
        if c in _CLASS_ESC:
            return ("set", _CLASS_ESC[c]) if not in_bracket else _CLASS_ESC[c]
        if c.lower() in _CLASS_ESC and c.isupper():
            s = ("not", _CLASS_ESC[c.lower()])
            return ("set", s) if not in_bracket else s
        if c in "pP":
            if self.peek() == "{":
                end = self.p.index("}", self.i)
                name = self.p[self.i + 1:end]
                self.i = end + 1
            else:
                name = self.take()
            neg = c == "P"
            if name.startswith("^"):
                neg, name = not neg, name[1:]
            s = unicode_set(name, f"regex {self.p!r}")
            if fold and s[0] == "gc" and s[1] in _CASED:
                self.fail(f"\\p{{{name}}} under (?i)", start)
            s = ("not", s) if neg else s
            return ("set", s) if not in_bracket else s
        if c in _SIMPLE:
            s = ("cp", _SIMPLE[c], _SIMPLE[c])
        elif c == "x":
            cp = self.hexdigits(start)
            s = self.literal(cp, fold)
        elif c == "u":
            if self.peek() == "{":
                cp = self.hexdigits(start)
            else:
                text = self.p[self.i:self.i + 4]
                self.i += 4
                if len(text) != 4 or not all(ch in "0123456789abcdefABCDEF" for ch in text):
                    self.fail(f"the escape \\u{text}", start)
                cp = int(text, 16)
            s = self.literal(cp, fold)
        elif c == "0":
            s = ("cp", 0, 0)
        elif not in_bracket and c in "AzZbB":
            return ("assert", {"A": "bot", "z": "eot", "Z": "eotnl", "b": "word", "B": "notword"}[c])
        elif c.isalnum():
            self.fail(f"the escape \\{c}", start)
            raise AssertionError
        else:
            s = self.literal(ord(c), fold)
        return ("set", s) if not in_bracket else s

    def bracket(self, fold: bool) -> Node:
        """A bracket expression after its '[': union of items, ``&&`` intersections, ``^`` negation."""
        start = self.i - 1
        neg = self.peek() == "^"
        if neg:
            self.i += 1
        parts: list[Node] = []
        items: list[Node] = []
        first = True
        while True:
            c = self.peek()
            if not c:
                raise ConfigError(f"regex {self.p!r}: unterminated '[' at offset {start}")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if self.p.startswith("&&", self.i):
                self.i += 2
                parts.append(("or", items))
                items = []
                continue
            if c == "[":
                if self.peek(1) == ":":
                    self.fail("a POSIX bracket class [:name:]")
                self.i += 1
                items.append(self.bracket(fold))
                continue
            if self.flavor == "fancy" and (self.p.startswith("--", self.i) or self.p.startswith("~~", self.i)):
                self.fail("a class difference / symmetric difference")
            lo = self.bracket_char(fold)
            if isinstance(lo, tuple):
                items.append(lo)
                continue
            if self.peek() == "-" and self.peek(1) not in ("]", "") and not self.p.startswith("-[", self.i):
                self.i += 1
                hi = self.bracket_char(fold)
                if isinstance(hi, tuple) or hi < lo:
                    self.fail("a bad range in a bracket")
                rng = ("cp", lo, hi)
                items.append(("fold", rng) if fold else rng)
            else:
                items.append(self.literal(lo, fold))
        parts.append(("or", items))
        s: Node = parts[0] if len(parts) == 1 else ("and", parts)
        return ("not", s) if neg else s

    def bracket_char(self, fold: bool) -> int | Node:
        start = self.i
        c = self.take()
        if c != "\\":
            return ord(c)
        got = self.escape(fold, start, True)
        if got[0] == "cp" and got[1] == got[2]:
            return got[1]
        if got[0] == "fold" and got[1][0] == "cp" and got[1][1] == got[1][2]:
            return got[1][1]
        return got


def parse(pattern: str, flavor: str) -> Node:
    """The syntax tree of ``pattern`` read as ``flavor`` (``onig`` / ``fancy``), or a ConfigError naming the
    construct the engine does not support."""
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"regex {pattern!r}: an empty or non-string pattern")
    return _Parser(pattern, flavor).parse()
