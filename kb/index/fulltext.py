"""Full-text search: an FTS5 table in the SQLite index, queried in Whoosh's query language.

Each entry is one row of the `fulltext` table (its rowid is the entry's rowid in `entries`; a trigger deletes it
with the entry), stemmed by FTS5's porter tokenizer and ranked by bm25 with one weight per column. The table keeps
only its words: the text it was given (what snippets are cut from, and what deleting a row must give back) is kept
compressed, one zlib-packed document per entry (`DOCUMENTS`), and read through a view (`TEXT`) that unpacks it with
a function every connection to the index registers (`register`): the text is the largest thing the index holds.

What people type is parsed by `whoosh.qparser` (fields, aliases, phrases, AND/OR/NOT, grouping, wildcards) and the
tree is compiled to one FTS5 MATCH expression plus SQL conditions (kb/index/query.py runs them). A query of plain words
only (no field, quote, operator or wildcard) is read without importing whoosh, as Whoosh reads it (tests compare
the two); anything with syntax goes through Whoosh's parser.

A query's unfielded words and phrases are also kept apart (Compiled.words): when no entry has all of them, the
search ranks the entries that have the most (kb/index/query.py).

Words split at anything that is not a letter or digit (so "compile" finds torch.compile and compile_timeout).
Values that must match exactly (versions:torch=2.9.0, tags, settings, backend, ...) are also indexed as one
token each: their punctuation is mapped to private-use characters, which FTS5 keeps inside a token.
"""

from __future__ import annotations

import re
import sqlite3
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from kb.errors import LONE_SURROGATE, KbError, quoted
from kb.model.entry import Entry

if TYPE_CHECKING:
    from whoosh.qparser import QueryParser
    from whoosh.query import Query

TABLE = "fulltext"
VOCABULARY = "fulltext_terms"  # fts5vocab over TABLE: one row per indexed (stemmed) term
DOCUMENTS = "fulltext_documents"  # each entry's document, packed: rowid (the entry's), packed
TEXT = "fulltext_text"  # the view over DOCUMENTS that is TABLE's content: rowid, then a column per field
UNPACKED = "kb_unpacked"  # the SQL function of `unpacked`, which the TEXT view calls
TOKENIZER = "porter unicode61 remove_diacritics 2"

# The columns, in table order, with their bm25 weights: every one is searched when a word names no field.
DEFAULT_FIELDS = {
    "title": 4.0,
    "failure": 3.0,
    "tags": 2.0,
    "workload": 2.0,
    "notes": 1.5,
    "output": 0.5,
    "versions": 1.0,
    "settings": 1.0,
    "metrics": 1.0,
    "backend": 1.0,
    "mode": 1.0,
    "status": 1.0,
    "kind": 1.0,
    "provenance": 1.0,
    "run": 1.0,
}
# Field names people may type, besides the real ones.
ALIASES = {
    "tags": ["tag"],
    "versions": ["version"],
    "settings": ["setting"],
    "metrics": ["metric"],
    "notes": ["note", "body"],
    "provenance": ["source", "publisher"],
    "run": ["command", "compile"],
}
# Whole values: `backend:rocm` is the backend rocm, not a word in it; `versions:torch=2.9` is not torch 2.9.1.
KEYWORD_FIELDS = frozenset({"tags", "versions", "settings", "metrics", "backend", "mode", "status", "kind"})
# Fields answered by SQL over `entries`, not by the text.
COLUMN_FIELDS = frozenset({"id", "recorded"})
# Where a snippet comes from, best first: the title is shown anyway, so text around it says more.
SNIPPET_FIELDS = ("failure", "notes", "title", "output")
SNIPPET_CHARS = 240
SNIPPET_TOKENS = 28
MAX_QUERY_CHARS = 1000
QUOTED_CHARS = 120  # of a query in an error message: longer than an option's value
# Output is a log tail, and the end of a log says the most: a pasted megabyte costs no more than this.
OUTPUT_CHARS = 16_000
# A wildcard other than a trailing * is looked up in the vocabulary; past this many terms it is too loose to rank.
MAX_WILDCARD_TERMS = 500
# Failure classes as the words a person types for them.
FAILURE_WORDS = {"oom": "out of memory", "cpu_fallback": "cpu fallback", "unsupported_op": "unsupported operator"}
_DEFAULT = "any"  # the parser's name for "no field given"
# Whoosh's stop words (whoosh.analysis.STOP_WORDS): dropped from a query, as Whoosh's analysers drop them.
STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "for", "from", "have", "if", "in", "is", "it", "may",
    "not", "of", "on", "or", "tbd", "that", "the", "this", "to", "us", "we", "when", "will", "with", "yet", "you",
    "your",
})  # fmt: skip
_PRIVATE = 0xE000  # punctuation inside a keyword becomes this plus its code (mod 4096): a letter to FTS5
# Marks put around matched words by snippet(): characters no entry text holds, replaced by ** afterwards.
_OPEN, _CLOSE = "\x02", "\x03"

