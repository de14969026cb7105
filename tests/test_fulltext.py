"""The full-text index: a real Whoosh index on disk, fed real entries."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb import fulltext
from kb.entry import Entry, new_entry
from kb.errors import KbError
from kb.fulltext import FullText, Hit, document

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


@pytest.fixture
def index(tmp_path: Path) -> FullText:
    text = FullText(tmp_path / "whoosh")
    text.update(corpus(), [])
    yield text
    text.close()


def ids(hits: list[Hit]) -> list[str]:
    return [hit.id for hit in hits]


def test_document_fields() -> None:
    doc = document(flex())
    assert doc["versions"] == "torch=2.9.0 torch-neuronx=2.13.3.0"
    assert doc["settings"] == "batch=8 dtype=bf16"
    assert doc["tags"] == "trn3,flex"
    assert doc["metrics"] == "tokens_per_s"
    assert doc["workload"] == "llama-3-8b\nLlama-3-8B"
    assert doc["failure"].startswith("compile_timeout\nneuronx-cc did not finish\nthe compiler exceeded")
    assert doc["notes"] == "Tried the flex attention kernel with a causal mask."
    assert doc["output"] == "```text\nneuronx-cc: still working\n```"
    assert doc["recorded"] == "2026-11-30T03:00:00Z"


def test_output_section_ends_at_the_next_heading_and_ignores_headings_in_code() -> None:
    entry = make("2026-11-30-x-000009", "x", "intro\n## Output\n```\n## not a heading\n```\n## Next steps\nretry")
    doc = document(entry)
    assert doc["output"] == "```\n## not a heading\n```"
    assert doc["notes"] == "intro\n## Next steps\nretry"


def test_word_only_in_failure_explanation(index: FullText) -> None:
    assert ids(index.search("exceeded")) == [FLEX]
    assert ids(index.search("checkpointing")) == ["2026-11-28-oom-rocm-000003"]


def test_stemming(index: FullText) -> None:
    # "compiling" and "compiled" are in the notes of two entries, "compiler" and compile_timeout in two failures.
    assert set(ids(index.search("compiling"))) == {FLEX, "2026-11-29-sdpa-cuda-000002", "2026-11-28-oom-rocm-000003"}
    assert "2026-11-29-sdpa-cuda-000002" in ids(index.search("compile"))


def test_phrase(index: FullText) -> None:
    # The sdpa entry has both words, but not side by side.
    assert ids(index.search('"flex attention"')) == [FLEX]
    assert set(ids(index.search("flex attention"))) == {FLEX, "2026-11-29-sdpa-cuda-000002"}


def test_or_and_not(index: FullText) -> None:
    assert set(ids(index.search("checkpointing OR exceeded"))) == {FLEX, "2026-11-28-oom-rocm-000003"}
    assert ids(index.search("attention NOT flex")) == []
    assert ids(index.search("attention NOT backend:neuron")) == ["2026-11-29-sdpa-cuda-000002"]


def test_fielded_query(index: FullText) -> None:
    assert ids(index.search('backend:neuron failure:compile_timeout "flex attention"')) == [FLEX]
    assert ids(index.search("backend:cuda failure:compile_timeout")) == ["2026-11-29-sdpa-cuda-000002"]
    assert ids(index.search("status:failed backend:ROCM")) == ["2026-11-28-oom-rocm-000003"]
    assert ids(index.search("workload:llama-3-8b mode:compiled kind:run")) == [FLEX]
    assert ids(index.search("source:measured metric:tokens_per_s")) == [FLEX]


def test_field_aliases(index: FullText) -> None:
    assert ids(index.search("tag:trn3")) == ids(index.search("tags:TRN3")) == [FLEX]
    assert ids(index.search("setting:dtype=bf16")) == [FLEX]


def test_versions_match_exactly(index: FullText) -> None:
    assert ids(index.search("versions:torch=2.9.0")) == [FLEX]
    assert ids(index.search("version:torch=2.9.1")) == ["2026-11-29-sdpa-cuda-000002"]
    assert ids(index.search("versions:torch=2.9")) == []
    assert ids(index.search("versions:torch-neuronx=2.13.3.0")) == [FLEX]


def test_title_match_ranks_above_output_only_match(tmp_path: Path) -> None:
    text = FullText(tmp_path / "whoosh")
    in_output = make("2026-11-30-b-000002", "Another run", "notes\n\n## Output\n\nwarmup warmup warmup warmup\n")
    in_title = make("2026-11-01-a-000001", "Warmup sweep", "nothing else here")
    text.update([in_output, in_title], [])
    hits = text.search("warmup")
    assert ids(hits) == ["2026-11-01-a-000001", "2026-11-30-b-000002"]
    assert hits[0].score > hits[1].score


def test_snippet_marks_matched_terms(index: FullText) -> None:
    (hit,) = index.search("exceeded")
    assert hit.title == "FlexAttention on Trainium3"
    assert "**exceeded**" in hit.snippet
    (hit,) = index.search("causal")  # only in the notes: the snippet comes from there
    assert "**causal** mask" in hit.snippet
    (hit,) = index.search("compiling backend:rocm")  # stemmed: the text as written is marked
    assert "**Compiling**" in hit.snippet


def test_snippet_is_short(tmp_path: Path) -> None:
    text = FullText(tmp_path / "whoosh")
    long = " ".join(f"word{i}" for i in range(400))
    text.update([make("2026-11-30-long-000001", "Long", f"{long} needle {long} needle {long}")], [])
    (hit,) = text.search("needle")
    assert "**needle**" in hit.snippet
    assert len(hit.snippet) <= fulltext.SNIPPET_CHARS + 10


def test_keyword_only_match_shows_the_start_of_the_failure(index: FullText) -> None:
    (hit,) = index.search("backend:rocm")
    assert hit.snippet.startswith("oom HIP out of memory")


def test_update_replaces_the_entry(index: FullText) -> None:
    edited = flex()
    edited.data["failure"]["explanation"] = "the compiler overran its budget"
    index.update([edited], [])
    assert ids(index.search("overran")) == [FLEX]
    assert index.search("exceeded") == []
    assert index.count() == 3


def test_duplicate_ids_in_one_batch_keep_the_last(tmp_path: Path) -> None:
    text = FullText(tmp_path / "whoosh")
    text.update([make("2026-11-30-x-000001", "first"), make("2026-11-30-x-000001", "second")], [])
    assert text.count() == 1
    assert ids(text.search("second")) == ["2026-11-30-x-000001"]
    assert text.search("first") == []


def test_delete(index: FullText) -> None:
    index.update([], [FLEX, "2026-01-01-never-indexed-000000"])
    assert index.search("exceeded") == []
    assert index.count() == 2
    assert index.ids() == {"2026-11-29-sdpa-cuda-000002", "2026-11-28-oom-rocm-000003"}


def test_only_ids_restricts_hits(index: FullText) -> None:
    assert set(ids(index.search("compiling"))) == {e.id for e in corpus()}
    assert ids(index.search("compiling", only_ids={FLEX, "2026-01-01-unknown-000000"})) == [FLEX]
    assert ids(index.search("compiling", only_ids=["2026-11-28-oom-rocm-000003"])) == ["2026-11-28-oom-rocm-000003"]
    assert index.search("compiling", only_ids=set()) == []


def test_ties_are_broken_by_date_newest_first(tmp_path: Path) -> None:
    text = FullText(tmp_path / "whoosh")
    days = ["2026-03-01", "2026-11-01", "2026-01-01", "2026-07-01", "2026-05-01"]
    text.update(
        [make(f"{day}-same-00000{i}", "Same run", recorded=f"{day}T00:00:00Z") for i, day in enumerate(days)], []
    )
    hits = text.search("same", limit=2)  # the cut falls among equal scores
    assert ids(hits) == ["2026-11-01-same-000001", "2026-07-01-same-000003"]
    assert ids(text.search("same"))[-1] == "2026-01-01-same-000002"


def test_the_newest_of_equal_scores_is_found_past_blocks_whoosh_would_skip(tmp_path: Path) -> None:
    # Whoosh stores postings in blocks of 128 and skips a block that cannot beat the lowest kept score: the newest
    # of 400 equal runs, indexed last, sits in the last block.
    text = FullText(tmp_path / "whoosh")
    runs = [make(f"2026-01-01-same-{i:06d}", "Same run", recorded="2026-01-01T00:00:00Z") for i in range(399)]
    text.update([*runs, make("2026-11-30-same-000399", "Same run", recorded="2026-11-30T00:00:00Z")], [])
    assert ids(text.search("same", limit=1)) == ["2026-11-30-same-000399"]
    assert ids(text.search("same", limit=3))[0] == "2026-11-30-same-000399"


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
def test_malformed_query_is_a_kb_error(index: FullText, query: str, problem: str) -> None:
    with pytest.raises(KbError) as raised:
        index.search(query)
    assert problem in str(raised.value)
    assert "double quotes" in str(raised.value) or "close the phrase" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_quoting_makes_special_text_searchable(index: FullText) -> None:
    assert ids(index.search('"neuronx-cc: still working"')) == [FLEX]
    assert index.search('"title:(unclosed"') == []


def test_ranges_and_wildcards(index: FullText) -> None:
    assert ids(index.search("recorded:[2026-11-29 TO]")) == [FLEX, "2026-11-29-sdpa-cuda-000002"]
    assert set(ids(index.search("checkpoint*"))) == {"2026-11-28-oom-rocm-000003"}
    assert ids(index.search("trainium?")) == [FLEX]


def test_empty_and_stop_word_queries_find_nothing(index: FullText) -> None:
    assert index.search("") == []
    assert index.search("the") == []
    assert ids(index.search("the exceeded")) == [FLEX]  # stop words are dropped, not required


def test_a_missing_index_is_empty(tmp_path: Path) -> None:
    text = FullText(tmp_path / "nothing-here")
    assert not text.exists()
    assert text.search("anything") == []
    assert text.count() == 0
    assert text.ids() == set()
    with pytest.raises(KbError):  # the query is still checked
        text.search('"open')


def test_update_creates_the_index_even_with_nothing_to_index(tmp_path: Path) -> None:
    text = FullText(tmp_path / "whoosh")
    text.update([], [])
    assert text.exists()
    assert text.count() == 0


def test_clear(index: FullText) -> None:
    assert index.search("exceeded")  # a searcher is kept open across the clear
    index.clear()
    assert index.exists()
    assert index.count() == 0
    assert index.search("exceeded") == []
    index.update([flex()], [])
    assert ids(index.search("exceeded")) == [FLEX]


def test_another_schema_version_needs_a_rebuild(index: FullText, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fulltext, "SCHEMA_VERSION", fulltext.SCHEMA_VERSION + 1)
    fresh = FullText(index.folder)
    assert not fresh.exists()
    with pytest.raises(KbError, match="kb index --rebuild"):
        fresh.search("exceeded")
    fresh.update([flex()], [])  # starts over: the caller saw exists() False and sends every entry
    assert fresh.exists()
    assert fresh.count() == 1


def test_searcher_survives_the_folder_being_removed_and_rebuilt(index: FullText) -> None:
    assert index.search("exceeded")
    shutil.rmtree(index.folder)  # `kb index --rebuild` in another process
    assert index.search("exceeded") == []
    FullText(index.folder).update([flex()], [])
    assert ids(index.search("exceeded")) == [FLEX]


def test_searcher_sees_changes_from_another_instance(index: FullText) -> None:
    assert index.search("overran") == []
    edited = flex()
    edited.data["failure"]["explanation"] = "overran"
    FullText(index.folder).update([edited], [])
    assert ids(index.search("overran")) == [FLEX]


def test_locked_index_times_out_with_a_kb_error(index: FullText) -> None:
    from whoosh import index as whoosh_index

    held = whoosh_index.open_dir(index.folder, "MAIN").writer()  # another process indexing
    try:
        started = time.perf_counter()
        with pytest.raises(KbError, match="locked: another kb process is indexing; retry") as raised:
            index.update([flex()], [], timeout_s=0.5)
        waited = time.perf_counter() - started
        assert 0.4 < waited < 3
        assert str(index.folder) in str(raised.value)
        assert ids(index.search("exceeded")) == [FLEX]  # readers work while a writer writes
    finally:
        held.cancel()
    index.update([flex()], [], timeout_s=0.5)


def test_importing_the_module_does_not_import_whoosh() -> None:
    code = "import sys, kb.fulltext; print(sorted(m for m in sys.modules if m.split('.')[0] == 'whoosh'))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


QUERY_TEXT = st.text(alphabet="abc flex:()[]{}\"*?^~-+ORNTAD'/=.,_\\", max_size=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=QUERY_TEXT)
def test_any_query_gives_hits_or_a_kb_error(index: FullText, query: str) -> None:
    try:
        hits = index.search(query)
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
    count = 2000  # at BULK_DOCS: the writer's sub-processes do the work
    entries = [generated(i) for i in range(count)]
    text = FullText(tmp_path / "whoosh")
    started = time.perf_counter()
    text.update(entries, [])
    built = time.perf_counter() - started
    assert text.count() == count
    assert text.ids() == {entry.id for entry in entries}

    timings = {}
    for query in ["token42", "backend:neuron oom", '"out of memory"', "attention", "versions:torch=2.3.0"]:
        text.search(query)  # warm
        started = time.perf_counter()
        hits = text.search(query)
        timings[query] = (time.perf_counter() - started) * 1000, len(hits)
        assert hits
    only = {entry.id for entry in entries[::2]}
    started = time.perf_counter()
    restricted = text.search("attention", only_ids=only)
    timings["attention, only_ids=1000"] = (time.perf_counter() - started) * 1000, len(restricted)
    assert restricted and {hit.id for hit in restricted} <= only

    started = time.perf_counter()
    edited = generated(7)
    edited.body += " zzedited"
    text.update([edited], [])
    single = time.perf_counter() - started
    assert ids(text.search("zzedited")) == [edited.id]
    few = {entries[3].id, edited.id, entries[1999].id, "2026-01-01-unknown-000000"}  # a term lookup per id
    assert {hit.id for hit in text.search("attention", only_ids=few)} == few - {"2026-01-01-unknown-000000"}

    size = sum(path.stat().st_size for path in text.folder.iterdir())
    print(f"\nbulk build: {count} entries in {built:.2f} s ({count / built:.0f}/s), {size / count:.0f} bytes/entry")
    print(f"single-entry update+commit: {single * 1000:.1f} ms")
    for query, (ms, found) in timings.items():
        print(f"search {query!r}: {ms:.1f} ms, {found} hits")
    assert max(ms for ms, _ in timings.values()) < 2000  # generous: the machine is shared
