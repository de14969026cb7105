"""Full-text search over entries, behind one small interface so Whoosh can be swapped later.

The SQLite index answers structured filters; this module answers words. Nothing else in kb imports
whoosh, and this module imports it only inside functions so that `kb --help` stays fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb import atomic
from kb.entry import Entry
from kb.errors import DISK_FULL, LONE_SURROGATE, NOT_WRITABLE, KbError, quoted

if TYPE_CHECKING:
    from whoosh.fields import Schema
    from whoosh.highlight import Highlighter
    from whoosh.index import Index
    from whoosh.qparser import QueryParser
    from whoosh.query import Query
    from whoosh.searching import Searcher
    from whoosh.writing import IndexWriter

SCHEMA_VERSION = 1  # bump to force a rebuild when the fields change; stored in the index folder
VERSION_FILE = "kb-fulltext-version"
# Size and mtime of each file as the last commit left it. Whoosh never rewrites a file in place and has no checksums:
# a file that differs was damaged, and searching it could silently miss entries.
FILES_FILE = "kb-fulltext-files.json"

# Whoosh's default index name; its writer lock is the file "<name>_WRITELOCK" in the folder.
_INDEX_NAME = "MAIN"

# Fields searched when a word names no field, with their weights.
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
}
# Field names people may type, besides the real ones.
ALIASES = {
    "tags": ["tag"],
    "versions": ["version"],
    "settings": ["setting"],
    "metrics": ["metric"],
    "notes": ["note", "body"],
    "provenance": ["source", "publisher"],
}
# Where a snippet comes from, best first: the title is shown anyway, so text around it says more.
SNIPPET_FIELDS = ("failure", "notes", "title", "output")
SNIPPET_CHARS = 240
MAX_QUERY_CHARS = 1000
# Output is a log tail, and the end of a log says the most: a pasted megabyte costs no more than this.
OUTPUT_CHARS = 16_000

# A batch this large is a (re)build: worth a sub-process per core (2 here) with a bigger sorting buffer each, their
# segments kept as they are rather than merged into one by a final serial pass.
BULK_DOCS = 2000
BULK_OPTIONS: dict[str, Any] = {"procs": 2, "multisegment": True, "limitmb": 256}
# Looking up one id in the term index costs about as much as reading this many ids from the id column.
ID_LOOKUP_COST = 30
# A commit merges MERGE_FACTOR segments of one size class (1-3 documents, 4-15, 16-63...: powers of 4) into one.
MERGE_FACTOR = 4

_OUTPUT_HEADING = re.compile(r"^##\s+output\s*$", re.IGNORECASE)
_SECTION_HEADING = re.compile(r"^#{1,2}\s")
_FENCE = re.compile(r"^\s*(```|~~~)")


# Errors of a full disk or a read-only folder: reported as they are. Any other error while reading the index means
# damaged files (Whoosh has no error of its own for that: truncated or overwritten files raise EOFError,
# UnpicklingError, struct.error, a bare Exception...).
_STORAGE_ERRNOS = DISK_FULL | NOT_WRITABLE

QUOTED_CHARS = 120  # of a query in an error message: longer than an option's value


class FullTextDamaged(KbError):
    """The full-text index's files are damaged; it is marked for the next sync to rebuild."""


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    title: str
    snippet: str  # matched terms marked **like this**, from the best field that matched; <= ~240 characters


def document(entry: Entry) -> dict[str, str]:
    """The text fields indexed for one entry."""
    get = entry.get
    failure = get("failure") or {}
    notes, output = _split_body(entry.body)
    return {
        "id": entry.id,
        "title": entry.title,
        "kind": entry.kind,
        "status": entry.status or "",
        "backend": get("backend") or "",
        "mode": get("mode") or "",
        "workload": _join(get("workload.name"), get("workload.model")),
        "tags": ",".join(str(tag).lower() for tag in get("tags") or []),
        "failure": _join(*(failure.get(key) for key in ("class", "message", "explanation", "evidence"))),
        "notes": notes,
        "output": output[-OUTPUT_CHARS:],
        "versions": _keywords(get("versions")),
        "settings": _keywords(get("settings")),
        "metrics": " ".join(get("metrics") or {}).lower(),
        "provenance": _join(get("provenance.source"), get("provenance.publisher")),
        "recorded": entry.recorded,
    }


def _join(*parts: Any) -> str:
    return "\n".join(str(part) for part in parts if part not in (None, ""))