_OUTPUT_HEADING = re.compile(r"^##\s+output\s*$", re.IGNORECASE)
_SECTION_HEADING = re.compile(r"^#{1,2}\s")
_FENCE = re.compile(r"^\s*(```|~~~)")


def schema_sql() -> list[str]:
    """The statements that make the table, its packed text and the view that unpacks it, its vocabulary, and the
    trigger that deletes a row with its entry (an external-content table is told the words to drop: its text)."""
    columns = ", ".join(DEFAULT_FIELDS)
    weights = ", ".join(str(weight) for weight in DEFAULT_FIELDS.values())
    unpacked = ", ".join(f"{UNPACKED}(packed, {at})" for at in range(len(DEFAULT_FIELDS)))
    named = ", ".join(f"{UNPACKED}(packed, {at}) AS {name}" for at, name in enumerate(DEFAULT_FIELDS))
    # The trigger unpacks the text itself: a trigger reading the view could not be parsed on a connection without
    # the function, and SQLite parses every trigger to alter any table.
    return [
        f"CREATE TABLE {DOCUMENTS} (rowid INTEGER PRIMARY KEY, packed BLOB NOT NULL)",
        f"CREATE VIEW {TEXT} AS SELECT rowid, {named} FROM {DOCUMENTS}",
        f"CREATE VIRTUAL TABLE {TABLE} USING fts5({columns}, content = '{TEXT}', content_rowid = 'rowid', "
        f"tokenize = '{TOKENIZER}')",
        f"INSERT INTO {TABLE} ({TABLE}, rank) VALUES ('rank', 'bm25({weights})')",
        f"CREATE VIRTUAL TABLE {VOCABULARY} USING fts5vocab({TABLE}, 'row')",
        "CREATE TRIGGER entries_fulltext AFTER DELETE ON entries BEGIN "
        f"INSERT INTO {TABLE} ({TABLE}, rowid, {columns}) SELECT 'delete', rowid, {unpacked} FROM {DOCUMENTS} "
        "WHERE rowid = old.rowid; "
        f"DELETE FROM {DOCUMENTS} WHERE rowid = old.rowid; END",
    ]


def register(db: sqlite3.Connection) -> None:
    """Make the function the TEXT view calls known to a connection to the index (before it reads the text)."""
    db.create_function(UNPACKED, 2, unpacked, deterministic=True)


def packed(words: tuple[str, ...]) -> bytes:
    """A document's fields (DEFAULT_FIELDS' order) as DOCUMENTS keeps them: a line of their lengths, then the fields
    one after the other, compressed as one (which packs the repeated words of a log far better than each field
    alone). Lengths, not separators: a field may hold any character."""
    text = ",".join(str(len(word)) for word in words) + "\n" + "".join(words)
    return zlib.compress(text.encode("utf-8", "surrogatepass"))


def unpacked(document: bytes, at: int) -> str:
    """One field of a packed document. The view asks for each field of a row in turn, so the row's document is
    unpacked once: the last one is kept (compared, not hashed: a hash reads the whole document every time)."""
    last = _last[0]
    if last[0] != document:
        last = (document, _fields(zlib.decompress(document).decode("utf-8", "surrogatepass")))
        _last[0] = last  # whole: a thread reading the index beside this one sees one document or the other
    return last[1][at]


def _fields(text: str) -> list[str]:
    lengths, _, joined = text.partition("\n")
    fields, start = [], 0
    for length in map(int, lengths.split(",")):
        fields.append(joined[start : start + length])
        start += length
    return fields


_last: list[tuple[bytes, list[str]]] = [(b"", [])]


# --- What is indexed ---------------------------------------------------------------------------------------------


def document(entry: Entry) -> dict[str, str]:
    """The text of each column for one entry."""
    get = entry.get
    failure = get("failure") or {}
    notes, output = _split_body(entry.body)
    failure_class = failure.get("class")
    return {
        "title": entry.title,
        "failure": _join(
            failure_class,
            FAILURE_WORDS.get(failure_class or ""),
            *(failure.get(key) for key in ("message", "explanation", "evidence")),
            joined(failure_class or ""),  # last: snippets show the text first
        ),
        "tags": _keywords(str(tag) for tag in get("tags") or []),
        "workload": _join(get("workload.name"), get("workload.model")),
        "notes": notes,
        "output": output[-OUTPUT_CHARS:],
        "versions": _pairs(get("versions")),
        "settings": _pairs(get("settings")),
        "metrics": _keywords(get("metrics") or {}),
        "backend": _keywords([get("backend") or ""]),
        "mode": _keywords([get("mode") or ""]),
        "status": _keywords([entry.status or ""]),
        "kind": _keywords([entry.kind]),
        "provenance": _join(get("provenance.source"), get("provenance.publisher")),
        "run": _join(_command(get("command")), _compile_words(get("compile"))),
    }


