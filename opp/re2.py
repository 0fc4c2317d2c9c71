"""RE2 patterns (TF's regex engine) translated to Python `re` patterns of the same meaning;
shared by opp/regex.py (RegexReplace, RegexFullMatch) and opp/tftext_regex.py. Written out:
- literals, escapes (\\t \\n \\r \\f \\v \\a, \\xHH, \\x{H..}, octal \\0NN, ASCII
  punctuation, \\Q..\\E); `.`; classes (ranges, negation, escapes, ASCII POSIX [[:alpha:]]);
  \\d \\s \\w and negations (ASCII, as RE2's: \\s is [\\t\\n\\f\\r ]); \\b (ASCII).
- \\pX \\p{X} \\PX \\p{^X}: general categories (`unicodedata`, Unicode 14, plus ADDITIONS,
  what TF's RE2 (Unicode 15) assigns beyond it; RE2's C has no unassigned code point), Any, and
  SCRIPTS (RE2's tables): each checked against TF on every code point (test_regex.py).
- groups, (?:..), (?P<name>..), |, greedy and lazy quantifiers (counts up to 1,000), ^ $ \\A
  \\z, flags i m s U in (?flags) and (?flags:..), scoped as RE2 (to the enclosing group's end).
  (?i) becomes explicit classes of simple case-folding orbits (Python's case mappings: equal
  to RE2's on every code point once U+0131, which RE2 folds to nothing, is left alone).
- No class holds a surrogate (an undecodable byte, by surrogateescape), as RE2 matches none.
Refused (Unsupported): \\B (RE2's holds between the bytes of one character), \\C, other \\p
names, back references, lookaround, (?<name>, possessive or doubled quantifiers, a repeated
group that captures and can match empty (RE2 keeps another submatch), what RE2 rejects.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from typing import List, Tuple

MAX_CODE = 0x10FFFF
MAX_REPEAT = 1000
Ranges = List[Tuple[int, int]]

_SHORTHAND = {"d": [(0x30, 0x39)], "s": [(0x9, 0xA), (0xC, 0xD), (0x20, 0x20)],
              "w": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]}
_SIMPLE = {"t": 0x9, "n": 0xA, "r": 0xD, "f": 0xC, "v": 0xB, "a": 0x7}
_CATEGORIES = {"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl",
               "No", "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk",
               "So", "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf", "Co", "Cs"}
POSIX = """
alnum 30-39 41-5A 61-7A  alpha 41-5A 61-7A  ascii 0-7F  blank 9 20  cntrl 0-1F 7F  digit 30-39
graph 21-7E  lower 61-7A  print 20-7E  punct 21-2F 3A-40 5B-60 7B-7E  space 9-D 20  upper 41-5A
word 30-39 41-5A 5F 61-7A  xdigit 30-39 41-46 61-66
"""
# Code points TF's RE2 (Unicode 15) assigns to a general category where Python 3.11's
# unicodedata (Unicode 14) has none, in hex ranges.
ADDITIONS = """
Ll 1DF25-1DF2A
Lm 1E030-1E06D 1E4EB
Lo 1123F-11240 11F02 11F04-11F10 11F12-11F33 1342F 13441-13446 1B132 1B155 1E4D0-1E4EA 2B739
   31350-323AF
Mn ECE 10EFD-10EFF 11241 11F00-11F01 11F36-11F3A 11F40 11F42 13440 13447-13455 1E08F 1E4EC-1E4EF
Mc CF3 11F03 11F34-11F35 11F3E-11F3F 11F41
Nd 11F50-11F59 1E4F0-1E4F9
No 1D2C0-1D2D3
Po 11B00-11B09 11F43-11F4F
So 1F6DC 1F774-1F776 1F77B-1F77F 1F7D9 1FA75-1FA77 1FA87-1FA88 1FAAD-1FAAF 1FABB-1FABD 1FABF
   1FACE-1FACF 1FADA-1FADB 1FAE8 1FAF7-1FAF8