def _keywords(mapping: dict[str, Any] | None) -> str:
    """`name=value` tokens, one per item: whitespace inside a value would split the token, so it becomes `_`."""
    return " ".join(re.sub(r"\s+", "_", f"{name}={_scalar(value)}".lower()) for name, value in (mapping or {}).items())


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


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


def _recency(recorded: str) -> int:
    """The recorded time as a number (YYYYMMDDhhmmss): a numeric column sorts newest-first cheaply."""
    digits = re.sub(r"\D", "", recorded)[:14]
    return int(digits.ljust(14, "0")) if digits else 0


@cache
def _schema() -> Schema:
    from whoosh import columns, fields
    from whoosh.analysis import CommaSeparatedTokenizer, LowercaseFilter, RegexTokenizer, StemmingAnalyzer, StopFilter

    # Words split at '_' and '.' too, so "compile" finds torch.compile and compile_timeout. Every analyzer drops
    # the same stop words: a word dropped by some default fields but kept by others would have to match there.
    words = r"[^\W_]+"
    stemmed = StemmingAnalyzer(expression=words, minsize=1)
    plain = RegexTokenizer(words) | LowercaseFilter() | StopFilter(minsize=1)
    keywords = RegexTokenizer(r"\S+") | LowercaseFilter() | StopFilter(minsize=1)
    tags = CommaSeparatedTokenizer() | LowercaseFilter() | StopFilter(minsize=1)

    def text(analyzer: Any = stemmed, stored: bool = False) -> fields.TEXT:
        # A word the analyzer splits (flex-attention, compile_timeout) is searched as a phrase, not as loose words.
        return fields.TEXT(analyzer=analyzer, stored=stored, multitoken_query="phrase")

    def keyword(analyzer: Any = keywords) -> fields.TEXT:
        # Positions kept all the same: a quoted phrase is searched in every default field, and needs them.
        return fields.TEXT(analyzer=analyzer)

    return fields.Schema(
        id=fields.ID(stored=True, unique=True, sortable=True),
        title=text(stored=True),
        kind=keyword(),
        status=keyword(),
        backend=keyword(),
        mode=keyword(),
        workload=text(plain),
        tags=keyword(tags),
        failure=text(stored=True),
        notes=text(stored=True),
        output=text(stored=True),
        versions=keyword(),
        settings=keyword(),
        metrics=keyword(),
        provenance=text(plain),
        recorded=fields.ID(),  # ISO text: `recorded:[2026-11 TO]` compares it as text
        recency=fields.COLUMN(columns.NumericColumn("Q")),
    )


@cache
def _parser() -> QueryParser:
    from whoosh import qparser

    parser = qparser.MultifieldParser(list(DEFAULT_FIELDS), _schema(), fieldboosts=DEFAULT_FIELDS)
    # Keep unknown field names as fields, so that a typo is reported rather than searched as text.
    parser.remove_plugin_class(qparser.FieldsPlugin)
    parser.add_plugin(qparser.FieldsPlugin(remove_unknown=False))
    parser.add_plugin(qparser.FieldAliasPlugin(ALIASES))
    return parser


@cache
def _highlighter() -> Highlighter:
    from whoosh import highlight

    class Bold(highlight.Formatter):
        between = " … "

        def format_token(self, text: str, token: Any, replace: bool = False) -> str:
            return f"**{highlight.get_text(text, token, replace)}**"

    return highlight.Highlighter(fragmenter=highlight.ContextFragmenter(maxchars=100, surround=30), formatter=Bold())


def _parse(query: str) -> Query:
    """The Whoosh query for a query string; a KbError says what is wrong with one that does not parse."""
    if len(query) > MAX_QUERY_CHARS:  # Whoosh's analysis takes seconds on a page of text
        raise KbError(f"the query is {len(query)} characters long; search for at most {MAX_QUERY_CHARS}")
    shown = quoted(query, QUOTED_CHARS)
    if LONE_SURROGATE.search(query):  # bytes in the command line that are not UTF-8
        raise KbError(f"the query {shown} holds bytes that are not UTF-8 text; type it as UTF-8")
    _check_brackets(query)
    try:
        parsed = _parser().parse(query)
    except (IndexError, AssertionError):  # Whoosh's parser fails on operators with nothing to join: "NOT AND x"
        raise KbError(f"the query {shown} has an operator (AND, OR, NOT) with nothing beside it") from None
    known = set(_schema().names())
    for leaf in parsed.leaves():
        name = leaf.field()
        if name is not None and name not in known:
            fields = ", ".join(sorted({*DEFAULT_FIELDS, "id", "recorded", *(a for v in ALIASES.values() for a in v)}))
            raise KbError(
                f"unknown field {quoted(name, QUOTED_CHARS)} in the query {shown} (fields: {fields}); "
                'to search for text that contains ":", put it in double quotes'
            )
    return parsed