def insert(db: sqlite3.Connection, rows: list[tuple]) -> None:
    """Index entries that are in the `entries` table already: each of `rows` is an entry's rowid there, its
    document()'s values packed (`packed`), then those values. The rowid is given, not selected: SQLite opens a
    savepoint for an INSERT ... SELECT (it may write many rows), and FTS5 writes out its pending words at every
    savepoint, so each entry became a segment of its own to merge (three times as long)."""
    columns = ", ".join(DEFAULT_FIELDS)
    marks = ", ".join("?" * len(DEFAULT_FIELDS))
    db.executemany(f"INSERT INTO {DOCUMENTS} (rowid, packed) VALUES (?, ?)", [row[:2] for row in rows])
    db.executemany(f"INSERT INTO {TABLE} (rowid, {columns}) VALUES (?, {marks})", [(row[0], *row[2:]) for row in rows])


def optimize(db: sqlite3.Connection) -> None:
    """Merge the table's segments into one: worth it after a bulk build, as every query reads each segment."""
    db.execute(f"INSERT INTO {TABLE} ({TABLE}) VALUES ('optimize')")


class _Letters(dict):
    """str.translate's table for exact(): a letter or digit stays, anything else becomes a private-use letter;
    each code point is worked out the first time it is met (a loop over the characters was most of a build's
    text preparation)."""

    def __missing__(self, code: int) -> int:
        self[code] = code if chr(code).isalnum() else _PRIVATE + (code & 0xFFF)
        return self[code]


_EXACT = _Letters()


def exact(text: str) -> str:
    """A whole value as one token: lower case, blanks as '_', punctuation as private-use letters."""
    return "_".join(text.lower().split()).translate(_EXACT)


def _keywords(values: Iterable[str]) -> str:
    """Each value as its exact token and as its words (so `model=LSTM` is found by lstm too)."""
    values = [str(value) for value in values if str(value)]
    return " ".join([*map(exact, values), *values])


def _pairs(mapping: dict[str, Any] | None) -> str:
    return _keywords(f"{name}={_scalar(value)}" for name, value in (mapping or {}).items())


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _command(command: Any) -> str:
    if not isinstance(command, dict):
        return ""
    argv = command.get("argv") or []
    line = command.get("line") or " ".join(str(arg) for arg in argv)
    scripts = [str(arg).rsplit("/", 1)[-1] for arg in argv if str(arg).endswith(".py")]
    return _join(line, *map(exact, scripts))


def _compile_words(section: Any) -> str:
    """Graph breaks and recompiles with their reasons, and the words a person types for them."""
    if not isinstance(section, dict):
        return ""
    words = []
    for key, name in (("graph_breaks", "graph break"), ("recompiles", "recompile")):
        found = section.get(key)
        if not isinstance(found, dict) or not (found.get("count") or found.get("reasons")):
            continue
        words.append(f"{name} dynamo")
        for reason in found.get("reasons") or []:
            words.append(str(reason.get("reason", "") if isinstance(reason, dict) else reason))
    return _join(*words)


def _join(*parts: Any) -> str:
    return "\n".join(str(part) for part in parts if part not in (None, ""))


def _split_body(body: str) -> tuple[str, str]:
    """(notes, output): the '## Output' section holds log tails, indexed apart so that it weighs less."""
    notes: list[str] = []
    output: list[str] = []
    target, fence = notes, None
    for line in body.splitlines():
        match = _FENCE.match(line)
        if match and fence in (None, match.group(1)):
            fence = None if fence else match.group(1)
        elif fence is None and _SECTION_HEADING.match(line):
            target = output if _OUTPUT_HEADING.match(line) else notes
            if target is output:
                continue
        target.append(line)
    return "\n".join(notes).strip(), "\n".join(output).strip()


# --- What is asked ----------------------------------------------------------------------------------------------


@dataclass
class Compiled:
    """A query as FTS5 and SQL: entries match when `match` (if any) matches them and every condition holds."""

    match: str | None = None
    conditions: list[str] = field(default_factory=list)  # over `entries e`
    params: list[Any] = field(default_factory=list)
    # The query's required, unfielded words and phrases as typed, each with its own match, and the rest of the
    # query compiled alone (None: nothing else), when the query is those joined by AND with other parts: what a
    # search falls back on when no entry has all the words. Empty for a query of one word, or with OR at its top.
    words: list[tuple[str, str]] = field(default_factory=list)
    rest: Compiled | None = None

    def where(self) -> tuple[str, list[Any]]:
        """The whole of it as one SQL condition over `entries e`."""
        clauses = list(self.conditions)
        params = list(self.params)
        if self.match is not None:
            clauses.insert(0, f"e.rowid IN (SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ?)")
            params.insert(0, self.match)
        return (" AND ".join(f"({clause})" for clause in clauses) or "1"), params


