"""Questions to the index: structured filters and sorting, and words through its full-text table."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cache
from typing import Any

from kb.errors import LONE_SURROGATE, KbError, quoted
from kb.index import fulltext
from kb.index.db import reading
from kb.index.fulltext import Hit
from kb.index.rows import normalise_package

COLUMNS = ("id", "title", "kind", "status", "recorded", "backend", "mode", "workload", "failure_class", "wall_s",
           "compile_s", "step_s_median", "source", "path")  # fmt: skip
MAX_LIMIT = 2**63 - 1
TIE_ROOM = 10  # hits fetched past the limit, so that those tied at the cut are mostly all in hand
# When no entry has every word: the best this many by bm25 over the words joined by OR are counted word by word.
# That ranking puts entries with more (and rarer) words first, so those with the most are among them.
PARTIAL_CANDIDATES = 1000
COMPARED = ("run", "report")  # the kinds that comparisons and trends are made of
KINDS_COMPARED = ", ".join(f"'{kind}'" for kind in COMPARED)
_SORT = re.compile(r"(?P<table>metric|metrics|timing|timings)\.(?P<name>[A-Za-z0-9_:+-]+)\Z")
_ENTRY_SORTS = {"recorded", "title", "status", "backend", "workload", "wall_s", "compile_s", "first_step_s",
                "step_s_median", "kind", "mode"}  # fmt: skip


@dataclass
class Filters:
    backend: str | None = None
    workload: str | None = None
    status: str | None = None
    kind: str | None = None
    mode: str | None = None
    failure: str | None = None
    tags: list[str] = field(default_factory=list)
    since: str | None = None
    until: str | None = None
    packages: list[str] = field(default_factory=list)
    settings: list[str] = field(default_factory=list)  # NAME=VALUE

    def empty(self) -> bool:
        return not any(
            (
                self.backend,
                self.workload,
                self.status,
                self.kind,
                self.mode,
                self.failure,
                self.tags,
                self.since,
                self.until,
                self.packages,
                self.settings,
            )
        )

    def where(self, db: sqlite3.Connection) -> tuple[str, list[Any]]:
        """A WHERE clause over `entries e` and its parameters."""
        self._check_text()
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("backend", self.backend),
            ("workload", self.workload),
            ("status", self.status),
            ("kind", self.kind),
            ("mode", self.mode),
            ("failure_class", self.failure),
        ):
            if value:  # as empty() has it: an empty value (--backend '') narrows nothing
                clauses.append(f"e.{column} = ?")
                params.append(value)
        for tag in self.tags:
            clauses.append("e.n IN (SELECT entry FROM tags WHERE tag = ?)")
            params.append(tag)
        if self.since:
            clauses.append("e.recorded >= ?")
            params.append(_day(self.since, "--since").isoformat())
        if self.until:
            until = _day(self.until, "--until")
            if until < date.max:  # the last day there is: no upper bound at all
                clauses.append("e.recorded < ?")
                params.append((until + timedelta(days=1)).isoformat())
        for spec in self.packages:
            clause, values = package_clause(db, spec)
            clauses.append(clause)
            params.extend(values)
        for setting in self.settings:
            clause, values = setting_clause(setting)
            clauses.append(clause)
            params.extend(values)
        return (" AND ".join(clauses) or "1"), params

    def _check_text(self) -> None:
        """Bytes in the command line that are not UTF-8 arrive as lone surrogates, which SQLite cannot bind."""
        for name, value in vars(self).items():
            for text in value if isinstance(value, list) else [value]:
                if text is not None and LONE_SURROGATE.search(text):
                    option = {"tags": "tag", "packages": "package", "settings": "setting"}.get(name, name)
                    raise KbError(f"--{option} {quoted(text)}: holds bytes that are not UTF-8 text; type it as UTF-8")


def setting_clause(setting: str) -> tuple[str, list[Any]]:
    """`batch=8` as a condition: the setting recorded with that value (a number as a number, text in any case)."""
    name, equals, value = setting.partition("=")
    if not equals or not name.strip():
        raise KbError(f"--setting {quoted(setting)}: expected NAME=VALUE, e.g. --setting batch=8 or model=LSTM")
    name, value = name.strip(), value.strip()
    match = "e.n IN (SELECT entry FROM settings WHERE name = ? AND {})"
    if value.lower() in ("null", "none", ""):
        return match.format("value IS NULL"), [name]
    try:
        number = float(value)
    except ValueError:
        return match.format("lower(value) = lower(?)"), [name, value]
    return match.format("(number = ? OR lower(value) = lower(?))"), [name, number, value]


def package_clause(db: sqlite3.Connection, spec: str) -> tuple[str, list[Any]]:
    """`torch>=2.9` as a condition: the versions recorded for the package that satisfy the PEP 440 specifier."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    try:
        requirement = Requirement(spec)
    except InvalidRequirement:
        raise KbError(
            f"--package {quoted(spec)}: expected a name with an optional version range, "
            "e.g. --package 'torch>=2.9' or --package 'torch-neuronx==2.13.*'"
        ) from None
    try:
        requirement.specifier.contains("0", prereleases=True)  # parses each bound's version
    except ValueError:  # past Python's limit on the digits of a number (4,300)
        raise KbError(
            f"--package {quoted(spec)}: a version number in it is too long; give one of at most 4,300 digits"
        ) from None
    name = normalise_package(requirement.name)
    recorded = [row[0] for row in db.execute("SELECT DISTINCT version FROM versions WHERE package = ?", [name])]
    matching = []
    for version in recorded:
        try:
            if requirement.specifier.contains(Version(version), prereleases=True):
                matching.append(version)
        except (InvalidVersion, ValueError):
            continue  # not a PEP 440 version ("unknown", a git hash) or too long to read: it satisfies no range
    if not matching:
        return "0", []
    marks = ", ".join("?" * len(matching))
    return f"e.n IN (SELECT entry FROM versions WHERE package = ? AND version IN ({marks}))", [name, *matching]