def _merge_similar(writer: IndexWriter, segments: list[Any]) -> list[Any]:
    """Merge policy: the smallest MERGE_FACTOR segments of one size class, if there are that many.

    Whoosh's MERGE_SMALL re-merges one growing small segment every few commits (0.1-0.5 s each time on 5,000
    entries); merging like sizes rewrites each document once per size class, log4(n) times in all, so a
    one-entry commit rarely merges much and the segment count stays about 3 per size class.
    """
    from whoosh.reading import SegmentReader

    classes: dict[int, list[Any]] = {}
    for segment in segments:  # live documents, so that a segment thinned by deletions is merged sooner
        size_class = (max(segment.doc_count(), 1).bit_length() - 1) // 2  # log4
        classes.setdefault(size_class, []).append(segment)
    merged = next((group for _, group in sorted(classes.items()) if len(group) >= MERGE_FACTOR), [])
    for segment in merged:
        reader = SegmentReader(writer.storage, writer.schema, segment)
        writer.add_reader(reader)
        reader.close()
    return [segment for segment in segments if segment not in merged]


def _check_brackets(query: str) -> None:
    # Whoosh parses anything, silently dropping what it cannot place: say so instead of searching for something else.
    shown = quoted(query, QUOTED_CHARS)
    if query.count('"') % 2:
        raise KbError(
            f'the query {shown} has an unclosed double quote; close the phrase, as in "flex attention"'
        )
    closer = {"(": ")", "[": "]}", "{": "]}"}  # ranges may mix ends: [a TO b} includes a, excludes b
    stack: list[str] = []
    for char in re.sub(r'"[^"]*"', " ", query):
        if char in closer:
            stack.append(char)
        elif char in ")]}" and not (stack and char in closer[stack.pop()]):
            raise KbError(
                f"the query {shown} has an unmatched {char!r}; put text with brackets in double quotes"
            )
    if stack:
        raise KbError(
            f"the query {shown} has an unclosed {stack[-1]!r}; close it, or put the text in double quotes"
        )