# Results of compiling one node, besides a Compiled: it matches no entry, or it says nothing (a stop word).
_NOTHING = "nothing"
_IGNORED = "ignored"


def compile_query(query: str, vocabulary: sqlite3.Connection | None = None) -> Compiled | None:
    """The query as FTS5 and SQL, or None when it can match nothing; a KbError says what is wrong with it.

    `vocabulary` (the index) answers wildcards other than a trailing `*` from its terms, and leaves out a word
    joined from two typed words that no entry holds; without it such wildcards match nothing.
    """
    words = _plain_words(query)
    if words is not None:  # the common case, answered without importing Whoosh (a third of a command's start-up)
        compiled = [_word(None, word, False) for word in words]
        matches = [part.match if isinstance(part, Compiled) else None for part in compiled]
        if not any(matches):
            return None
        typed = [(word, match) for word, match in zip(words, matches, strict=True) if match]
        return Compiled(match=_or_joined(words, matches, vocabulary), words=typed if len(typed) > 1 else [])
    parsed = parse(query)
    try:
        result = _compile(parsed, vocabulary)
        if isinstance(result, Compiled):
            result.words, result.rest = _words_apart(parsed, vocabulary)
    except _Refused as refused:
        raise KbError(f"the query {quoted(query, QUOTED_CHARS)}: {refused}") from None
    return result if isinstance(result, Compiled) else None


def _words_apart(parsed: Query, vocabulary: sqlite3.Connection | None) -> tuple[list[tuple[str, str]], Compiled | None]:
    """For a query of parts joined by AND: its unfielded words and phrases (as typed, with their matches) and its
    other parts compiled alone; ([], None) when it has fewer than two such words."""
    from whoosh import query as q

    parts = parsed.subqueries if isinstance(parsed, q.And) else [parsed]
    words: list[tuple[str, str]] = []
    rest: list[tuple[bool, Compiled | str]] = []
    for part in parts:
        compiled = _compile(part, vocabulary)
        if isinstance(part, (q.Term, q.Phrase)) and part.field() == _DEFAULT:
            if isinstance(compiled, Compiled) and compiled.match and not compiled.conditions:
                shown = str(part.text) if isinstance(part, q.Term) else f'"{" ".join(part.words)}"'
                words.append((shown, compiled.match))
            continue
        negative = isinstance(part, q.Not)
        rest.append((negative, _compile(part.query, vocabulary) if negative else compiled))
    others = _required(rest) if rest else None
    if len(words) < 2:
        return [], None
    return words, others if isinstance(others, Compiled) else None


# --- Words typed apart, indexed together -----------------------------------------------------------------------
# A failure class is also indexed as one word (compile_timeout: compiletimeout), and two adjacent plain words of a
# query also match them written together: "compile timeout" then ranks compile timeouts above runtime timeouts of
# compiled runs, whose titles say "compiled". The site's search does the same (kb/website/assets/kb.js).
_ALNUM = re.compile(r"[^\W_]+")


def joined(text: str) -> str:
    """The letters and digits of a text as one word, or "" when it has fewer than two words (compile_timeout:
    compiletimeout)."""
    words = _ALNUM.findall(text.lower())
    return "".join(words) if len(words) > 1 else ""


def _or_joined(words: list[str], matches: list[str | None], vocabulary: sqlite3.Connection | None) -> str:
    """Every word's match (None for a stop word, which matches nothing by itself); or, for two adjacent words,
    them written together (compile timeout: compiletimeout) with every other word's match, so a joined word
    stands for its two words only and a longer query still narrows. With the `vocabulary` (the index), a word no
    entry holds is left out: it would find nothing, and each alternative costs FTS5 a pass over the matches of
    the others (out of memory: 0.25 s at 100,000 entries with "outof" and "ofmemory", 0.15 s without)."""
    alternatives = [_all([match for match in matches if match])]
    for at, (a, b) in enumerate(pairwise(words)):
        if (
            _ALNUM.fullmatch(a)
            and _ALNUM.fullmatch(b)
            and (vocabulary is None or _holds(vocabulary, joined(f"{a} {b}")))
        ):
            others = [match for i, match in enumerate(matches) if match and i not in (at, at + 1)]
            alternatives.append(_all([_string(joined(f"{a} {b}")), *others]))
    unique = list(dict.fromkeys(alternatives))
    if len(unique) == 1:
        return unique[0]
    return " OR ".join(f"({match})" if " AND " in match else match for match in unique)


def _all(matches: list[str]) -> str:
    return " AND ".join(f"({match})" for match in matches) if len(matches) > 1 else matches[0]