def list_entries(
    db: sqlite3.Connection, filters: Filters, *, sort: str = "recorded", ascending: bool = False, limit: int | None = 50
) -> list[dict[str, Any]]:
    """Entries matching the filters, sorted by an entry column, a metric (metric.NAME) or a timing (timings.NAME)."""
    _check_limit(limit)
    where, params = filters.where(db)
    order, join, extra = _order(sort)
    direction = "ASC" if ascending else "DESC"
    columns = ", ".join(f"e.{c}" for c in COLUMNS)
    sql = (
        f"SELECT {columns}{extra} FROM entries e {join} WHERE {where} "
        f"ORDER BY {order} IS NULL, {order} {direction}, e.recorded DESC, e.id DESC"
    )
    if limit:
        sql += f" LIMIT {int(limit)}"
    with reading(db):
        cursor = db.execute(sql, [*_join_params(sort), *params])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor]


def _top_by_words(db: sqlite3.Connection, match: str, limit: int, columns: str) -> tuple[list[tuple], dict] | None:
    """The best `limit` by the words alone, as the ranked query gives them, with their snippets; None when hits
    of equal score straddle the cut further than TIE_ROOM rows (then the date decides who is in, and every
    match is sorted). FTS5 ranks its own rows without looking each one up in `entries` first (5 to 10 times
    faster on a common word), and cuts the snippets of the rows it returns in the same pass (no second look-up
    of each hit in the words)."""
    table = fulltext.TABLE
    top = db.execute(
        f"SELECT rowid, rank, {fulltext.snippet_sql(match)} FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?",
        [match, min(limit + TIE_ROOM, MAX_LIMIT)],
    ).fetchall()
    if len(top) > limit:
        tied = [row for row in top if row[1] <= top[limit - 1][1]]  # the best, and all that tie with the last
        if len(tied) == len(top) == limit + TIE_ROOM:  # the tie may go on past what was fetched
            return None
        top = tied
    rank = {row[0]: row[1] for row in top}
    marks = ", ".join("?" * len(rank))
    rows = db.execute(f"SELECT {columns}, e.rowid FROM entries e WHERE e.rowid IN ({marks})", list(rank)).fetchall()
    ranked = [(*row, -rank[row[-1]]) for row in rows]
    at = {name: COLUMNS.index(name) for name in ("id", "recorded")}
    ranked.sort(key=lambda row: (row[at["recorded"]], row[at["id"]]), reverse=True)  # newest first among equals
    ranked.sort(key=lambda row: -row[-1])  # stable: best first
    ranked = ranked[:limit]
    kept = {row[-2] for row in ranked}
    return ranked, {row[0]: fulltext.snippet_of(*row[2:]) for row in top if row[0] in kept}


def suggest(db: sqlite3.Connection, query: str) -> str | None:
    """For a query that found nothing: the same with each word the index lacks replaced by its nearest word."""
    with reading(db):
        return fulltext.did_you_mean(db, query)


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit > MAX_LIMIT:  # SQLite's integers are 64-bit
        raise KbError(f"--limit {limit}: give at most {MAX_LIMIT}")


def _order(sort: str) -> tuple[str, str, str]:
    if sort in _ENTRY_SORTS:
        return f"e.{sort}", "", ""
    match = _SORT.match(sort)
    if match is None:
        choices = ", ".join(sorted(_ENTRY_SORTS))
        raise KbError(
            f"--sort {quoted(sort)}: sort by one of {choices}, or metric.NAME or timings.NAME "
            "(e.g. --sort metric.tokens_per_s)"
        )
    if match["table"].startswith("metric"):
        return "s.value", "LEFT JOIN metrics s ON s.entry = e.n AND s.name = ?", ", s.value AS sort_value"
    return "s.seconds", "LEFT JOIN timings s ON s.entry = e.n AND s.name = ?", ", s.seconds AS sort_value"


def _join_params(sort: str) -> list[Any]:
    match = _SORT.match(sort)
    return [match["name"]] if match else []


