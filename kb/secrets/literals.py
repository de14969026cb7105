"""The texts every match of a regex holds, in lower case: a rule set without keywords (Nosey Parker's) gets them from
its regexes, so that a rule is tried only on the lines holding one, as gitleaks' keywords are used.

Read from the tree Python's own parser makes of the regex; a regex that needs no text of three characters or more, nor
a shorter one holding a character logs seldom hold (the `!` of a Salesforce session id), gets none
(`[a-z0-9]{40}`)."""

from __future__ import annotations

import os

try:  # the parser Python's `re` uses: private, but the only reading of a regex's parts Python has
    from re import _constants as sre
    from re import _parser as sre_parser
except ImportError:  # Python 3.10
    import sre_constants as sre
    import sre_parse as sre_parser

SHORTEST = 3  # a keyword shorter than this is on most lines: no filter
_SELDOM = frozenset("!$^`|~")  # unless it holds one of these
_FEW = 4  # texts searched for one by one; more with a common start are searched for by that
_MOST = 64  # alternatives followed through a regex at most (`[Aa][Bb]...` stays one string in lower case)
Texts = frozenset[str]


def required(pattern: str) -> Texts | None:
    """Texts one of which is in every match of `pattern` (a Python regex), lower-cased; None where there are none."""
    _, needed, _ = _sequence(list(sre_parser.parse(pattern)))
    if not _filters(needed):
        return None
    common = os.path.commonprefix(sorted(needed))  # noqa: RUF071 (texts, not paths: character by character)
    if len(needed) > _FEW and len(common) >= SHORTEST:
        return frozenset({common})  # `aws_?(?:secret)?_?key`: one search for `aws`, not one per way of writing it
    return frozenset(text for text in needed if not any(other != text and other in text for other in needed))


def _filters(texts: Texts | None) -> bool:
    """Whether a line holding one of the texts is rare enough to be worth searching for."""
    return bool(texts) and all(len(text) >= SHORTEST or _SELDOM.intersection(text) for text in texts)


def _better(a: Texts | None, b: Texts | None) -> Texts | None:
    """The set that filters more: longer shortest text, then fewer texts."""
    if not _filters(b):
        return a
    if not a:
        return b
    return a if (min(map(len, a)), -len(a)) >= (min(map(len, b)), -len(b)) else b


_NOTHING: Texts = frozenset({""})
Info = tuple["Texts | None", "Texts | None", Texts]  # (exact texts, when few; texts every match holds; its beginnings)


def _sequence(items: list) -> Info:
    """What items one after another match: the exact texts, when few; the best texts every match holds; the texts
    every match begins with (`AKIA`, `A3T` of `A(?:3T[A-Z0-9]|KIA)`), so that a run of texts goes on into them."""
    current: Texts = _NOTHING
    exact: Texts | None = current
    best: Texts | None = None
    starts: Texts | None = None
    for op, value in items:
        item_exact, item_needed, item_starts = _item(op, value)
        if item_exact is not None and len(current) * len(item_exact) <= _MOST:
            current = _joined(current, item_exact)
            continue
        head = _joined(current, item_starts) if len(current) * len(item_starts) <= _MOST else current
        best = _better(_better(best, head), item_needed)
        starts = head if starts is None else starts
        current, exact = _NOTHING, None
    best = _better(best, current)
    return (current if exact is not None else None), best, (current if starts is None else starts)


def _joined(heads: Texts, tails: Texts) -> Texts:
    return frozenset(a + b for a in heads for b in tails)


def _item(op, value) -> Info:
    if op is sre.LITERAL:
        char = frozenset({chr(value).lower()})
        return char, None, char
    if op is sre.AT:
        return _NOTHING, None, _NOTHING  # \b, ^, $: no character
    if op is sre.IN:
        chars = _in(value)
        return chars, None, chars or _NOTHING
    if op is sre.SUBPATTERN:
        return _sequence(list(value[3]))
    if op is sre.ATOMIC_GROUP:
        return _sequence(list(value))
    if op is sre.BRANCH:
        alternatives = [_sequence(list(alternative)) for alternative in value[1]]
        exact = (
            None if any(e is None for e, _, _ in alternatives) else frozenset().union(*(e for e, _, _ in alternatives))
        )
        each = [_better(e, n) if e is None or min(map(len, e), default=0) < SHORTEST else e for e, n, _ in alternatives]
        needed = None if any(not n for n in each) else frozenset().union(*each)
        starts = frozenset().union(*(s for _, _, s in alternatives))
        return (exact if exact is not None and len(exact) <= _MOST else None), needed, starts
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
        low, high, sub = value
        exact, needed, starts = _sequence(list(sub))
        if low == high == 1:
            return exact, needed, starts
        if low == 0 and high == 1 and exact is not None:
            return exact | _NOTHING, None, exact | _NOTHING
        if low == 0:
            return None, None, _NOTHING
        return None, _better(exact, needed), starts
    return None, None, _NOTHING


def _in(members: list) -> Texts | None:
    """The characters of a class, lower-cased, where it is a short list of them (`[Aa]`, `[_-]`)."""
    chars: set[str] = set()
    for op, value in members:
        if op is sre.LITERAL:
            chars.add(chr(value).lower())
        elif op is sre.RANGE and value[1] - value[0] < 8:
            chars |= {chr(c).lower() for c in range(value[0], value[1] + 1)}
        else:
            return None
    return frozenset(chars) if len(chars) <= 8 else None