class _Refused(Exception):
    """A part of a parsed query that cannot be searched for; compile_query names the query."""


# Words Whoosh's parser would read as they are: no field, quote, bracket, wildcard, boost or operator.
_PLAIN = re.compile(r"[^\s:\"'()\[\]{}*?^~\\]+")
_OPERATORS = frozenset({"AND", "OR", "NOT", "ANDNOT", "ANDMAYBE", "REQUIRE", "TO"})


def _plain_words(query: str) -> list[str] | None:
    """The words of a query of plain words only (Whoosh would read it as all of them, AND), else None."""
    _check_text(query)
    words = list(dict.fromkeys(query.split()))  # a word twice is one condition, as Whoosh has it
    if all(_is_plain(word) for word in words):
        return words
    return None


def _is_plain(word: str) -> bool:
    return bool(_PLAIN.fullmatch(word)) and word not in _OPERATORS


def _check_text(query: str) -> None:
    if len(query) > MAX_QUERY_CHARS:
        raise KbError(f"the query is {len(query)} characters long; search for at most {MAX_QUERY_CHARS}")
    if LONE_SURROGATE.search(query):  # bytes in the command line that are not UTF-8
        raise KbError(f"the query {quoted(query, QUOTED_CHARS)} holds bytes that are not UTF-8 text; type it as UTF-8")


def parse(query: str) -> Query:
    """The Whoosh query tree for a query string; a KbError says what is wrong with one that does not parse."""
    _check_text(query)
    shown = quoted(query, QUOTED_CHARS)
    _check_brackets(query)
    try:
        parsed = _parser().parse(query)
    except (IndexError, AssertionError):  # Whoosh's parser fails on operators with nothing to join: "NOT AND x"
        raise KbError(f"the query {shown} has an operator (AND, OR, NOT) with nothing beside it") from None
    known = {*DEFAULT_FIELDS, *COLUMN_FIELDS, _DEFAULT, None}
    for leaf in parsed.leaves():
        name = leaf.field()
        if name not in known:
            from rapidfuzz import fuzz, process

            names = sorted({*DEFAULT_FIELDS, *COLUMN_FIELDS, *(a for v in ALIASES.values() for a in v)})
            near = process.extractOne(name, names, scorer=fuzz.ratio, score_cutoff=SUGGEST_SCORE)
            hint = f"did you mean {near[0]}? " if near else ""
            raise KbError(
                f"unknown field {quoted(name, QUOTED_CHARS)} in the query {shown}: {hint}(fields: {', '.join(names)}); "
                'to search for text that contains ":", put it in double quotes'
            )
    return parsed


@cache
def _parser() -> QueryParser:
    from whoosh import fields, qparser
    from whoosh.analysis import SpaceSeparatedTokenizer

    # Terms reach the compiler as typed (FTS5 splits, lowers and stems them): each field only splits at blanks.
    names = [*DEFAULT_FIELDS, *COLUMN_FIELDS, _DEFAULT]
    schema = fields.Schema(**{name: fields.TEXT(analyzer=SpaceSeparatedTokenizer()) for name in names})
    parser = qparser.QueryParser(_DEFAULT, schema)
    # Keep unknown field names as fields, so that a typo is reported rather than searched as text.
    parser.remove_plugin_class(qparser.FieldsPlugin)
    parser.add_plugin(qparser.FieldsPlugin(remove_unknown=False))
    parser.add_plugin(qparser.FieldAliasPlugin(ALIASES))
    return parser


def _compile(node: Query, vocabulary: sqlite3.Connection | None) -> Compiled | str:
    from whoosh import query as q

    if isinstance(node, type(q.NullQuery)):
        return _IGNORED
    if isinstance(node, q.Every):
        return Compiled()
    if isinstance(node, q.AndNot):
        return _and([node.a, q.Not(node.b)], vocabulary)
    if isinstance(node, q.AndMaybe):  # "a ANDMAYBE b": b only ranks, in Whoosh; here a alone
        return _compile(node.a, vocabulary)
    if isinstance(node, q.Require):
        return _and([node.a, node.b], vocabulary)
    if isinstance(node, q.Not):
        return _and([node], vocabulary)
    if isinstance(node, q.And):
        return _and(node.subqueries, vocabulary)
    if isinstance(node, (q.Or, q.DisjunctionMax)):
        return _or(node.subqueries, vocabulary)
    return _leaf(node, vocabulary)


def _and(children: Iterable[Query], vocabulary: sqlite3.Connection | None) -> Compiled | str:
    from whoosh import query as q

    parts = []
    for child in children:
        negative = isinstance(child, q.Not)
        parts.append((negative, _compile(child.query if negative else child, vocabulary)))
    return _required(parts)