def search(
    db: sqlite3.Connection, query: str, filters: Filters, *, limit: int = 20
) -> list[tuple[Hit, dict[str, Any]]]:
    """Ranked full-text hits, restricted by the structured filters, each with its index row.

    Best first (bm25 with the columns' weights), newest first among equal scores. When no entry has every word of
    a query of words joined by AND, the entries with the most of them (each hit says which: Hit.matched).
    """
    with reading(db):
        _check_limit(limit)
        compiled = fulltext.compile_query(query, db)  # before the filters: a bad query is reported first
        if compiled is None or limit < 1:
            return []
        where, params = filters.where(db)
        try:
            found = _ranked(db, compiled, where, params, filters.empty(), limit)
            words = tuple(word for word, _ in compiled.words)
            if found[0]:
                return _hits(*found, matched=lambda rowid: words, words=len(words))
            if not words:
                return []
            return _partial(db, compiled, where, params, limit)
        except sqlite3.OperationalError as exc:  # FTS5 refused what the compiler made of the query: say so
            if compiled.match is None or not ("fts5" in str(exc) or "unterminated string" in str(exc)):
                raise
            shown = quoted(query, fulltext.QUOTED_CHARS)
            raise KbError(f"the query {shown} cannot be searched ({exc}); put it in double quotes") from None


def _ranked(
    db: sqlite3.Connection, compiled: fulltext.Compiled, where: str, params: list[Any], unfiltered: bool, limit: int
) -> tuple[list[tuple], dict[int, str]]:
    """The best `limit` entries of a compiled query within the filters (rows of COLUMNS, rowid, score), and the
    snippet of each by rowid."""
    columns = ", ".join(f"e.{c}" for c in COLUMNS)
    if compiled.match is None:  # no words (recorded:[...], NOT x): nothing to rank by
        conditions, values = compiled.where()
        sql = (
            f"SELECT {columns}, e.rowid, 0.0 FROM entries e WHERE ({conditions}) AND ({where}) "
            "ORDER BY e.recorded DESC, e.id DESC LIMIT ?"
        )
        params = [*values, *params]
    else:
        conditions = " AND ".join(f"({c})" for c in compiled.conditions) or "1"
        sql = (
            f"SELECT {columns}, e.rowid, -f.rank FROM {fulltext.TABLE} f JOIN entries e ON e.rowid = f.rowid "
            f"WHERE f.{fulltext.TABLE} MATCH ? AND ({conditions}) AND ({where}) "
            "ORDER BY f.rank, e.recorded DESC, e.id DESC LIMIT ?"
        )
        params = [compiled.match, *compiled.params, *params]
    top = None
    if compiled.match is not None and not compiled.conditions and unfiltered:
        top = _top_by_words(db, compiled.match, limit, columns)
    ranked, snippets = top or (db.execute(sql, [*params, limit]).fetchall(), None)
    if ranked and snippets is None:
        snippets = fulltext.snippets(db, compiled.match, [row[-2] for row in ranked])
    return ranked, snippets or {}


def _partial(
    db: sqlite3.Connection, compiled: fulltext.Compiled, where: str, params: list[Any], limit: int
) -> list[tuple[Hit, dict[str, Any]]]:
    """When no entry has every word: those with the most of them, best first by bm25 over the words joined by OR
    (which weighs rarer words more), each hit naming the words it has."""
    any_word = " OR ".join(f"({match})" for _, match in compiled.words)
    rest = compiled.rest or fulltext.Compiled()
    widened = fulltext.Compiled(
        match=any_word if rest.match is None else f"({rest.match}) AND ({any_word})",
        conditions=rest.conditions,
        params=rest.params,
    )
    candidates, _ = _ranked(db, widened, where, params, False, PARTIAL_CANDIDATES)
    if not candidates:
        return []
    rowids = [row[-2] for row in candidates]
    has: dict[int, list[str]] = {rowid: [] for rowid in rowids}
    for word, match in compiled.words:
        for (rowid,) in db.execute(
            f"SELECT rowid FROM {fulltext.TABLE} WHERE {fulltext.TABLE} MATCH ? "
            "AND rowid IN (SELECT value FROM json_each(?))",
            [match, json.dumps(rowids)],
        ):
            has[rowid].append(word)
    most = max(len(words) for words in has.values())
    kept = [row for row in candidates if len(has[row[-2]]) == most][:limit]  # in bm25 order already
    snippets = fulltext.snippets(db, widened.match, [row[-2] for row in kept])
    return _hits(kept, snippets, matched=lambda rowid: tuple(has[rowid]), words=len(compiled.words))


def _hits(
    ranked: list[tuple], snippets: dict[int, str], *, matched: Callable[[int], tuple[str, ...]], words: int
) -> list[tuple[Hit, dict[str, Any]]]:
    return [
        (
            Hit(row[0], float(row[-1]), row[1], snippets.get(row[-2], ""), matched(row[-2]), words),
            dict(zip(COLUMNS, row[:-2], strict=True)),
        )
        for row in ranked
    ]


def _day(text: str, option: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise KbError(f"{option} {quoted(text)}: expected a date like 2026-11-30") from None


@cache  # a knowledge base holds few distinct versions, sorted over and over
def version_key(text: str) -> tuple:
    """PEP 440 order, with versions that are not PEP 440 after all the others, by text."""
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)