Cf 13439-1343F
"""
# RE2's script tables (TF 2.21) for the scripts this translation takes, in hex ranges.
SCRIPTS = """
Latin 41-5A 61-7A AA BA C0-D6 D8-F6 F8-2B8 2E0-2E4 1D00-1D25 1D2C-1D5C 1D62-1D65 1D6B-1D77
   1D79-1DBE 1E00-1EFF 2071 207F 2090-209C 212A-212B 2132 214E 2160-2188 2C60-2C7F A722-A787
   A78B-A7CA A7D0-A7D1 A7D3 A7D5-A7D9 A7F2-A7FF AB30-AB5A AB5C-AB64 AB66-AB69 FB00-FB06
   FF21-FF3A FF41-FF5A 10780-10785 10787-107B0 107B2-107BA 1DF00-1DF1E 1DF25-1DF2A
Greek 370-373 375-377 37A-37D 37F 384 386 388-38A 38C 38E-3A1 3A3-3E1 3F0-3FF 1D26-1D2A
   1D5D-1D61 1D66-1D6A 1DBF 1F00-1F15 1F18-1F1D 1F20-1F45 1F48-1F4D 1F50-1F57 1F59 1F5B 1F5D
   1F5F-1F7D 1F80-1FB4 1FB6-1FC4 1FC6-1FD3 1FD6-1FDB 1FDD-1FEF 1FF2-1FF4 1FF6-1FFE 2126 AB65
   10140-1018E 101A0 1D200-1D245
Cyrillic 400-484 487-52F 1C80-1C88 1D2B 1D78 2DE0-2DFF A640-A69F FE2E-FE2F 1E030-1E06D 1E08F
Han 2E80-2E99 2E9B-2EF3 2F00-2FD5 3005 3007 3021-3029 3038-303B 3400-4DBF 4E00-9FFF F900-FA6D
   FA70-FAD9 16FE2-16FE3 16FF0-16FF1 20000-2A6DF 2A700-2B739 2B740-2B81D 2B820-2CEA1
   2CEB0-2EBE0 2F800-2FA1D 30000-3134A 31350-323AF
Hangul 1100-11FF 302E-302F 3131-318E 3200-321E 3260-327E A960-A97C AC00-D7A3 D7B0-D7C6
   D7CB-D7FB FFA0-FFBE FFC2-FFC7 FFCA-FFCF FFD2-FFD7 FFDA-FFDC
Hiragana 3041-3096 309D-309F 1B001-1B11F 1B132 1B150-1B152 1F200
Katakana 30A1-30FA 30FD-30FF 31F0-31FF 32D0-32FE 3300-3357 FF66-FF6F FF71-FF9D 1AFF0-1AFF3
   1AFF5-1AFFB 1AFFD-1AFFE 1B000 1B120-1B122 1B155 1B164-1B167