def _required(parts: list[tuple[bool, Compiled | str]]) -> Compiled | str:
    """Compiled parts, each required (or, negated, excluded), as one."""
    matches: list[str] = []
    negated: list[str] = []
    result = Compiled()
    said = False
    for negative, part in parts:
        if part == _IGNORED:
            continue
        said = True
        if part == _NOTHING:
            if negative:
                continue  # NOT nothing: no condition
            return _NOTHING
        assert isinstance(part, Compiled)
        if negative:
            if part.match is not None and not part.conditions:
                negated.append(part.match)
            elif part.match is None and not part.conditions:
                return _NOTHING  # NOT everything
            else:
                clause, params = part.where()
                result.conditions.append(f"NOT ({clause})")
                result.params.extend(params)
            continue
        if part.match is not None:
            matches.append(part.match)
        result.conditions.extend(part.conditions)
        result.params.extend(part.params)
    if not said:
        return _IGNORED
    if matches:
        result.match = " AND ".join(f"({match})" for match in matches) if len(matches) > 1 else matches[0]
        for match in negated:
            result.match = f"({result.match}) NOT ({match})"
    else:
        for match in negated:
            result.conditions.append(f"e.rowid NOT IN (SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ?)")
            result.params.append(match)
    return result


def _or(children: Iterable[Query], vocabulary: sqlite3.Connection | None) -> Compiled | str:
    parts = [part for part in (_compile(child, vocabulary) for child in children) if part not in (_IGNORED, _NOTHING)]
    if not parts:
        return _NOTHING
    compiled = [part for part in parts if isinstance(part, Compiled)]
    if any(part.match is None and not part.conditions for part in compiled):
        return Compiled()  # one side matches everything
    if all(not part.conditions for part in compiled):
        return Compiled(match=" OR ".join(f"({part.match})" for part in compiled))
    clauses, params = [], []
    for part in compiled:
        clause, values = part.where()
        clauses.append(clause)
        params.extend(values)
    return Compiled(conditions=[" OR ".join(f"({clause})" for clause in clauses)], params=params)


def _leaf(node: Query, vocabulary: sqlite3.Connection | None) -> Compiled | str:
    from whoosh import query as q

    name = node.field()
    if name in COLUMN_FIELDS:
        return _column(node)
    if isinstance(node, q.TermRange):
        raise _Refused(f"a range works on recorded or id, not on {name}: e.g. recorded:[2026-11-01 TO 2026-11-30]")
    column = None if name == _DEFAULT else name
    keyword = column in KEYWORD_FIELDS
    if isinstance(node, q.Phrase):
        return _phrase(column, node.words, node.slop)
    text = str(node.text)
    if isinstance(node, q.Prefix):
        term = exact(text) if keyword else text
        return Compiled(match=_in(column, f"{_string(term)} *")) if _tokens(term) else _IGNORED
    if isinstance(node, q.Wildcard):
        return _wildcard(column, text.lower(), keyword, vocabulary)
    if isinstance(node, q.Term):
        return _word(column, text, keyword)
    raise _Refused(f"cannot search for {type(node).__name__.lower()} terms; put the text in double quotes")


def _phrase(column: str | None, words: list[str], slop: int) -> Compiled | str:
    """Whoosh's Phrase: its words in order (within `slop` - 1 others of each other)."""
    text = " ".join(words)
    phrase = _string(text)
    if slop > 1 and len(words) > 1:
        phrase = f"NEAR({' '.join(_string(word) for word in words)}, {slop - 1})"
    return Compiled(match=_in(column, phrase)) if _tokens(text) else _IGNORED


def _word(column: str | None, text: str, keyword: bool) -> Compiled | str:
    """One word (Whoosh's Term) of a field, or of every field when `column` is None."""
    if not text.strip():
        return _IGNORED
    if keyword:
        return Compiled(match=_in(column, _string(exact(text))))
    if not _tokens(text) or (column is None and text.lower() in STOP_WORDS):
        return _IGNORED
    if column is None and exact(text) != text.lower():  # torch=2.9.0: its words, or the whole of it
        return Compiled(match=f"{_string(text)} OR {_string(exact(text))}")
    return Compiled(match=_in(column, _string(text)))


