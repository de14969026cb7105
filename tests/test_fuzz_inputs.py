"""Hostile and broken input: every reader kb has either accepts a file or says what is wrong with it.

Inputs are valid files mutated (cut short, values of the wrong type, nesting thousands deep, numbers of
hundreds of digits, NaN and infinities, bytes that are not UTF-8, lone surrogates, XML entity bombs, gzip
bombs), not only random bytes. Each case must end in a result or a KbError that names the file (and line or
field where there is one), within CASE_SECONDS: any other exception, or a case that runs on, fails the test.
What an importer accepts is written as a real entry, so that its output is held to the entry schema too.

`KB_FUZZ_EXAMPLES=N` runs N cases per test instead of the small CI sample (docs/reliability.md).
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

import pytest
from conftest import write_entry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.describe import RunInfo
from ingest.importers.compile_trace import EXPECTED_PREFIX, MAX_LINE, read_compile_trace
from ingest.importers.imported import Imported, create_imported
from ingest.importers.junit import read_junit
from ingest.importers.profile import read_trace
from kb.errors import EntryError, KbError
from kb.index.db import connect, index_path
from kb.index.fulltext import compile_query
from kb.index.query import Filters, list_entries, search
from kb.index.sync import sync
from kb.model.entry import Entry
from kb.store.knowledge_base import KnowledgeBase

GOOD_ENTRIES = sorted((Path(__file__).parent / "data" / "entries" / "good").glob("*.md"))
EXAMPLES = int(os.environ.get("KB_FUZZ_EXAMPLES", "0"))
# A bound on one case that only a hang reaches: the slowest cases here take well under a second.
CASE_SECONDS = 30
T = TypeVar("T")


def fuzz(ci_examples: int) -> Callable:
    """Hypothesis settings: `ci_examples` cases, or KB_FUZZ_EXAMPLES; no deadline (a loaded machine is slow)."""
    return settings(
        max_examples=EXAMPLES or ci_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


class Hang(Exception):
    """A case ran past CASE_SECONDS."""


@contextmanager
def bounded(seconds: float = CASE_SECONDS) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"one case ran for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def outcome(call: Callable[[], T], names: str, *, short: bool = True, seconds: float = CASE_SECONDS) -> T | KbError:
    """What `call` returns, or the KbError it raises, which must name `names` (and be short, unless not `short`)."""
    try:
        with bounded(seconds):
            return call()
    except KbError as exc:
        message = str(exc)
        assert names in message and message.strip(), message[:2000]
        assert len(message) < 2000 or not short, message[:2000]
        return exc


# Building blocks for broken values

HUGE_INT = 10**400
JSON_NUMBERS = st.one_of(
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([HUGE_INT, -HUGE_INT, 0, -1, 2**63, 1e308, -0.0]),
)
TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "../../escape", "/etc/passwd", "a\x00b", "\ud800", "\u2028", "x" * 10_000, "\t\n\r"]),
)
JSON_SCALARS = st.one_of(st.none(), st.booleans(), JSON_NUMBERS, TEXT)
JSON_VALUES = st.recursive(
    JSON_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=12
)


def json_text(value: Any) -> str:
    """JSON as a careless writer makes it: NaN and Infinity as bare words, integers of any length."""
    return json.dumps(value, allow_nan=True)


@st.composite
def mutated(draw: st.DrawFn, original: bytes, snippets: list[bytes]) -> bytes:
    """`original` damaged the ways files are: cut short, a stretch lost or doubled, junk or a hostile snippet put in."""
    data = original
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["cut", "drop", "double", "insert", "snippet", "flip"]))
        if how == "cut":
            data = data[:at]
        elif how == "drop":
            data = data[:at] + data[at + draw(st.integers(1, 64)) :]
        elif how == "double":
            data = data[:at] + data[at : at + 64] + data[at:]
        elif how == "insert":
            data = data[:at] + draw(st.binary(max_size=16)) + data[at:]
        elif how == "snippet":
            data = data[:at] + draw(st.sampled_from(snippets)) + data[at:]
        elif data:
            at = min(at, len(data) - 1)
            data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    return data


def nested(depth: int, opener: bytes = b"[", closer: bytes = b"]") -> bytes:
    return opener * depth + closer * depth


# Entries

ENTRY_SNIPPETS = [
    b"\xff\xfe", b"\xe2\x82", b"\x00", b"\xef\xbb\xbf", b"\r", b"\t", b"\n---\n", b"\n...\n", b"'", b'"', b"? ",
    b"&anchor ", b"*anchor", b"<<: *a\n", b"!!python/object/apply:os.system ['touch /tmp/kb-pwned']", b"%YAML 1.1\n",
    b"\nx: " + nested(5000), b"\nx: " + nested(70), b"\nx: " + nested(5000, b"{a: ", b"}"),
    b"\nx: '" + b"9" * 5000 + b"'",
    b"\nschema: 99\n", b"\nid: ../../../escape\n", b"\ntags: ['../x', '/abs']\n", b"\nkey: \"\\ud800\"\n",
    b"\nattachments: [{path: ../../../etc/passwd}, {path: \"a\\0b\"}]\n", b"\n" + b"- " * 3000 + b"x\n",
    b"\nmetrics: {loss: {value: .nan}, big: {value: 1e400}}\n", b"\nrecorded: 2026-13-45T99:99:99Z\n",
]  # fmt: skip


def entry_text() -> st.SearchStrategy[bytes]:
    seeds = [path.read_bytes() for path in GOOD_ENTRIES]
    return st.sampled_from(seeds).flatmap(lambda seed: mutated(seed, ENTRY_SNIPPETS))


@fuzz(300)
@given(data=entry_text())
def test_entry_files_parse_or_name_file_line_and_field(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "2026-11-30-fuzzed-000000.md"
    path.write_bytes(data)
    # Not `short`: a problem quotes the value it refuses whole (kb.model.validation._explain), however long.
    result = outcome(lambda: Entry.read(path), str(path), short=False)
    if isinstance(result, KbError):
        assert isinstance(result, EntryError) and result.problems
        lines = data.count(b"\n") + 2
        for problem in result.problems:
            assert problem.path == path
            assert problem.line is None or 1 <= problem.line <= lines, (problem, lines)
        return
    again = outcome(lambda: Entry.parse(result.serialise(), path), str(path))  # what parsed is written back whole
    assert isinstance(again, Entry) and (again.data, again.body) == (result.data, result.body)


def test_a_number_of_thousands_of_digits_is_kept_as_text_or_named_as_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "2026-11-30-digits-000000.md"
    path.write_text(GOOD_ENTRIES[0].read_text().replace("---\n", "---\nx: " + "9" * 5000 + "\n", 1))
    kept = outcome(lambda: Entry.read(path), str(path), short=False)
    assert isinstance(kept, Entry) and kept.data["x"] == "9" * 5000  # past Python's limit on digits: text
    path.write_text(GOOD_ENTRIES[0].read_text().replace("---\n", "---\ncoverage: {total: " + "1" * 5000 + "}\n", 1))
    refused = outcome(lambda: Entry.read(path), str(path), short=False)
    assert isinstance(refused, EntryError) and f"{path}:2: coverage.total: expected integer" in str(refused)


def test_a_refused_value_is_quoted_short_and_a_final_line_break_is_named_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "2026-11-30-quoted-000000.md"
    text = GOOD_ENTRIES[0].read_text()
    path.write_text(text.replace("---\n", f"---\nmode: {'y' * 10_000}\n", 1))
    error = outcome(lambda: Entry.read(path), str(path))
    assert isinstance(error, KbError) and "mode:" in str(error) and len(str(error)) < 400, str(error)[:500]
    lines = text.splitlines()
    line = next(number for number, content in enumerate(lines, 1) if content.startswith("id: "))
    lines[line - 1] = f'id: "{lines[line - 1][4:]}\\n"'  # a quoted id with a final line break
    path.write_text("\n".join(lines) + "\n")
    error = outcome(lambda: Entry.read(path), str(path))
    assert f"{path}:{line}: id:" in str(error), str(error)


# JUnit XML

JUNIT_SNIPPETS = [
    b'<?xml version="1.0" encoding="utf-16"?>', b"<!DOCTYPE x [<!ENTITY e SYSTEM 'file:///etc/passwd'>]>", b"&e;",
    b"<!DOCTYPE x [<!ENTITY e SYSTEM 'http://127.0.0.1:9/x'>]>", b"&lt;", b"&#0;", b"&#xD800;", b"\xff", b"\x00",
    b"<![CDATA[", b"]]>", b"<testcase/>", b"</testsuite>", b"<testsuite>" * 3000, b'time="1e400"', b'time="nan"',
    b'name="' + b"x" * 10_000 + b'"', b'<?pi x?>', b"<!-- ", b"xmlns:a='urn:x' a:b='c'",
]  # fmt: skip
OUTCOMES = st.sampled_from(["", "failure", "error", "skipped"])
TIMES = st.none() | st.text(max_size=8) | st.sampled_from(["1e400", "-1", "nan", "inf", "1,2.5", "", "9" * 5000, "0x1"])


def xml_attr(value: str) -> str:
    value = "".join(c for c in value if c in "\t\n\r" or (c >= " " and not 0xD800 <= ord(c) <= 0xDFFF and c < "\ufffe"))
    return value.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


@st.composite
def junit_cases(draw: st.DrawFn) -> str:
    out = []
    for _ in range(draw(st.integers(0, 6))):
        name, owner, kind = draw(TEXT), draw(TEXT), draw(OUTCOMES)
        time = draw(TIMES)
        attrs = f'classname="{xml_attr(owner)}" name="{xml_attr(name)}"'
        attrs += f' time="{xml_attr(time)}"' if time is not None else ""
        inner = ""
        if kind:
            message, kind_attr, text = draw(TEXT), draw(TEXT), draw(TEXT)
            inner = f'<{kind} message="{xml_attr(message)}" type="{xml_attr(kind_attr)}">{xml_attr(text)}</{kind}>'
        out.append(f"<testcase {attrs}>{inner}</testcase>")
    return "".join(out)


@st.composite
def junit_documents(draw: st.DrawFn) -> bytes:
    suites = "".join(
        f'<testsuite name="{xml_attr(draw(TEXT))}">{draw(junit_cases())}</testsuite>'
        for _ in range(draw(st.integers(1, 3)))
    )
    text = f'<?xml version="1.0" encoding="utf-8"?><testsuites>{suites}</testsuites>'.encode("utf-8", "replace")
    return draw(st.one_of(st.just(text), mutated(text, JUNIT_SNIPPETS)))


def import_into(
    kb: KnowledgeBase, read: Callable[[Path], Imported], names: str, tool: str, seconds: float = CASE_SECONDS
) -> Entry | KbError:
    """Read with a fresh work folder and, if it reads, write the entry; either way one outcome."""

    def read_and_create() -> Entry:
        with tempfile.TemporaryDirectory(prefix="kb-fuzz-") as work:
            return create_imported(kb, read(Path(work)), RunInfo(), tool=tool)

    result = outcome(read_and_create, names, seconds=seconds)
    assert not isinstance(result, EntryError), f"an importer made an invalid entry: {result}"
    return result


@fuzz(150)
@given(data=junit_documents())
def test_junit_files_import_or_name_the_file(kb: KnowledgeBase, tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "results.xml"
    path.write_bytes(data)
    result = import_into(kb, lambda work: read_junit([path], work), str(path), "kb ingest junit")
    if isinstance(result, Entry):
        assert result.data["coverage"]["total"] >= 1


BILLION_LAUGHS = (
    b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol">"""
    + b"".join(
        b'<!ENTITY lol%d "%s">' % (n, b"&lol%d;" % (n - 1) * 10 if n > 1 else b"&lol;" * 10) for n in range(1, 10)
    )
    + b"""]>
<testsuites><testsuite name="s"><testcase name="&lol9;"/></testsuite></testsuites>"""
)
QUADRATIC = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "' + b"a" * 100_000 + b'">]><testsuite><testcase name="'
QUADRATIC += b"&a;" * 100_000 + b'"/></testsuite>'