Thai E01-E3A E40-E5B
Devanagari 900-950 955-963 966-97F A8E0-A8FF 11B00-11B09
Hebrew 591-5C7 5D0-5EA 5EF-5F4 FB1D-FB36 FB38-FB3C FB3E FB40-FB41 FB43-FB44 FB46-FB4F
"""
SURROGATES = (0xD800, 0xDFFF)


class Unsupported(ValueError):
    """A pattern whose RE2 meaning this translation does not reproduce."""


def _table(text: str) -> dict:
    out, name = {}, None
    for word in text.split():
        if not all(c in "0123456789ABCDEF-" for c in word):
            name = word
            continue
        lo, _, hi = word.partition("-")
        out.setdefault(name, []).append((int(lo, 16), int(hi or lo, 16)))
    return out


_ADDED, _SCRIPT, _POSIX = _table(ADDITIONS), _table(SCRIPTS), _table(POSIX)


@functools.lru_cache(maxsize=None)
def _all_categories() -> dict:
    """Two-letter general category → its code point ranges, in one pass over Unicode."""
    out: dict = {}
    last, start = None, 0
    for code in range(MAX_CODE + 2):
        cat = unicodedata.category(chr(code)) if code <= MAX_CODE else None
        if cat != last:
            if last is not None:
                out.setdefault(last, []).append((start, code - 1))
            last, start = cat, code
    for cat, ranges in _ADDED.items():
        out[cat] = out.get(cat, []) + ranges
    return out


def merge(ranges) -> Ranges:
    out: Ranges = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def complement(ranges: Ranges) -> Ranges:
    out, low = [], 0
    for lo, hi in merge(ranges):
        if lo > low:
            out.append((low, lo - 1))
        low = max(low, hi + 1)
    if low <= MAX_CODE:
        out.append((low, MAX_CODE))
    return out


@functools.lru_cache(maxsize=None)
def category_ranges(name: str) -> Ranges:
    """The code point ranges of RE2's \\p{name}: a general category (one or two letters; C
    without the unassigned Cn), Any, or a script of SCRIPTS."""
    if name == "Any":
        return [(0, MAX_CODE)]
    if name in _SCRIPT:
        return list(_SCRIPT[name])
    return merge(r for cat, ranges in _all_categories().items()
                 if cat.startswith(name) and cat != "Cn" for r in ranges)


@functools.lru_cache(maxsize=None)
def _orbits() -> dict:
    """Code point → its simple case-folding orbit (sorted tuple), for code points that have
    one: the classes of Python's one-character lower/upper/casefold/title mappings, without
    U+0131's (dotless i, which RE2 folds to nothing)."""
    parent: dict = {}

    def find(a):
        while parent.get(a, a) != a:
            a = parent[a]
        return a
    for code in range(MAX_CODE + 1):
        c = chr(code)
        if code == 0x131 or SURROGATES[0] <= code <= SURROGATES[1]:
            continue
        for m in (c.lower(), c.upper(), c.casefold(), c.title()):
            if len(m) == 1 and m != c:
                a, b = find(code), find(ord(m))
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict = {}
    for code in set(parent) | set(parent.values()):
        groups.setdefault(find(code), []).append(code)
    return {code: tuple(sorted(g)) for g in groups.values() for code in g}


@functools.lru_cache(maxsize=None)
def _orbit_keys() -> list:
    return sorted(_orbits())


def fold(ranges: Ranges) -> Ranges:
    """`ranges` with every case-folding orbit of a member added (RE2's (?i))."""
    orbits = _orbits()
    keys = _orbit_keys()
    ranges = merge(ranges)
    extra = []
    for lo, hi in ranges:
        for code in keys[bisect.bisect_left(keys, lo):bisect.bisect_right(keys, hi)]:
            extra += [(c, c) for c in orbits[code]]
    return merge(ranges + extra)


def class_text(ranges: Ranges, negate: bool = False) -> str:
    """A Python class of `ranges` (negate: of the rest), never holding a surrogate."""
    ranges = complement(ranges) if negate else merge(ranges)
    ranges = merge(complement(merge(complement(ranges) + [SURROGATES])))

    def char(c):
        return f"\\U{c:08x}"
    body = "".join(char(lo) if lo == hi else f"{char(lo)}-{char(hi)}" for lo, hi in ranges)
    return f"[{body}]" if body else "[^\\s\\S]"


def _name(pattern: str, i: int) -> Tuple[str, int]:
    """The \\p name after pattern[i:i + 2] ('\\p'): (name, next index)."""
    if i + 2 >= len(pattern):
        raise Unsupported("\\p without a name")
    if pattern[i + 2] != "{":
        return pattern[i + 2], i + 3
    end = pattern.find("}", i + 3)
    if end < 0:
        raise Unsupported("\\p{ without }")
    return pattern[i + 3:end], end + 1


