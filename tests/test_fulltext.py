"""Full-text search: the FTS5 table in a real SQLite index on disk, fed real entry files, queried in Whoosh's
query language."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.errors import KbError
from kb.index import fulltext
from kb.index.db import connect, index_path
from kb.index.fulltext import Hit, compile_query, document
from kb.index.query import TIE_ROOM, Filters, search
from kb.index.sync import sync
from kb.model.entry import Entry, new_entry
from kb.store.knowledge_base import KnowledgeBase

FLEX = "2026-11-30-flex-neuron-000001"


def make(entry_id: str, title: str, body: str = "", **fields: Any) -> Entry:
    fields.setdefault("status", "completed")
    entry = new_entry(entry_id, title, "run", **fields)
    entry.body = body
    return entry


def flex() -> Entry:
    return make(
        FLEX,
        "FlexAttention on Trainium3",
        "Tried the flex attention kernel with a causal mask.\n\n## Output\n\n```text\nneuronx-cc: still working\n```\n",
        status="failed",
        backend="neuron",
        mode="compiled",
        recorded="2026-11-30T03:00:00Z",
        workload={"name": "llama-3-8b", "model": "Llama-3-8B"},
        failure={
            "class": "compile_timeout",
            "message": "neuronx-cc did not finish",
            "explanation": "the compiler exceeded the 30 min limit on the flex attention mask",
        },
        versions={"torch": "2.9.0", "torch-neuronx": "2.13.3.0"},
        settings={"batch": 8, "dtype": "bf16"},
        tags=["trn3", "Flex"],
        metrics={"tokens_per_s": {"value": None}},
        provenance={"source": "measured"},
    )


def corpus() -> list[Entry]:
    return [
        flex(),
        make(
            "2026-11-29-sdpa-cuda-000002",
            "SDPA on H100",
            "Attention was fine; the flex path was not tried. The graph compiled once.",
            backend="cuda",
            recorded="2026-11-29T03:00:00Z",
            failure={"class": "compile_timeout", "message": "inductor took too long"},
            versions={"torch": "2.9.1"},
            tags=["h100"],
        ),
        make(
            "2026-11-28-oom-rocm-000003",
            "Out of memory on MI300X",
            "Compiling the model worked; the allocator ran out of memory at step 40.",
            status="failed",
            backend="rocm",
            recorded="2026-11-28T03:00:00Z",
            failure={"class": "oom", "message": "HIP out of memory", "explanation": "activation checkpointing was off"},
            tags=["mi300x"],
        ),
    ]


def build(root: Path, entries: list[Entry]) -> tuple[KnowledgeBase, sqlite3.Connection]:
    """A knowledge base holding these entries as files, indexed, and its index."""
    kb, _ = KnowledgeBase.init(root)
    write(kb, entries)
    return kb, connect(index_path(kb.cache_path))


def write(kb: KnowledgeBase, entries: list[Entry]) -> None:
    for entry in entries:
        (kb.entries_path / f"{entry.id}.md").write_text(entry.serialise())
    sync(kb)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    _, db = build(tmp_path_factory.mktemp("fulltext") / "kb", corpus())
    yield db
    db.close()


@pytest.fixture
def own(tmp_path: Path) -> Iterator[tuple[KnowledgeBase, sqlite3.Connection]]:
    """A knowledge base of the corpus for a test that changes it."""
    kb, db = build(tmp_path / "kb", corpus())
    yield kb, db
    db.close()


def find(db: sqlite3.Connection, query: str, limit: int = 20, **filters: Any) -> list[Hit]:
    return [hit for hit, _ in search(db, query, Filters(**filters), limit=limit)]


def ids(hits: list[Hit]) -> list[str]:
    return [hit.id for hit in hits]


def test_document_fields() -> None:
    doc = document(flex())
    exact = fulltext.exact
    assert (
        doc["versions"]
        == f"{exact('torch=2.9.0')} {exact('torch-neuronx=2.13.3.0')} torch=2.9.0 torch-neuronx=2.13.3.0"
    )
    assert doc["settings"].endswith(" batch=8 dtype=bf16")
    assert doc["tags"] == f"trn3 {exact('flex')} trn3 Flex"
    assert doc["metrics"].endswith(" tokens_per_s")
    assert doc["workload"] == "llama-3-8b\nLlama-3-8B"
    assert doc["failure"].startswith("compile_timeout\nneuronx-cc did not finish\nthe compiler exceeded")
    assert doc["notes"] == "Tried the flex attention kernel with a causal mask."
    assert doc["output"] == "```text\nneuronx-cc: still working\n```"
    assert "\x02" not in "".join(doc.values()) and "\x03" not in "".join(doc.values())


def test_exact_values_are_one_token() -> None:
    assert fulltext.exact("torch=2.9.0").isalnum() is False  # private-use letters, not punctuation
    assert all(char.isalnum() or 0xE000 <= ord(char) < 0xF000 for char in fulltext.exact("Torch = 2.9.0"))
    assert fulltext.exact("A b") == fulltext.exact("a_b") != fulltext.exact("a-b")


def test_output_section_ends_at_the_next_heading_and_ignores_headings_in_code() -> None:
    entry = make("2026-11-30-x-000009", "x", "intro\n## Output\n```\n## not a heading\n```\n## Next steps\nretry")
    doc = document(entry)
    assert doc["output"] == "```\n## not a heading\n```"
    assert doc["notes"] == "intro\n## Next steps\nretry"


def test_word_only_in_failure_explanation(shared: sqlite3.Connection) -> None:
    assert ids(find(shared, "exceeded")) == [FLEX]
    assert ids(find(shared, "checkpointing")) == ["2026-11-28-oom-rocm-000003"]


def test_stemming(shared: sqlite3.Connection) -> None:
    # "compiling" and "compiled" are in the notes of two entries, "compiler" and compile_timeout in two failures.
    assert set(ids(find(shared, "compiling"))) == {FLEX, "2026-11-29-sdpa-cuda-000002", "2026-11-28-oom-rocm-000003"}
    assert "2026-11-29-sdpa-cuda-000002" in ids(find(shared, "compile"))


def test_phrase(shared: sqlite3.Connection) -> None:
    # The sdpa entry has both words, but not side by side.
    assert ids(find(shared, '"flex attention"')) == [FLEX]
    assert set(ids(find(shared, "flex attention"))) == {FLEX, "2026-11-29-sdpa-cuda-000002"}
    assert ids(find(shared, '"attention flex"~3')) == [FLEX]  # words near each other, in any order


def test_or_and_not(shared: sqlite3.Connection) -> None:
    assert set(ids(find(shared, "checkpointing OR exceeded"))) == {FLEX, "2026-11-28-oom-rocm-000003"}
    assert ids(find(shared, "attention NOT flex")) == []
    assert ids(find(shared, "attention NOT backend:neuron")) == ["2026-11-29-sdpa-cuda-000002"]
    assert ids(find(shared, "(checkpointing OR exceeded) AND backend:rocm")) == ["2026-11-28-oom-rocm-000003"]
    assert ids(find(shared, "attention ANDNOT flex")) == []
    assert set(ids(find(shared, "NOT backend:neuron"))) == {"2026-11-29-sdpa-cuda-000002", "2026-11-28-oom-rocm-000003"}
    assert ids(find(shared, "exceeded OR recorded:2026-11-28")) == [FLEX, "2026-11-28-oom-rocm-000003"]


def test_fielded_query(shared: sqlite3.Connection) -> None:
    assert ids(find(shared, 'backend:neuron failure:compile_timeout "flex attention"')) == [FLEX]
    assert ids(find(shared, "backend:cuda failure:compile_timeout")) == ["2026-11-29-sdpa-cuda-000002"]
    assert ids(find(shared, "status:failed backend:ROCM")) == ["2026-11-28-oom-rocm-000003"]
    assert ids(find(shared, "workload:llama-3-8b mode:compiled kind:run")) == [FLEX]
    assert ids(find(shared, "source:measured metric:tokens_per_s")) == [FLEX]
    assert ids(find(shared, "title:trainium3")) == [FLEX]
    assert find(shared, "title:exceeded") == []  # in the failure, not the title
    assert ids(find(shared, f"id:{FLEX}")) == [FLEX]


def test_field_aliases(shared: sqlite3.Connection) -> None:
    assert ids(find(shared, "tag:trn3")) == ids(find(shared, "tags:TRN3")) == [FLEX]
    assert ids(find(shared, "setting:dtype=bf16")) == [FLEX]
    assert ids(find(shared, "note:causal")) == ids(find(shared, "body:causal")) == [FLEX]


def test_versions_match_exactly(shared: sqlite3.Connection) -> None:
    assert ids(find(shared, "versions:torch=2.9.0")) == [FLEX]
    assert ids(find(shared, "version:torch=2.9.1")) == ["2026-11-29-sdpa-cuda-000002"]
    assert find(shared, "versions:torch=2.9") == []
    assert ids(find(shared, "versions:torch-neuronx=2.13.3.0")) == [FLEX]
    assert set(ids(find(shared, "versions:torch=2.9*"))) == {FLEX, "2026-11-29-sdpa-cuda-000002"}
    assert ids(find(shared, "torch=2.9.0")) == [FLEX]  # with no field: the version word too


def test_setting_values_and_package_names_are_words(shared: sqlite3.Connection) -> None:
    assert ids(find(shared, "bf16")) == [FLEX]
    assert ids(find(shared, "neuronx")) == [FLEX]


def test_title_match_ranks_above_output_only_match(tmp_path: Path) -> None:
    in_output = make("2026-11-30-b-000002", "Another run", "notes\n\n## Output\n\nwarmup warmup warmup warmup\n")
    in_title = make("2026-11-01-a-000001", "Warmup sweep", "nothing else here")
    _, db = build(tmp_path / "kb", [in_output, in_title])
    hits = find(db, "warmup")
    assert ids(hits) == ["2026-11-01-a-000001", "2026-11-30-b-000002"]
    assert hits[0].score > hits[1].score


def test_snippet_marks_matched_terms(shared: sqlite3.Connection) -> None:
    (hit,) = find(shared, "exceeded")
    assert hit.title == "FlexAttention on Trainium3"
    assert "**exceeded**" in hit.snippet
    (hit,) = find(shared, "causal")  # only in the notes: the snippet comes from there
    assert "**causal** mask" in hit.snippet
    (hit,) = find(shared, "compiling backend:rocm")  # stemmed: the text as written is marked
    assert "**Compiling**" in hit.snippet


def test_snippet_is_short(tmp_path: Path) -> None:
    long = " ".join(f"word{i}" for i in range(400))
    _, db = build(tmp_path / "kb", [make("2026-11-30-long-000001", "Long", f"{long} needle {long} needle {long}")])
    (hit,) = find(db, "needle")
    assert "**needle**" in hit.snippet
    assert len(hit.snippet) <= fulltext.SNIPPET_CHARS + 10


def test_keyword_only_match_shows_the_start_of_the_failure(shared: sqlite3.Connection) -> None:
    (hit,) = find(shared, "backend:rocm")
    assert hit.snippet.startswith("oom out of memory HIP out of memory")
    (hit,) = find(shared, "recorded:2026-11-28")  # no words at all
    assert hit.snippet.startswith("oom out of memory HIP out of memory")


def test_failure_class_as_words(shared: sqlite3.Connection) -> None:
    assert ids(find(shared, '"out of memory"')) == ["2026-11-28-oom-rocm-000003"]
    assert set(ids(find(shared, "compile timeout"))) == {FLEX, "2026-11-29-sdpa-cuda-000002"}


def test_update_replaces_the_entry(own: tuple[KnowledgeBase, sqlite3.Connection]) -> None:
    kb, db = own
    edited = flex()
    edited.data["failure"]["explanation"] = "the compiler overran its budget"
    write(kb, [edited])
    assert ids(find(db, "overran")) == [FLEX]
    assert find(db, "exceeded") == []
    assert fulltext.count(db) == 3


def test_delete(own: tuple[KnowledgeBase, sqlite3.Connection]) -> None:
    kb, db = own
    (kb.entries_path / f"{FLEX}.md").unlink()
    sync(kb)
    assert find(db, "exceeded") == []
    assert fulltext.count(db) == 2
    assert fulltext.indexed_ids(db) == {"2026-11-29-sdpa-cuda-000002", "2026-11-28-oom-rocm-000003"}


def test_filters_restrict_hits(shared: sqlite3.Connection) -> None:
    assert set(ids(find(shared, "compiling"))) == {e.id for e in corpus()}
    assert ids(find(shared, "compiling", backend="neuron")) == [FLEX]
    assert ids(find(shared, "compiling", status="failed", since="2026-11-29")) == [FLEX]
    assert find(shared, "compiling", backend="xla") == []


@pytest.mark.parametrize("older", [0, TIE_ROOM], ids=["tie-in-hand", "tie-past-what-is-fetched"])
def test_ties_are_broken_by_date_newest_first(tmp_path: Path, older: int) -> None:
    days = ["2026-03-01", "2026-11-01", "2026-01-01", "2026-07-01", "2026-05-01"]
    days += [f"2025-01-{day:02}" for day in range(1, older + 1)]  # more equal hits than are fetched past the cut
    _, db = build(
        tmp_path / "kb",
        [make(f"{day}-same-{i:06}", "Same run", recorded=f"{day}T00:00:00Z") for i, day in enumerate(days)],
    )
    hits = find(db, "same", limit=2)  # the cut falls among equal scores
    assert ids(hits) == ["2026-11-01-same-000001", "2026-07-01-same-000003"]
    oldest = "2025-01-01-same-000005" if older else "2026-01-01-same-000002"
    assert ids(find(db, "same", limit=len(days)))[-1] == oldest


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("title:(unclosed", "unclosed '('"),
        ('"unbalanced phrase', "unclosed double quote"),
        ("memory)", "unmatched ')'"),
        ("recorded:[2026-01 TO", "unclosed '['"),
        ("https://example.com/log", "unknown field 'https'"),
        ("backnd:neuron", "unknown field 'backnd'"),
    ],
)
def test_malformed_query_is_a_kb_error(shared: sqlite3.Connection, query: str, problem: str) -> None:
    with pytest.raises(KbError) as raised:
        find(shared, query)
    assert problem in str(raised.value)
    assert "double quotes" in str(raised.value) or "close the phrase" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_an_unknown_field_offers_the_nearest(shared: sqlite3.Connection) -> None:
    with pytest.raises(KbError, match=r"unknown field 'backnd' in the query 'backnd:neuron': did you mean backend\?"):
        find(shared, "backnd:neuron")
    with pytest.raises(KbError) as raised:
        find(shared, "https://example.com/log")
    assert "did you mean" not in str(raised.value)


def test_other_bad_queries_are_kb_errors(shared: sqlite3.Connection) -> None:
    with pytest.raises(KbError, match="operator"):
        find(shared, "NOT AND x")
    with pytest.raises(KbError, match="range works on recorded or id"):
        find(shared, "title:[a TO b]")
    with pytest.raises(KbError, match="at most 1000"):
        find(shared, "x" * 1001)


def test_quoting_makes_special_text_searchable(shared: sqlite3.Connection) -> None:
    assert ids(find(shared, '"neuronx-cc: still working"')) == [FLEX]
    assert find(shared, '"title:(unclosed"') == []


def test_ranges_and_wildcards(shared: sqlite3.Connection) -> None:
    assert ids(find(shared, "recorded:[2026-11-29 TO]")) == [FLEX, "2026-11-29-sdpa-cuda-000002"]
    assert ids(find(shared, "recorded:[2026-11-01 TO 2026-11-28]")) == ["2026-11-28-oom-rocm-000003"]
    assert ids(find(shared, "recorded:[2026-11-28 TO 2026-11-30}")) == [
        "2026-11-29-sdpa-cuda-000002",
        "2026-11-28-oom-rocm-000003",
    ]
    assert set(ids(find(shared, "checkpoint*"))) == {"2026-11-28-oom-rocm-000003"}
    assert ids(find(shared, "trainium?")) == [FLEX]
    assert ids(find(shared, "t*ium3")) == [FLEX]
    assert find(shared, "zz?") == []


def test_empty_and_stop_word_queries_find_nothing(shared: sqlite3.Connection) -> None:
    assert find(shared, "") == []
    assert find(shared, "the") == []
    assert ids(find(shared, "the exceeded")) == [FLEX]  # stop words are dropped, not required


def test_a_new_index_is_empty(tmp_path: Path) -> None:
    _, db = build(tmp_path / "kb", [])
    assert find(db, "anything") == []
    assert fulltext.count(db) == 0
    assert fulltext.indexed_ids(db) == set()
    with pytest.raises(KbError):  # the query is still checked
        find(db, '"open')


@pytest.mark.parametrize(
    ("query", "match", "conditions"),
    [
        ("flex attention", '(("flex") AND ("attention")) OR "flexattention"', []),
        ('"flex attention"', '"flex attention"', []),
        ("oom OR timeout", '("oom") OR ("timeout")', []),
        ("llama NOT oom", '("llama") NOT ("oom")', []),
        ("tag:TRN3", f'tags : "{fulltext.exact("trn3")}"', []),
        ("flex*", '"flex" *', []),
        ("torch=2.9.0", f'"torch=2.9.0" OR "{fulltext.exact("torch=2.9.0")}"', []),
        ("failure:compile_timeout", 'failure : "compile_timeout"', []),
        ("recorded:[2026-11 TO]", None, ["e.recorded >= ?"]),
        ("x^2 say", '("x") AND ("say")', []),  # a boost changes nothing
    ],
)
def test_query_translation(query: str, match: str | None, conditions: list[str]) -> None:
    compiled = compile_query(query)
    assert compiled is not None
    assert compiled.match == match
    assert compiled.conditions == conditions


def test_importing_the_module_does_not_import_whoosh() -> None:
    code = "import sys, kb.index.fulltext; print(sorted(m for m in sys.modules if m.split('.')[0] == 'whoosh'))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


QUERY_TEXT = st.text(alphabet="abc flex:()[]{}\"*?^~-+ORNTAD'/=.,_\\", max_size=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=QUERY_TEXT)
def test_any_query_gives_hits_or_a_kb_error(shared: sqlite3.Connection, query: str) -> None:
    try:
        hits = find(shared, query)
    except KbError as error:
        assert "\n" not in str(error)
    else:
        assert all(isinstance(hit, Hit) for hit in hits)


def generated(i: int) -> Entry:
    backend = ("cuda", "rocm", "neuron", "xla")[i % 4]
    failure = {"class": "oom", "message": f"out of memory at step {i}"} if i % 5 == 0 else None
    return make(
        f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}-gen-{i:06d}",
        f"Generated run {i} on {backend}",
        f"Run number {i}: token{i % 97} and shared words about attention kernels.\n\n## Output\n\nstep {i} done\n",
        backend=backend,
        recorded=f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T00:00:00Z",
        versions={"torch": f"2.{i % 10}.0"},
        failure=failure,
    )


def test_bulk_build_and_fast_search(tmp_path: Path) -> None:
    count = 2000  # at BULK_ENTRIES: the table is optimised after the build
    entries = [generated(i) for i in range(count)]
    kb, _ = KnowledgeBase.init(tmp_path / "kb")
    started = time.perf_counter()
    write(kb, entries)
    built = time.perf_counter() - started
    db = connect(index_path(kb.cache_path))
    assert fulltext.count(db) == count
    assert fulltext.indexed_ids(db) == {entry.id for entry in entries}

    timings = {}
    for query in ["token42", "backend:neuron oom", '"out of memory"', "attention", "versions:torch=2.3.0"]:
        find(db, query)  # warm
        started = time.perf_counter()
        hits = find(db, query)
        timings[query] = (time.perf_counter() - started) * 1000, len(hits)
        assert hits
    for query in timings:  # ranked by the words alone, or with a filter that keeps every entry: the same hits
        for limit in (1, 7, 20):
            assert ids(find(db, query, limit)) == ids(find(db, query, limit, since="2000-01-01")), (query, limit)
    restricted = find(db, "attention", backend="rocm")
    assert restricted and all("rocm" in hit.title for hit in restricted)

    started = time.perf_counter()
    edited = generated(7)
    edited.body += " zzedited"
    write(kb, [edited])
    single = time.perf_counter() - started
    assert ids(find(db, "zzedited")) == [edited.id]
    print(f"\nbulk build (files to index): {count} entries in {built:.2f} s ({count / built:.0f}/s)")
    print(f"single-entry sync: {single * 1000:.1f} ms")
    for query, (ms, found) in timings.items():
        print(f"search {query!r}: {ms:.1f} ms, {found} hits")


@pytest.mark.parametrize(
    ("query", "meant"),
    [
        ("complie", "compile"),
        ("exceded", "exceeded"),
        ("backend:neuron atention", "backend:neuron attention"),
        ("checkpointing OR exceded", "checkpointing OR exceeded"),
        ("zzzzqqq", None),  # nothing near it
        ("exceeded", None),  # found: nothing to correct
    ],
)
def test_did_you_mean_offers_the_index_s_own_words(shared: sqlite3.Connection, query: str, meant: str | None) -> None:
    assert fulltext.did_you_mean(shared, query) == meant


def test_kb_search_says_did_you_mean(kb: KnowledgeBase) -> None:
    from conftest import run_kb

    write(kb, corpus())
    result = run_kb("search", "complie timout")
    assert (result.returncode, result.stdout) == (0, "No entries match. Did you mean 'compile timeout'?\n")


def test_the_stop_words_are_whoosh_s() -> None:
    from whoosh.analysis import STOP_WORDS

    assert frozenset(STOP_WORDS) == fulltext.STOP_WORDS


PLAIN_QUERIES = st.lists(
    st.sampled_from(["flex", "the", "torch=2.9.0", "flex-attention", "a.b", "é", "OOM", "or", "x_y", "2.9", "-", "+a"])
    | st.text(alphabet="abz019=-._+,/!@#$%&é", min_size=1, max_size=6),
    max_size=5,
).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(query=PLAIN_QUERIES)
def test_plain_words_compile_as_whoosh_would_parse_them(query: str) -> None:
    """Plain words skip Whoosh's parser (a third of a command's start-up): the same FTS5 query either way, plus
    adjacent words written together (tests/test_search_joined.py)."""
    words = fulltext._plain_words(query)
    assert words is not None
    whoosh = fulltext._compile(fulltext.parse(query), None)
    if not isinstance(whoosh, fulltext.Compiled):
        assert compile_query(query) is None
        return
    each = [fulltext._compile(fulltext.parse(word), None) for word in words]
    matches = [part.match if isinstance(part, fulltext.Compiled) else None for part in each]
    assert whoosh == fulltext.Compiled(match=fulltext._all([match for match in matches if match]))
    compiled = compile_query(query)
    assert compiled is not None and compiled.match == fulltext._or_joined(words, matches, None)


@pytest.mark.parametrize(
    ("query", "parser"),
    [("compile timeout torch=2.9.0", False), ('backend:neuron "flex attention" tag:cold', True), ("flex*", True)],
)
def test_plain_words_take_the_fast_path_and_syntax_whoosh_s_parser(query: str, parser: bool) -> None:
    code = (
        f"import sys; from kb.index.fulltext import compile_query; compile_query({query!r}); "
        "print('whoosh.qparser' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == str(parser)