@pytest.mark.parametrize("bomb", [BILLION_LAUGHS, QUADRATIC], ids=["billion-laughs", "quadratic-blowup"])
def test_xml_entity_bombs_are_refused(kb: KnowledgeBase, tmp_path: Path, bomb: bytes) -> None:
    path = tmp_path / "bomb.xml"
    path.write_bytes(bomb)
    result = import_into(kb, lambda work: read_junit([path], work), str(path), "kb ingest junit")
    assert isinstance(result, KbError) and "not well-formed XML" in str(result)


def test_external_entities_are_never_read(kb: KnowledgeBase, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("kb-fuzz-secret")
    path = tmp_path / "external.xml"
    path.write_text(f'<!DOCTYPE x [<!ENTITY e SYSTEM "file://{secret}">]><testsuite><testcase name="&e;"/></testsuite>')
    result = import_into(kb, lambda work: read_junit([path], work), str(path), "kb ingest junit")
    assert isinstance(result, KbError)
    assert not any("kb-fuzz-secret" in p.read_text(errors="replace") for p in kb.entries_path.rglob("*") if p.is_file())


# torch.profiler traces

CATEGORIES = st.sampled_from(["cpu_op", "kernel", "gpu_memcpy", "user_annotation", "python_function", "Kernel", ""])
EVENT = st.fixed_dictionaries(
    {},
    optional={
        "ph": st.sampled_from(["X", "X", "X", "B", "i", "M"]) | JSON_SCALARS,
        "cat": CATEGORIES | JSON_SCALARS,
        "name": st.sampled_from(["aten::mm", "ProfilerStep#1", "ncclAllReduce"]) | JSON_VALUES,
        "ts": JSON_NUMBERS | JSON_SCALARS,
        "dur": JSON_NUMBERS | JSON_SCALARS,
        "pid": JSON_VALUES,
        "tid": JSON_VALUES,
    },
)
PROFILE_SNIPPETS = [
    b"NaN", b"-Infinity", b"1" + b"0" * 5000, b"1e400", nested(100_000), b'"\\ud800"', b"\xff", b"\x00", b"]", b"}",
    b",", b"\\", b'"', b"\xef\xbb\xbf", b'{"ph": "X", "cat": "cpu_op", "ts": 1e20, "dur": 1e20}',
]  # fmt: skip


@st.composite
def traces(draw: st.DrawFn) -> bytes:
    keys = st.sampled_from(["schemaVersion", "traceName", "deviceProperties", "x"])
    header = draw(st.dictionaries(keys, JSON_VALUES))
    events = draw(st.lists(EVENT | JSON_VALUES, max_size=8))
    if draw(st.booleans()):
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 2})
    body = json_text({**header, "traceEvents": events}).encode("utf-8", "surrogatepass")
    data = draw(st.one_of(st.just(body), mutated(body, PROFILE_SNIPPETS)))
    packing = draw(st.sampled_from(["plain", "gzip", "gzip-cut", "gzip-junk"]))
    if packing == "plain":
        return data
    packed = gzip.compress(data, compresslevel=1)
    if packing == "gzip-cut":
        return packed[: draw(st.integers(2, max(2, len(packed) - 1)))]
    return packed + draw(st.binary(min_size=1, max_size=8)) if packing == "gzip-junk" else packed