def _column(node: Query) -> Compiled | str:
    """id and recorded: exact, prefix or range, against the entries table."""
    from whoosh import query as q

    column = f"e.{node.field()}"
    if isinstance(node, q.TermRange):
        conditions, params = [], []
        if node.start:
            conditions.append(f"{column} {'>' if node.startexcl else '>='} ?")
            params.append(node.start)
        if node.end:  # an end given as a day includes that day's times
            if node.endexcl:
                conditions.append(f"{column} < ?")
                params.append(node.end)
            else:
                conditions.append(f"({column} <= ? OR {column} GLOB ?)")
                params.extend([node.end, _glob_literal(node.end) + "*"])
        return Compiled(conditions=conditions, params=params)
    text = str(getattr(node, "text", ""))
    if isinstance(node, (q.Prefix, q.Wildcard)):
        pattern = _glob_literal(text) + "*" if isinstance(node, q.Prefix) else text
        return Compiled(conditions=[f"{column} GLOB ?"], params=[pattern])
    if isinstance(node, q.Phrase):
        text = " ".join(node.words)
    if node.field() == "recorded":  # a day or a month finds the entries of that time
        return Compiled(conditions=[f"{column} GLOB ?"], params=[_glob_literal(text) + "*"])
    return Compiled(conditions=[f"{column} = ?"], params=[text])


def _wildcard(column: str | None, pattern: str, keyword: bool, vocabulary: sqlite3.Connection | None) -> Compiled | str:
    """A wildcard as the indexed terms it covers (the index's terms are stemmed: "trainium?" finds trainium3)."""
    if vocabulary is None:
        return _NOTHING
    if keyword:
        pattern = "".join(char if char in "*?" else exact(char) or char for char in pattern)
    # GLOB is case-sensitive and the terms are lower case; [ would start a character class.
    glob = pattern.replace("[", "[[]")
    if not re.sub(r"[*?]", "", glob):
        raise _Refused("a wildcard needs at least one letter or digit beside * or ?: e.g. flex* or trainium?")
    rows = vocabulary.execute(
        f"SELECT term FROM {VOCABULARY} WHERE term GLOB ? LIMIT ?", [glob, MAX_WILDCARD_TERMS + 1]
    ).fetchall()
    if len(rows) > MAX_WILDCARD_TERMS:
        raise _Refused(f"{pattern} covers more than {MAX_WILDCARD_TERMS} words; give more letters before the wildcard")
    if not rows:
        return _NOTHING
    # A term as a prefix: FTS5 stems a quoted word again, and porter's stems are not all stems of themselves
    # (exceed -> excee); a prefix is left as it is.
    return Compiled(match=_in(column, "(" + " OR ".join(f"{_string(term)} *" for (term,) in rows) + ")"))


def _in(column: str | None, expression: str) -> str:
    return expression if column is None else f"{column} : {expression}"


def _string(text: str) -> str:
    """Text as an FTS5 string: FTS5 splits, lowers and stems it; several words are a phrase."""
    return '"' + text.replace('"', '""').replace("\x00", " ") + '"'


def _tokens(text: str) -> bool:
    """Whether FTS5 finds any word in the text (an FTS5 string of punctuation alone is a syntax error)."""
    return any(char.isalnum() for char in text)