def _escape(pattern: str, i: int, in_class: bool = False) -> Tuple[object, int]:
    """The escape at pattern[i] (the backslash): (code point | (ranges, negated) |
    ('anchor', text)), next index."""
    if i + 1 >= len(pattern):
        raise Unsupported("a trailing backslash")
    c = pattern[i + 1]
    if c in _SIMPLE:
        return _SIMPLE[c], i + 2
    if c.lower() in _SHORTHAND:
        return (_SHORTHAND[c.lower()], c.isupper()), i + 2
    if c in "pP":
        name, nxt = _name(pattern, i)
        negate = c == "P"
        if name.startswith("^"):
            name, negate = name[1:], not negate
        if name not in _CATEGORIES and name not in _SCRIPT and name != "Any":
            raise Unsupported(f"\\p{{{name}}} (general categories, Any and the scripts "
                              f"{', '.join(_SCRIPT)} translate)")
        return (category_ranges(name), negate), nxt
    if c == "x":
        if pattern[i + 2:i + 3] == "{":
            end = pattern.find("}", i + 3)
            digits, nxt = pattern[i + 3:end] if end > 0 else "", end + 1
        else:
            digits, nxt = pattern[i + 2:i + 4], i + 4
            digits = digits if len(digits) == 2 else ""
        if not digits or not all(d in "0123456789abcdefABCDEF" for d in digits) \
                or int(digits, 16) > MAX_CODE:
            raise Unsupported(f"the escape \\x{digits}")
        return int(digits, 16), nxt
    if c in "01234567" and (c == "0" or pattern[i + 2:i + 3] in tuple("01234567")):
        j = i + 1
        while j < min(i + 4, len(pattern)) and pattern[j] in "01234567":
            j += 1
        return int(pattern[i + 1:j], 8), j
    if not in_class and c in "Azb":       # \\B: RE2's holds between the bytes of a character
        word = "[0-9A-Za-z_]"
        return ("anchor", {"A": "\\A", "z": "\\Z",
                           "b": f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))"}[c]), i + 2
    if c.isalnum() or ord(c) >= 0x80:
        raise Unsupported(f"the escape \\{c}")
    return ord(c), i + 2