def _clip(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= SNIPPET_CHARS:
        return text
    text = text[: SNIPPET_CHARS - 1].rstrip("*")
    return text + ("**…" if text.count("**") % 2 else "…")  # a cut inside a mark closes it


class FullText:
    """The full-text index in `folder` (e.g. <kb>/.kb/whoosh), created on the first update."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._index: Index | None = None
        self._searcher: Searcher | None = None  # kept between searches, refreshed when the index changes
        self._ids_by_docnum: list[str] | None = None  # the searcher's id column, read when first needed

    def exists(self) -> bool:
        """Whether an index of this SCHEMA_VERSION is there; if not, update() starts a new one."""
        from whoosh.index import EmptyIndexError

        if self._version() != SCHEMA_VERSION:
            return False
        with self._guard():  # the index opened once (its table of contents read) serves every later call
            try:
                return self._open().latest_generation() > -1
            except EmptyIndexError:
                self._index = None
                return False

    def clear(self, timeout_s: float = 30.0) -> None:
        """Drop every document, leaving an empty index (for `kb index --rebuild`)."""
        from whoosh.writing import CLEAR

        self.close()
        if not self.exists():
            self._create(timeout_s)
        # A commit, not a new index: the generation moves on, so searchers held elsewhere notice the change.
        self._writer(self._open(), timeout_s).commit(mergetype=CLEAR)

    def update(self, upserts: Iterable[Entry], deletes: Iterable[str], timeout_s: float = 30.0) -> None:
        """Index `upserts` and remove `deletes` (entry ids) in one commit; an id in both is indexed.

        Creates the index when there is none of this SCHEMA_VERSION: callers check exists() first and send
        every entry then.
        """
        entries = {entry.id: entry for entry in upserts}  # last wins: a writer can't replace its own adds
        gone = set(deletes) | entries.keys()
        if not self.exists():
            self._create(timeout_s)
        if not gone:
            return
        with self._guard():
            index = self._open()
            writer = self._writer(index, timeout_s, **(BULK_OPTIONS if len(entries) >= BULK_DOCS else {}))
            try:
                if not index.is_empty():  # read under the lock; a first build has nothing to delete: skip the lookups
                    for entry_id in gone:
                        writer.delete_by_term("id", entry_id)
                for entry in entries.values():  # documents made one at a time: a rebuild never holds them all
                    doc = document(entry)
                    writer.add_document(**doc, recency=_recency(doc["recorded"]))
            except BaseException:
                writer.cancel()
                raise
            writer.commit(mergetype=_merge_similar)
        atomic.write_text(self.folder / FILES_FILE, json.dumps(self._stats()))

    def check(self) -> None:
        """Raise FullTextDamaged if a file changed since the last commit or the index does not open as a search's."""
        with self._guard():
            try:
                recorded = json.loads((self.folder / FILES_FILE).read_text("utf-8"))
            except FileNotFoundError:
                recorded = {}  # from before FILES_FILE, or a crash before it was written: nothing to compare
            now = self._stats()
            changed = sorted(name for name, stat in recorded.items() if name in now and now[name] != stat)
            if changed:
                raise ValueError(f"{changed[0]} changed since kb wrote it")
            self._open().reader().close()

    def _stats(self) -> dict[str, list[int]]:
        skip = {VERSION_FILE, FILES_FILE, f"{_INDEX_NAME}_WRITELOCK"}
        stats = {}
        for item in os.scandir(self.folder):
            if item.name not in skip and not item.name.startswith("."):
                stat = item.stat()
                stats[item.name] = [stat.st_size, stat.st_mtime_ns]
        return stats

    def search(self, query: str, *, limit: int = 20, only_ids: Collection[str] | None = None) -> list[Hit]:
        """Entries matching `query` (Whoosh's query language), best first, newest first among equals.

        `only_ids` restricts the hits to those entry ids (the structured filters, computed elsewhere).
        """
        parsed = _parse(query)  # before looking at the index, so a bad query is reported even on an empty one
        with self._guard():
            return self._search(parsed, limit, only_ids)

    def _search(self, parsed: Query, limit: int, only_ids: Collection[str] | None) -> list[Hit]:
        from whoosh.query import NullQuery

        searcher = self._fresh_searcher()
        if searcher is None or parsed is NullQuery or limit < 1 or (only_ids is not None and not only_ids):
            return []
        allow = None if only_ids is None else self._docnums(searcher, only_ids)
        # One more than asked for shows whether equal scores straddle the cut; if they do, every match is scored so
        # that the date decides who makes it (Whoosh keeps the lowest docnum of equals and skips blocks that can't
        # beat the last kept score).
        results = searcher.search(parsed, limit=limit + 1, filter=allow)
        if results.scored_length() > limit and results.score(limit) == results.score(limit - 1):
            results = searcher.search(parsed, limit=None, filter=allow)
        results.highlighter = _highlighter()
        ranked = range(results.scored_length())
        if len(ranked) > limit:
            cut = results.score(limit - 1)
            ranked = range(next((n for n in ranked[limit:] if results.score(n) < cut), len(ranked)))
        recency = searcher.reader().column_reader("recency")
        ranked = sorted(ranked, key=lambda n: (-results.score(n), -recency[results.docnum(n)]))[:limit]
        # Highlighting analyses the stored text again: only where the query has terms (none for backend:neuron).
        queried = {leaf.field() for leaf in parsed.leaves()}
        fields = [name for name in SNIPPET_FIELDS if name in queried]
        return [self._hit(results[n], fields) for n in ranked]

    @staticmethod
    def _hit(hit: Any, fields: list[str]) -> Hit:
        snippet = next((s for s in (hit.highlights(name, top=2) for name in fields) if s), "")
        return Hit(hit["id"], hit.score, hit["title"], _clip(snippet or hit["failure"] or hit["notes"]))

    def count(self) -> int:
        searcher = self._fresh_searcher()
        return 0 if searcher is None else searcher.doc_count()

    def ids(self) -> set[str]:
        """Every indexed entry id (for consistency checks)."""
        searcher = self._fresh_searcher()
        if searcher is None:
            return set()
        reader = searcher.reader()
        column = reader.column_reader("id")
        if not reader.has_deletions():
            return set(column)
        return {entry_id for docnum, entry_id in enumerate(column) if not reader.is_deleted(docnum)}

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """Damage found while reading becomes FullTextDamaged, and the index is marked for the next sync to rebuild."""
        try:
            yield
        except (KbError, KeyboardInterrupt):
            raise
        except Exception as exc:
            if isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS:
                raise
            self.close()
            (self.folder / VERSION_FILE).unlink(missing_ok=True)  # exists() is False now: a sync rebuilds it
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise FullTextDamaged(
                f"the full-text index in {self.folder} is damaged ({reason}); the next kb command rebuilds it "
                "from the entries"
            ) from exc

    def close(self) -> None:
        """Let go of the searcher kept between searches."""
        if self._searcher is not None:
            self._searcher.close()
        self._searcher = None
        self._ids_by_docnum = None
        self._index = None

    def _version(self) -> int | None:
        try:
            return int((self.folder / VERSION_FILE).read_text().strip())
        except (OSError, ValueError):
            return None

    def _open(self) -> Index:
        from whoosh.filedb.filestore import FileStorage

        if self._index is None:
            # Without mmap: Whoosh wraps each memory-mapped part of a segment in a BytesIO, which copies it, so
            # every reader opened copied the whole index (60 ms at 10,000 entries, growing with the index).
            # Read through the file instead, only what a query needs.
            self._index = FileStorage(str(self.folder), supports_mmap=False).open_index(_INDEX_NAME)
        return self._index

    def _create(self, timeout_s: float) -> None:
        from whoosh import index
        from whoosh.filedb.filestore import FileStorage
        from whoosh.util.filelock import try_for

        self.close()
        self.folder.mkdir(parents=True, exist_ok=True)
        # Writers take this lock too, so no commit lands in the middle of the new index being written.
        lock = FileStorage(str(self.folder)).lock(f"{_INDEX_NAME}_WRITELOCK")
        if not try_for(lock.acquire, timeout=timeout_s, delay=0.1):
            raise self._locked()
        try:
            if not self.exists():  # again, under the lock: another process may have made it meanwhile
                (self.folder / FILES_FILE).unlink(missing_ok=True)  # it describes the files create_in replaces
                index.create_in(self.folder, _schema(), _INDEX_NAME)
                (self.folder / VERSION_FILE).write_text(f"{SCHEMA_VERSION}\n")
        finally:
            lock.release()

    def _writer(self, index: Index, timeout_s: float, **options: Any) -> IndexWriter:
        from whoosh.index import LockError

        try:
            return index.writer(timeout=timeout_s, **options)  # Whoosh's default is to fail at once
        except LockError:
            raise self._locked() from None

    def _locked(self) -> KbError:
        return KbError(
            f"the full-text index in {self.folder} is locked: another kb process is indexing; retry when it is done"
        )

    def _fresh_searcher(self) -> Searcher | None:
        """A searcher on the latest commit, or None when there is nothing to search."""
        if self._searcher is not None and not self._up_to_date(self._searcher):
            # A new searcher, not refresh(): Whoosh's refresh fails when the old reader had no segments.
            self.close()
        if self._searcher is None:
            if not self.exists():
                if self._version() not in (None, SCHEMA_VERSION):
                    raise KbError(
                        f"the full-text index in {self.folder} was built by another version of kb; "
                        "run `kb index --rebuild`"
                    )
                return None
            self._searcher = self._open().searcher()
        # None for an index without segments too: Whoosh's empty reader has no columns to read.
        return self._searcher if self._searcher.doc_count_all() else None

    @staticmethod
    def _up_to_date(searcher: Searcher) -> bool:
        try:
            return searcher.up_to_date()
        except OSError:  # the folder was removed (a rebuild by another process)
            return False

    def _docnums(self, searcher: Searcher, only_ids: Collection[str]) -> set[int]:
        """The document numbers of these entry ids (deleted documents may be among them: no query matches those)."""
        reader = searcher.reader()
        if len(only_ids) * ID_LOOKUP_COST < reader.doc_count_all():
            return {
                offset + docnum
                for leaf, offset in reader.leaf_readers()
                for entry_id in only_ids
                if ("id", entry_id) in leaf
                for docnum in leaf.postings("id", entry_id).all_ids()
            }
        if self._ids_by_docnum is None:  # read once per searcher: a warm one filters 50,000 ids in milliseconds
            self._ids_by_docnum = list(reader.column_reader("id"))
        wanted = only_ids if isinstance(only_ids, (set, frozenset)) else set(only_ids)
        return {docnum for docnum, entry_id in enumerate(self._ids_by_docnum) if entry_id in wanted}