def _glob_literal(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def _check_brackets(query: str) -> None:
    # Whoosh parses anything, silently dropping what it cannot place: say so instead of searching for something else.
    shown = quoted(query, QUOTED_CHARS)
    if query.count('"') % 2:
        raise KbError(f'the query {shown} has an unclosed double quote; close the phrase, as in "flex attention"')
    closer = {"(": ")", "[": "]}", "{": "]}"}  # ranges may mix ends: [a TO b} includes a, excludes b
    stack: list[str] = []
    for char in re.sub(r'"[^"]*"', " ", query):
        if char in closer:
            stack.append(char)
        elif char in ")]}" and not (stack and char in closer[stack.pop()]):
            raise KbError(f"the query {shown} has an unmatched {char!r}; put text with brackets in double quotes")
    if stack:
        raise KbError(f"the query {shown} has an unclosed {stack[-1]!r}; close it, or put the text in double quotes")


# --- What is shown ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    title: str
    snippet: str  # matched terms marked **like this**, from the best field that matched; <= ~240 characters
    matched: tuple[str, ...] = ()  # which of the query's words (Compiled.words) the entry has
    words: int = 0  # how many words the query has to match that way (0: a query with OR at its top, or one word)


def snippet_sql(match: str | None) -> str:
    """Result columns over the table giving each row's snippet (see `snippet_of`): the first of SNIPPET_FIELDS
    where the query marks a word, else none, then the failure and notes texts to fall back on.

    SQLite evaluates CASE lazily, so a column is cut only while no earlier one has a marked word (the long output
    column seldom), and only for the rows a query returns when it is in the ranking query's own columns."""
    order = list(DEFAULT_FIELDS)
    cases = " ".join(
        f"WHEN instr({cut}, '{_OPEN}') THEN {cut}"
        for cut in (
            f"snippet({TABLE}, {order.index(name)}, '{_OPEN}', '{_CLOSE}', '…', {SNIPPET_TOKENS})"
            for name in SNIPPET_FIELDS
        )
    )
    marked = f"CASE {cases} END" if match is not None else "NULL"
    return f"{marked}, {TABLE}.failure, {TABLE}.notes"


def snippet_of(marked: str | None, failure: str | None, notes: str | None) -> str:
    """A snippet from the columns of `snippet_sql`: matched words in **, at most SNIPPET_CHARS."""
    if marked is not None:
        return _clip(marked.replace(_OPEN, "**").replace(_CLOSE, "**"))
    return _clip(failure or notes or "")


def snippets(db: sqlite3.Connection, match: str | None, rowids: list[int]) -> dict[int, str]:
    """The snippet of each of these entries (by rowid), for a query whose ranking could not make them."""
    marks = ", ".join("?" * len(rowids))
    if match is None:
        rows = db.execute(f"SELECT rowid, {snippet_sql(None)} FROM {TABLE} WHERE rowid IN ({marks})", rowids)
    else:
        rows = db.execute(
            f"SELECT rowid, {snippet_sql(match)} FROM {TABLE} WHERE {TABLE} MATCH ? AND rowid IN ({marks})",
            [match, *rowids],
        )
    found = {rowid: snippet_of(*columns) for rowid, *columns in rows}
    left = [rowid for rowid in rowids if rowid not in found]
    return found | snippets(db, None, left) if left and match is not None else found


def _clip(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= SNIPPET_CHARS:
        return text
    text = text[: SNIPPET_CHARS - 1].rstrip("*")
    return text + ("**…" if text.count("**") % 2 else "…")  # a cut inside a mark closes it


def count(db: sqlite3.Connection) -> int:
    """How many entries have text in the table (for consistency checks)."""
    return db.execute(f"SELECT count(*) FROM {DOCUMENTS}").fetchone()[0]


def indexed_ids(db: sqlite3.Connection) -> set[str]:
    """The id of every entry with text in the table (for consistency checks)."""
    return {row[0] for row in db.execute(f"SELECT e.id FROM {DOCUMENTS} f JOIN entries e ON e.rowid = f.rowid")}


# --- When nothing is found --------------------------------------------------------------------------------------

SUGGEST_SCORE = 75  # of 100 (rapidfuzz's normalised similarity): below this a word is not what was meant


def did_you_mean(db: sqlite3.Connection, query: str) -> str | None:
    """The query with each word the index does not hold replaced by the nearest word it does, or None.

    The index's terms (fts5vocab) are stems; a stem chosen is shown as a word of an entry that holds it.
    """
    from rapidfuzz import fuzz, process

    words = [word for word in re.findall(r"(?<![:\w])[^\W\d_]{3,}\b(?!:)", query) if word not in ("AND", "OR", "NOT")]
    missing = [word for word in dict.fromkeys(words) if not _holds(db, word)]
    if not missing:
        return None
    counts = dict(db.execute(f"SELECT term, doc FROM {VOCABULARY} WHERE term GLOB '[a-z]*'").fetchall())
    suggested = query
    for word in missing:
        near = process.extract(_stem(word), list(counts), scorer=fuzz.ratio, score_cutoff=SUGGEST_SCORE, limit=5)
        if not near:
            return None
        best = max(near, key=lambda found: (found[1], counts[found[0]]))  # the likeliest, then the commonest
        shown = _surface(db, best[0], word)
        if shown is None:
            return None
        suggested = re.sub(rf"(?<![:\w]){re.escape(word)}\b", shown, suggested)
    return suggested if suggested != query else None


@cache
def _stemmer() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize = '{TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE stems USING fts5vocab(words, 'row')")
    return db


def _stem(word: str) -> str:
    """The word as the index's tokenizer stores it, to compare with its terms (compiling: compil)."""
    db = _stemmer()
    db.execute("DELETE FROM words")
    db.execute("INSERT INTO words VALUES (?)", [word])
    row = db.execute("SELECT term FROM stems").fetchone()
    return row[0] if row else word.lower()


def _holds(db: sqlite3.Connection, word: str) -> bool:
    return db.execute(f"SELECT 1 FROM {TABLE} WHERE {TABLE} MATCH ? LIMIT 1", [_string(word)]).fetchone() is not None


def _surface(db: sqlite3.Connection, term: str, typed: str) -> str | None:
    """The word nearest to `typed` as entries write it whose stem is `term` (a stem is often no word: compil)."""
    from rapidfuzz import fuzz

    marked = " || ' ' || ".join(
        f"coalesce(highlight({TABLE}, {column}, '{_OPEN}', '{_CLOSE}'), '')" for column in range(len(DEFAULT_FIELDS))
    )
    rows = db.execute(f"SELECT {marked} FROM {TABLE} WHERE {TABLE} MATCH ? LIMIT 5", [f"{_string(term)} *"])
    words = {word.lower() for (text,) in rows for word in re.findall(f"{_OPEN}(.*?){_CLOSE}", text or "")}
    return max(sorted(words), key=lambda word: fuzz.ratio(word, typed.lower()), default=None)