class _Translator:
    """One pass over an RE2 pattern, writing Python `re` text; flags kept per group."""

    def __init__(self, pattern: str):
        self.p, self.i, self.out = pattern, 0, []
        self.flags = {"i": False, "m": False, "s": False, "U": False}
        self.saved: list = []
        self.can_repeat = False    # the last item takes a quantifier
        self.group_body = None     # the last item's text, where it is a group

    def item(self, text: str) -> None:
        self.out.append(text)
        self.can_repeat, self.group_body = True, None

    def chars(self, ranges: Ranges, negate: bool) -> str:
        """A class item of `ranges` (negated), folded under (?i) as RE2 folds it."""
        ranges = fold(ranges) if self.flags["i"] else merge(ranges)
        return complement(ranges) if negate else ranges

    def literal(self, code: int) -> None:
        if self.flags["i"] and code in _orbits():
            self.item(class_text(self.chars([(code, code)], False)))
        elif SURROGATES[0] <= code <= SURROGATES[1]:
            self.item(class_text([]))
        else:
            self.item(re.escape(chr(code)))

    def char_class(self) -> None:
        p, j = self.p, self.i + 1
        negate = p[j:j + 1] == "^"
        j += negate
        ranges: Ranges = []
        first = True
        while True:
            if j >= len(p):
                raise Unsupported("a class without ]")
            c = p[j]
            if c == "]" and not first:
                j += 1
                break
            first = False
            if p.startswith("[:", j):
                end = p.find(":]", j + 2)
                name = p[j + 2:end] if end > 0 else ""
                inverse = name.startswith("^")
                body = _POSIX.get(name.lstrip("^"))
                if body is None:
                    raise Unsupported(f"the POSIX class [:{name}:]")
                ranges += self.chars(body, inverse)
                j = end + 2
                continue
            if c == "\\":
                item, j = _escape(p, j, in_class=True)
                if isinstance(item, tuple):
                    ranges += self.chars(*item)
                    continue
                low = item
            else:
                low, j = ord(c), j + 1
            high = low
            if p[j:j + 1] == "-" and p[j + 1:j + 2] not in ("]", ""):
                if p[j + 1] == "\\":
                    high, j = _escape(p, j + 1, in_class=True)
                    if not isinstance(high, int):
                        raise Unsupported("a range ending in a class escape")
                else:
                    high, j = ord(p[j + 1]), j + 2
                if high < low:
                    raise Unsupported("a range whose end is below its start")
            ranges += self.chars([(low, high)], False)
        self.i = j
        self.item(class_text(ranges, negate))

    def group(self) -> None:
        p, i = self.p, self.i
        if p.startswith("(?P<", i):
            end = p.find(">", i)
            if end < 0 or not p[i + 4:end].isidentifier():
                raise Unsupported("a group name")
            self.open(p[i:end + 1], end + 1)
            return
        if not p.startswith("(?", i):
            self.open("(", i + 1)
            return
        match = re.compile(r"\(\?([imsU]*)(?:-([imsU]*))?([:)])").match(p, i)
        if match is None:
            raise Unsupported("(? groups other than (?:, (?P<name> and the flags i m s U")
        on, off, end = match.group(1), match.group(2) or "", match.group(3)
        if end == ")" and not (on or off) or match.group(2) == "":
            raise Unsupported("an empty flag group")
        if end == ":":
            self.open("(?:", match.end())
        else:
            self.i, self.can_repeat = match.end(), False
        for f in on:
            self.flags[f] = True
        for f in off:
            self.flags[f] = False

    def open(self, text: str, nxt: int) -> None:
        self.saved.append((dict(self.flags), len(self.out)))
        self.out.append(text)
        self.i, self.can_repeat = nxt, False

    def quantifier(self, text: str, nxt: int) -> None:
        if not self.can_repeat:
            raise Unsupported(f"the repetition {text} of nothing or of a repetition")
        body = self.group_body
        if text != "?" and body is not None and re.search(r"\((?!\?)|\(\?P<", body) and \
                re.fullmatch(body, "") is not None:
            raise Unsupported(f"the repetition {text} of a group that holds a capture and can "
                              "match empty (RE2 keeps another submatch)")
        lazy = self.p[nxt:nxt + 1] == "?"
        nxt += lazy
        self.out.append(text + ("?" if lazy != self.flags["U"] else ""))
        self.i, self.can_repeat = nxt, False

    def run(self) -> str:
        p = self.p
        while self.i < len(p):
            c, i = p[self.i], self.i
            if p.startswith("\\Q", i):
                end = p.find("\\E", i + 2)
                end = len(p) if end < 0 else end
                for ch in p[i + 2:end]:
                    self.literal(ord(ch))
                self.i = min(end + 2, len(p))
            elif c == "\\":
                item, self.i = _escape(p, i)
                if isinstance(item, tuple) and item[0] == "anchor":
                    self.out.append(item[1])
                    self.can_repeat = False
                elif isinstance(item, tuple):
                    self.item(class_text(self.chars(*item)))
                else:
                    self.literal(item)
            elif c == "[":
                self.char_class()
            elif c == "(":
                self.group()
            elif c == ")":
                if not self.saved:
                    raise Unsupported("an unmatched )")
                self.flags, start = self.saved.pop()
                self.item(")")
                self.group_body = "".join(self.out[start:])
                self.i += 1
            elif c == "|":
                self.out.append("|")
                self.i, self.can_repeat = i + 1, False
            elif c in "*+?":
                self.quantifier(c, i + 1)
            elif c == "{" and _REPEAT.match(p, i):
                match = _REPEAT.match(p, i)
                low, high = match.group(1), match.group(3)
                if int(low) > MAX_REPEAT or high and int(high) > MAX_REPEAT or \
                        high and int(high) < int(low):
                    raise Unsupported(f"the repeat count {match.group(0)}")
                self.quantifier(match.group(0), match.end())
            elif c == ".":
                self.item(class_text([] if self.flags["s"] else [(0xA, 0xA)], True))
                self.i += 1
            elif c in "^$":
                self.out.append(("(?m:^)" if c == "^" else "(?m:$)") if self.flags["m"] else
                                "\\A" if c == "^" else "\\Z")
                self.i, self.can_repeat = i + 1, False
            else:
                self.literal(ord(c))
                self.i += 1
        if self.saved:
            raise Unsupported("a ( without )")
        return "".join(self.out)


_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")


def translate(pattern: str) -> str:
    """The Python `re` pattern with the RE2 meaning of `pattern`; Unsupported otherwise."""
    text = _Translator(pattern).run()
    try:
        re.compile(text)
    except re.error as exc:
        raise Unsupported(f"the pattern does not parse: {exc}") from None
    return text


@functools.lru_cache(maxsize=64)
def compiled(pattern: str):
    return re.compile(translate(pattern))