@fuzz(150)
@given(data=traces())
def test_profiler_traces_import_or_name_the_file(kb: KnowledgeBase, tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "trace.json"
    path.write_bytes(data)
    result = import_into(kb, lambda work: read_trace(path, work), path.name, "kb ingest profile")
    if isinstance(result, Entry):
        assert result.data["profile"]["events"] >= 1


def gzip_bomb(path: Path, prefix: bytes, fill: bytes, size: int, suffix: bytes) -> None:
    """A small file that decompresses to `size` bytes: `fill` repeated between `prefix` and `suffix`."""
    block = fill * (1 << 20)
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(prefix)
        for _ in range(size >> 20):
            out.write(block)
        out.write(suffix)


BOMB_MIB = 32 if not EXAMPLES else 1024
VALID_TAIL = b'"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 2}]}'


@pytest.mark.parametrize(
    ("prefix", "fill", "suffix", "imported"),
    [
        (b'{"schemaVersion": 1, "x": "', b"a", b'", ' + VALID_TAIL, False),  # one endless value: refused early
        (b"{", b" ", b'"schemaVersion": 1, ' + VALID_TAIL, True),  # endless white space: read in bounded memory
        (b"", b"\x00", b"", False),  # binary junk
    ],
    ids=["one-huge-value", "endless-whitespace", "zeros"],
)
def test_gzip_bombs_are_read_in_bounded_memory(
    kb: KnowledgeBase, tmp_path: Path, prefix: bytes, fill: bytes, suffix: bytes, imported: bool
) -> None:
    path = tmp_path / "bomb.json.gz"
    gzip_bomb(path, prefix, fill, BOMB_MIB << 20, suffix)
    assert path.stat().st_size < (BOMB_MIB << 20) // 100
    result = import_into(kb, lambda work: read_trace(path, work), path.name, "kb ingest profile")
    assert isinstance(result, Entry) == imported, result
    # The memory in a fresh process: this one's high-water mark may already stand above what the read needs.
    measure = (
        "import resource, sys, tempfile; from pathlib import Path; from ingest.importers.profile import read_trace; "
        "from kb.errors import KbError; before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n    read_trace(Path(sys.argv[1]), Path(tempfile.mkdtemp()))\nexcept KbError:\n    pass\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) >> 10)"  # KiB on Linux, to MiB
    )
    done = subprocess.run([sys.executable, "-c", measure, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    grown_mib = int(done.stdout)
    assert grown_mib < 200, f"reading a {BOMB_MIB} MiB bomb grew the process by {grown_mib} MiB"


# TORCH_TRACE compile logs

TRACE_EVENTS = st.sampled_from(
    ["dynamo_start", "compilation_metrics", "bwd_compilation_metrics", "dynamo_output_graph", "artifact", "x"]
)
META_KEYS = st.sampled_from(
    [
        "stack", "co_name", "duration_us", "dynamo_cumulative_compile_time_us", "entire_frame_compile_time_s",
        "inductor_cumulative_compile_time_us", "inductor_fx_local_cache_hit_count",
        "aotautograd_remote_cache_miss_count",
        "recompile_reason", "fail_type", "fail_reason", "restart_reasons", "pytorch_version", "name",
        "inductor_compile_time_s", "backward_cumulative_compile_time_us",
    ]
)  # fmt: skip
RECORD = st.fixed_dictionaries(
    {},
    optional={
        "frame_id": st.integers(0, 3) | JSON_SCALARS,
        "frame_compile_id": st.integers(0, 3) | JSON_VALUES,
        "attempt": JSON_SCALARS,
        "compiled_autograd_id": JSON_VALUES,
        "rank": JSON_VALUES,
        "has_payload": JSON_SCALARS,
    },
).flatmap(
    lambda ids: st.tuples(
        TRACE_EVENTS,
        st.dictionaries(META_KEYS, JSON_VALUES | st.sampled_from(["dynamo_graph_break_reason", "recompile_reasons"])),
    ).map(lambda event: {**ids, event[0]: event[1]})
)
COMPILE_SNIPPETS = [b"\xff\xfe", b"\x00", b"\n\t", b"\nI1130 06:46:39.676000 1 x.py:1] {}", nested(100_000), b"\n"]


@st.composite
def compile_logs(draw: st.DrawFn) -> bytes:
    lines = []
    for record in draw(st.lists(RECORD | JSON_VALUES, max_size=8)):
        lines.append(EXPECTED_PREFIX + json_text(record))
        lines += ["\t" + json_text(draw(JSON_VALUES)) for _ in range(draw(st.integers(0, 2)))]
    text = "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n"
    return draw(st.one_of(st.just(text), mutated(text, COMPILE_SNIPPETS)))


@fuzz(120)
@given(data=compile_logs())
def test_compile_traces_import_or_name_the_file(kb: KnowledgeBase, tmp_path: Path, data: bytes) -> None:
    folder = tmp_path / "trace"
    folder.mkdir(exist_ok=True)
    (folder / "dedicated_log_torch_trace_rank_0_x.log").write_bytes(data)
    result = import_into(kb, lambda work: read_compile_trace(folder, work), str(folder), "kb ingest compile-trace")
    if isinstance(result, Entry):
        assert result.data["compile"]["source"] == "torch_trace"


def test_an_endless_line_is_skipped_in_bounded_memory(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "trace"
    folder.mkdir()
    start = {"dynamo_start": {"stack": [{"name": "f"}]}, "frame_id": 0, "frame_compile_id": 0}
    with open(folder / "dedicated_log_torch_trace_x.log", "w") as log:
        log.write(EXPECTED_PREFIX + json_text(start) + "\n\t")
        for _ in range(2 * (MAX_LINE >> 20) + 4):
            log.write("x" * (1 << 20))  # one payload line of 20 MiB, well past MAX_LINE
        log.write("\n")
    # The attached log is masked whole: searched at every character, as masking was, this line took 20 to 60 s.
    result = import_into(kb, lambda work: read_compile_trace(folder, work), str(folder), "kb ingest compile-trace")
    assert isinstance(result, Entry) and result.data["compile"]["frames"][0]["function"] == "f"


# Search queries and filters

QUERY_TOKENS = st.sampled_from(
    [
        "flex", "attention", "compile*", "*", "?", "te?t", '"', '"flex attention"', "(", ")", "[", "]", "{", "}", "TO",
        "AND", "OR", "NOT", "ANDNOT", "ANDMAYBE", "-", "+", "~", "~2", "^", "^2", "^x", "\\", ":", "::", "backend:",
        "backend:cpu", "tag:", "title:", "recorded:", "recorded:[2026-01-01 TO]", "recorded:>2026", "recorded:<", "id:",
        "nosuchfield:x", "notes:*", "version:torch=2.9", "'", "<", ">", "=", "\x00", "\u2028", "9" * 5000, "é",
        "*" * 50, "title:(a OR b)", "a~9999", "metrics:*", "/", ".", "..", "x" * 10_000,
    ]
)  # fmt: skip
QUERIES = st.one_of(
    st.lists(QUERY_TOKENS, max_size=8).map(" ".join),
    st.lists(QUERY_TOKENS, max_size=8).map("".join),
    st.text(max_size=60),
)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KnowledgeBase, Any]]:
    """A small knowledge base, indexed once, searched by every case."""
    kb, _ = KnowledgeBase.init(tmp_path_factory.mktemp("search") / "kb")
    for number, (backend, tag) in enumerate([("cpu", "a"), ("neuron", "flex"), ("cuda", "x/y")]):
        write_entry(
            kb, f"2026-11-{number + 10}-run-{backend}-00000{number}", title=f"flex attention on {backend}",
            recorded=f"2026-11-{number + 10}T00:00:00Z", status="completed", backend=backend, tags=[tag],
            versions={"torch": f"2.{number + 8}.0"}, body="compile timeout in flex attention\n",
        )  # fmt: skip
    sync(kb)
    db = connect(index_path(kb.cache_path))
    yield kb, db
    db.close()


@fuzz(250)
@given(query=QUERIES)
def test_search_queries_give_hits_or_say_what_is_wrong(indexed: tuple, query: str) -> None:
    _, db = indexed
    parsed = outcome(lambda: compile_query(query, db), "query")
    searched = outcome(lambda: search(db, query, Filters()), "query")
    assert isinstance(parsed, KbError) == isinstance(searched, KbError)  # one verdict on every query
    if not isinstance(searched, KbError):
        assert all(row["id"] == hit.id for hit, row in searched)


FILTER_TEXT = st.one_of(
    TEXT,
    st.sampled_from(["2026-11-30", "9999-12-31", "0001-01-01", "2026-02-30", "20261130", "torch>=2.9", "torch==2.*"]),
    st.sampled_from(["torch>=", "torch>=2.9; os_name=='nt'", "-", "torch @ file:///etc/passwd", "x" * 5000]),
)
SORTS = st.sampled_from(["recorded", "wall_s", "metric.tokens_per_s", "timings.x", "metric.", "metric.a;drop", "x"])


@fuzz(100)
@given(
    values=st.lists(st.none() | FILTER_TEXT, min_size=8, max_size=8),
    tags=st.lists(FILTER_TEXT, max_size=3),
    packages=st.lists(FILTER_TEXT, max_size=2),
    sort=SORTS | TEXT,
    limit=st.sampled_from([None, 0, 1, 10**12]),
)
def test_list_filters_give_rows_or_name_the_option(
    indexed: tuple, values: list, tags: list, packages: list, sort: str, limit: int | None
) -> None:
    _, db = indexed
    backend, workload, status, kind, mode, failure, since, until = values
    filters = Filters(backend, workload, status, kind, mode, failure, tags, since, until, packages)
    rows = outcome(lambda: list_entries(db, filters, sort=sort, limit=limit), "--")
    hits = outcome(lambda: search(db, "flex", filters), "--")
    if not isinstance(rows, KbError) and not isinstance(hits, KbError):
        listed = {row["id"] for row in list_entries(db, filters, limit=None)}
        assert {row["id"] for _, row in hits} <= listed  # search narrows by the very same filters


def test_the_last_day_there_is_bounds_nothing(indexed: tuple) -> None:
    _, db = indexed
    assert len(list_entries(db, Filters(until=date.max.isoformat()), limit=None)) == 3
    assert len(list_entries(db, Filters(since=date.min.isoformat()), limit=None)) == 3


def test_thousands_of_tags_are_refused_by_name_and_make_no_pages(kb: KnowledgeBase, tmp_path: Path) -> None:
    from conftest import run_kb

    for number in range(3):
        tags = [f"t{number}-{tag}" for tag in range(10_000)]
        write_entry(
            kb,
            f"2026-01-0{number + 1}-tagged-00000{number}",
            recorded="2026-01-01T00:00:00Z",
            tags=tags,
            status="completed",
        )
    write_entry(kb, "2026-01-05-plain-000009", recorded="2026-01-05T00:00:00Z", tags=["ok"], status="completed")
    checked = run_kb("check")
    assert checked.returncode == 1
    assert (
        checked.stdout.count(
            "tags: 10,000 items, over the 64 it may have; keep those that find the entry, and say the rest in its body"
        )
        == 3
    )
    built = run_kb("site", "build", "--out", str(tmp_path / "site"))
    assert built.returncode == 0, built.stderr
    assert sum(1 for path in (tmp_path / "site").rglob("*") if path.is_file()) < 200
    refused = run_kb("record", "--title", "tagged", *[f"--tag=t{tag}" for tag in range(65)], "--no-edit")
    assert refused.returncode == 1 and "tags: 65 items, over the 64 it may have" in refused.stderr
