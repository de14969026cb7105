"""`kb ingest junit`: JUnit XML from real pytest runs (and other producers' shapes) becomes a coverage entry."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest
from conftest import only_entry, run_kb
from data.secrets_corpus import SECRETS

from kb.store.knowledge_base import KnowledgeBase

HAS_TIMEOUT = importlib.util.find_spec("pytest_timeout") is not None
# Without pytest-timeout installed, pytest.fail stands in, failing with the very message pytest-timeout writes.
STALL = "time.sleep(30)" if HAS_TIMEOUT else 'pytest.fail("Timeout (>0.5s) from pytest-timeout.")'

BACKEND_SUITE = f'''
import time

import pytest


class BackendCompilerFailed(RuntimeError):
    """Named like torch._dynamo.exc.BackendCompilerFailed."""


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_add(size):
    assert size + size == 2 * size


def test_matmul():
    assert 2 + 2 == 5


@pytest.mark.skip(reason="dynamic shapes not supported")
def test_dynamic_batch():
    pass


def test_dynamic_sequence():
    pytest.skip("dynamic shapes not supported")


@pytest.mark.xfail(reason="sparse tensors not implemented")
def test_sparse_add():
    raise NotImplementedError("sparse")


@pytest.fixture
def device():
    raise OSError("device 0 not found")


def test_on_device(device):
    pass


def test_compile_conv():
    raise BackendCompilerFailed("backend='neuron' raised: graph 3 did not compile")


@pytest.mark.timeout(0.5)
@pytest.mark.parametrize("layers", [1, 2])
def test_compile_llama_block(layers):
    {STALL}


@pytest.mark.timeout(0.5)
def test_allreduce():
    {STALL}
'''


def run_pytest(folder: Path, modules: dict[str, str]) -> Path:
    """A real pytest run of test modules, isolated from this repository's configuration and plugins."""
    folder.mkdir()
    for module, source in modules.items():
        (folder / f"{module}.py").write_text(source)
    xml = folder / "results.xml"
    plugins = ["-p", "pytest_timeout"] if HAS_TIMEOUT else []
    subprocess.run(
        [sys.executable, "-m", "pytest", *(f"{module}.py" for module in modules), f"--junitxml={xml}",
         "--continue-on-collection-errors", "-p", "no:cacheprovider", *plugins,
         "-c", os.devnull, "--rootdir", str(folder), "-q"],
        cwd=folder,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": ""},
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    assert xml.is_file()
    return xml


def test_a_pytest_run_becomes_a_coverage_entry_grouped_by_reason(kb: KnowledgeBase, tmp_path: Path) -> None:
    xml = run_pytest(tmp_path / "suite", {"test_backend": BACKEND_SUITE})
    result = run_kb(
        "ingest", "junit", str(xml), "--backend", "neuron", "--workload", "opinfo", "--version", "torch=2.9.0"
    )
    assert result.returncode == 0, result.stderr
    summary = (
        "4 of 13 passed; 2 exceeded the compile time limit; 2 skipped (dynamic shapes not supported); "
        "1 error (OSError in setup); 4 more in other groups."
    )
    assert result.stderr.splitlines()[-1] == summary  # for people; stdout has the new id
    entry = only_entry(kb)
    assert result.stdout == entry.id + "\n"
    assert entry.kind == "coverage" and entry.status is None
    assert entry.title == "Test coverage: pytest: 4 of 13 passed"
    data = entry.data
    assert data["provenance"] == {"source": "imported", "tool": "kb ingest junit", "environment": "none"}
    assert data["versions"] == {"torch": "2.9.0"}
    assert data["backend"] == "neuron" and data["workload"] == {"name": "opinfo"}
    coverage = data["coverage"]
    assert coverage.pop("time_s") >= (1.5 if HAS_TIMEOUT else 0.0)  # three cases each stalled for half a second
    assert coverage == {
        "suite": "pytest",
        "total": 13,
        "passed": 4,
        "failed": 5,
        "errors": 1,
        "skipped": 3,
        "groups": [
            group("failed", "exceeded the compile time limit", 2, "test_backend::test_compile_llama_block[1]"),
            group("skipped", "dynamic shapes not supported", 2, "test_backend::test_dynamic_batch"),
            group("error", "OSError in setup", 1, "test_backend::test_on_device"),
            group("failed", "AssertionError", 1, "test_backend::test_matmul"),
            group("failed", "exceeded the time limit", 1, "test_backend::test_allreduce"),
            group("failed", "test_backend.BackendCompilerFailed", 1, "test_backend::test_compile_conv"),
            group("skipped", "expected failure: sparse tensors not implemented", 1, "test_backend::test_sparse_add"),
        ],
        "cases": "cases.tsv",
    }
    assert data["metrics"] == {
        "passed": {"value": 4, "unit": "cases", "better": "higher"},
        "failed": {"value": 5, "unit": "cases", "better": "lower"},
        "skipped": {"value": 3, "unit": "cases"},
        "pass_rate": {"value": 30.8, "unit": "%", "better": "higher"},
    }
    timeout = "Failed: Timeout (>0.5s) from pytest-timeout."
    assert (kb.attachments_path(entry) / "cases.tsv").read_text() == tsv(
        ("test_backend::test_add[1]", "passed", ""),
        ("test_backend::test_add[2]", "passed", ""),
        ("test_backend::test_add[3]", "passed", ""),
        ("test_backend::test_add[4]", "passed", ""),
        ("test_backend::test_allreduce", "failed", timeout),
        ("test_backend::test_compile_conv", "failed",
         "test_backend.BackendCompilerFailed: backend='neuron' raised: graph 3 did not compile"),
        ("test_backend::test_compile_llama_block[1]", "failed", timeout),
        ("test_backend::test_compile_llama_block[2]", "failed", timeout),
        ("test_backend::test_dynamic_batch", "skipped", "dynamic shapes not supported"),
        ("test_backend::test_dynamic_sequence", "skipped", "dynamic shapes not supported"),
        ("test_backend::test_matmul", "failed", "assert (2 + 2) == 5"),
        ("test_backend::test_on_device", "error", 'failed on setup with "OSError: device 0 not found"'),
        ("test_backend::test_sparse_add", "skipped", "expected failure: sparse tensors not implemented"),
    )  # fmt: skip
    assert (kb.attachments_path(entry) / "results.xml").read_text() == xml.read_text()
    assert [a["path"].rpartition("/")[2] for a in data["attachments"]] == ["cases.tsv", "results.xml"]
    assert entry.body.startswith(
        f"{summary}\n\n| outcome | reason | count | example |\n|---|---|---:|---|\n"
        "| failed | exceeded the compile time limit | 2 | `test_backend::test_compile_llama_block[1]` |\n"
    )


# Another producer's shape: a <testsuite> root with a nested suite, declared exception types, "Skipped: "
# prefixes, a case named only by its file, and a case reported twice (a failure, then a teardown error).
NIGHTLY = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="nightly-opinfo" tests="5">
  <properties><property name="device" value="trn2"/></properties>
  <testsuite name="ops.conv">
    <testcase classname="ops.conv" name="test_conv2d" time="12.5">
      <failure type="torch._dynamo.exc.BackendCompilerFailed" message="backend raised: NCC_EVRF009">Traceback
  ...
torch._dynamo.exc.BackendCompilerFailed: backend raised: NCC_EVRF009</failure>
      <system-out>compiling graph 1 of 3</system-out>
    </testcase>
    <testcase classname="ops.conv" name="test_conv3d" time="0.25">
      <skipped message="Skipped: requires 8 GPUs"/>
    </testcase>
  </testsuite>
  <testcase file="ops/norm.py" name="test_layer_norm" time="1,000.25">
    <failure message="assert 1 == 2">ops/norm.py:7: AssertionError</failure>
  </testcase>
  <testcase file="ops/norm.py" name="test_layer_norm" time="0">
    <error message="failed on teardown with &quot;RuntimeError: stream busy&quot;"/>
  </testcase>
  <testcase name="test_smoke" time="0.5"/>
</testsuite>
"""

SHARD = """
import pytest


def test_relu():
    pass


def test_all_gather():
    pytest.skip("requires 2 GPUs")
"""
NEEDS_NEURON = "import torch_neuronx_not_installed\n\n\ndef test_conv():\n    pass\n"


def test_files_that_are_parts_of_one_run_add_up(kb: KnowledgeBase, tmp_path: Path) -> None:
    shard = run_pytest(tmp_path / "shard", {"test_shard": SHARD, "test_neuron_ops": NEEDS_NEURON})
    nightly = tmp_path / "nightly.xml"
    nightly.write_text(NIGHTLY)
    result = run_kb("ingest", "junit", str(shard), str(nightly))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "2 of 7 passed; 2 skipped (requires N GPUs); 1 error (ModuleNotFoundError in collection); "
        "1 failed (AssertionError); 1 more in other groups."
    )
    entry = only_entry(kb)
    assert entry.title == "Test coverage: pytest, nightly-opinfo: 2 of 7 passed"
    coverage = entry.data["coverage"]
    assert {key: coverage[key] for key in ("suite", "total", "passed", "failed", "errors", "skipped", "time_s")} == {
        "suite": "pytest, nightly-opinfo",
        "total": 7,
        "passed": 2,
        "failed": 2,
        "errors": 1,
        "skipped": 2,
        "time_s": 1013.5,
    }
    assert coverage["groups"] == [
        group("skipped", "requires N GPUs", 2, "ops.conv::test_conv3d"),
        group("error", "ModuleNotFoundError in collection", 1, "test_neuron_ops"),
        group("failed", "AssertionError", 1, "ops/norm.py::test_layer_norm"),
        group("failed", "torch._dynamo.exc.BackendCompilerFailed", 1, "ops.conv::test_conv2d"),
    ]
    assert (kb.attachments_path(entry) / "cases.tsv").read_text() == tsv(
        ("ops.conv::test_conv2d", "failed", "backend raised: NCC_EVRF009"),
        ("ops.conv::test_conv3d", "skipped", "requires 8 GPUs"),
        ("ops/norm.py::test_layer_norm", "failed", "assert 1 == 2"),
        ("test_neuron_ops", "error", "collection failure"),
        ("test_shard::test_all_gather", "skipped", "requires 2 GPUs"),
        ("test_shard::test_relu", "passed", ""),
        ("test_smoke", "passed", ""),
    )


CASES = 100_000
KEPT_SKIPS = 999  # the failure group and the first 999 skip reasons fill the 1,000 groups counted one by one


def write_big_run(path: Path) -> None:
    """A suite of 100,000 cases, written as it goes: every tenth fails, every twentieth skips for its own reason."""
    traceback = "E   AssertionError: tensors differ\n" + "    at frame\n" * 5
    with path.open("w") as out:
        out.write('<?xml version="1.0"?>\n<testsuites>\n<testsuite name="opinfo-full">\n')
        for i in range(CASES):
            out.write(f'<testcase classname="big.Test{i // 1000:03d}" name="test_{i:05d}" time="0.001"')
            if i % 10 == 0:
                out.write(f'><failure message="AssertionError: differ at index {i}">{traceback}</failure></testcase>\n')
            elif i % 20 == 1:
                out.write(f'><skipped message="no kernel for aten.op{i}"/></testcase>\n')
            else:
                out.write("/>\n")
        out.write("</testsuite>\n</testsuites>\n")


def case_id(i: int) -> str:
    return f"big.Test{i // 1000:03d}::test_{i:05d}"


def test_a_hundred_thousand_cases_import_in_bounded_memory(kb: KnowledgeBase, tmp_path: Path) -> None:
    big = tmp_path / "big.xml"
    write_big_run(big)
    small = tmp_path / "small.xml"
    small.write_text('<testsuite name="small"><testcase classname="m" name="t"/></testsuite>')
    # Each import in a fresh process; the children's peak resident memory after each shows what the big one added.
    measure = textwrap.dedent(f"""
        import json, resource, subprocess, sys
        peaks = []
        for xml in {[str(small), str(big)]!r}:
            subprocess.run([sys.executable, "-m", "kb", "ingest", "junit", xml], check=True, capture_output=True)
            peaks.append(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        print(json.dumps(peaks))
    """)
    result = subprocess.run([sys.executable, "-c", measure], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    small_peak, big_peak = json.loads(result.stdout)
    assert big_peak - small_peak < 50 * 1024, (small_peak, big_peak)  # kilobytes on Linux
    entry = next(e for e in kb.iter_entries([]) if e.data["coverage"]["suite"] == "opinfo-full")
    coverage = entry.data["coverage"]
    kept_skips = [i for i in range(1, CASES, 20)][:KEPT_SKIPS]
    smallest = sorted(kept_skips, key=lambda i: f"no kernel for aten.op{i}")[:18]
    assert coverage["groups"] == [
        group("failed", "AssertionError", 10_000, case_id(0)),
        group("skipped", "other reasons", 5_000 - KEPT_SKIPS, case_id(20 * KEPT_SKIPS + 1)),
        *(group("skipped", f"no kernel for aten.op{i}", 1, case_id(i)) for i in smallest),
    ]
    assert (coverage["total"], coverage["passed"], coverage["failed"], coverage["skipped"]) == (
        100_000,
        85_000,
        10_000,
        5_000,
    )
    assert coverage["time_s"] == 100.0
    assert "\n981 more cases in 981 smaller groups.\n" in entry.body  # 1,000 groups and other reasons, less 20
    lines = (kb.attachments_path(entry) / "cases.tsv").read_text().splitlines()
    assert len(lines) == 1 + CASES
    assert lines[1:4] == [
        f"{case_id(0)}\tfailed\tAssertionError: differ at index 0",
        f"{case_id(1)}\tskipped\tno kernel for aten.op1",
        f"{case_id(2)}\tpassed\t",
    ]
    assert lines[1:] == sorted(lines[1:])


TRUNCATED = (
    '<?xml version="1.0"?>\n<testsuites>\n<testsuite name="s">\n<testcase classname="m" name="a"/>\n<testcase na'
)
COMPLETE = "is the file complete?"
JUNIT = "expected JUnit XML, e.g. from pytest --junitxml"
HTML = "<!DOCTYPE html>\n<html><body><p>3 passed<br></p></body></html>\n"


@pytest.mark.parametrize(
    ("name", "content", "error"),
    [
        pytest.param(
            "missing.xml",
            None,
            "cannot read {path}: No such file or directory; expected a JUnit XML file, e.g. from pytest --junitxml",
            id="missing",
        ),
        pytest.param(
            "cut.xml", TRUNCATED, f"{{path}}:5:1: not well-formed XML (unclosed token); {COMPLETE}", id="cut-in-a-tag"
        ),
        pytest.param(
            "cut.xml",
            TRUNCATED.rpartition("\n")[0],
            f"{{path}}:4:35: not well-formed XML (no element found); {COMPLETE}",
            id="cut-between-tags",
        ),
        pytest.param(
            "bad.xml",
            "<testsuite>\n<testcase name='a'>\n</testsuite>\n",
            f"{{path}}:3:3: not well-formed XML (mismatched tag); {JUNIT}",
            id="malformed",
        ),
        pytest.param(
            "report.html",
            HTML,
            "{path}: not JUnit XML: the root element is <html>; expected <testsuites> or <testsuite>",
            id="html",
        ),
        pytest.param(
            "slow.xml",
            '<testsuite><testcase name="a" time="slow"/></testsuite>',
            "{path}: case a: time='slow' is not a number of seconds",
            id="bad-time",
        ),
    ],
)
def test_bad_input_is_named_and_writes_nothing(
    kb: KnowledgeBase, tmp_path: Path, name: str, content: str | None, error: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    result = run_kb("ingest", "junit", str(path))
    assert (result.returncode, result.stderr) == (1, f"kb: error: {error.format(path=path)}\n")
    assert list(kb.entries_path.glob("*.md")) == []


def test_a_run_that_collected_nothing_is_refused(kb: KnowledgeBase, tmp_path: Path) -> None:
    xml = run_pytest(tmp_path / "empty", {"test_nothing": "def helper():\n    pass\n"})
    result = run_kb("ingest", "junit", str(xml))
    assert (result.returncode, result.stderr) == (
        1, f"kb: error: no test cases in {xml}; did the test run collect anything?\n"
    )  # fmt: skip
    assert list(kb.entries_path.glob("*.md")) == []


def group(outcome: str, reason: str, count: int, example: str) -> dict:
    return {"outcome": outcome, "reason": reason, "count": count, "example": example}


def tsv(*rows: tuple[str, str, str]) -> str:
    return "case\toutcome\treason\n" + "".join("\t".join(row) + "\n" for row in rows)


def test_secrets_are_masked_before_reasons_are_cut_or_collapsed(kb: KnowledgeBase, tmp_path: Path) -> None:
    secret = {s.id: s.value for s in SECRETS}
    github, slack, aws, pem = secret["github-ghp"], secret["slack-bot"], secret["aws-access-key-id"], secret["pem-rsa"]
    long_reason = "no network " * 17  # the token after it crosses the 200 characters a reason is cut to
    xml = tmp_path / "secrets.xml"
    xml.write_text(
        f'<testsuite name="nightly HF_TOKEN={secret["huggingface"]}">'
        f'<testcase classname="hub" name="test_login[{github}]"><failure message="{github}: Bad credentials"/>'
        "</testcase>"
        f'<testcase classname="hub" name="test_notify"><skipped message="webhook down: {slack}"/></testcase>'
        f'<testcase classname="hub" name="test_mirror"><skipped message="{long_reason}{github}"/></testcase>'
        f'<testcase classname="hub" name="test_s3"><error type="{aws}" message="denied"/></testcase>'
        f'<testcase classname="hub" name="test_key"><failure message={quoteattr(pem)}/></testcase>'
        "</testsuite>"
    )
    result = run_kb("ingest", "junit", str(xml))
    assert result.returncode == 0, result.stderr
    entry = only_entry(kb)
    assert entry.title == "Test coverage: nightly HF_TOKEN=[REDACTED]: 0 of 5 passed"
    assert entry.data["coverage"]["groups"] == [
        group("error", "[REDACTED]", 1, "hub::test_s3"),
        group("failed", "[REDACTED]", 1, "hub::test_key"),
        group("failed", "[REDACTED]: Bad credentials", 1, "hub::test_login[[REDACTED]]"),
        group("skipped", f"{long_reason}[REDACTED]", 1, "hub::test_mirror"),
        group("skipped", "webhook down: [REDACTED]", 1, "hub::test_notify"),  # not xoxb-N-N-Yt6Ur5...
    ]
    assert (kb.attachments_path(entry) / "cases.tsv").read_text() == tsv(
        ("hub::test_key", "failed", "[REDACTED]"),
        ("hub::test_login[[REDACTED]]", "failed", "[REDACTED]: Bad credentials"),
        ("hub::test_mirror", "skipped", f"{long_reason}[REDACTED]"),
        ("hub::test_notify", "skipped", "webhook down: [REDACTED]"),
        ("hub::test_s3", "error", "denied"),
    )
    stored = "\n".join(p.read_text() for p in kb.entries_path.rglob("*") if p.is_file())  # the XML too
    assert [s.id for s in SECRETS if s.probe in stored] == []


def test_a_message_of_megabytes_is_masked_once_where_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ingest.importers.junit
    from ingest.importers.junit import read_junit

    token = next(s.value for s in SECRETS if s.id == "github-ghp")
    message = f"RuntimeError: login with {token} failed " + "x" * 16_000_000
    (tmp_path / "big.xml").write_text(
        f'<testsuite name="s"><testcase classname="t" name="big"><failure message="{message}">'
        f"{message}\nE   RuntimeError: it broke</failure></testcase></testsuite>"
    )
    masked: list[int] = []
    real = ingest.importers.junit.redact_text
    monkeypatch.setattr(ingest.importers.junit, "redact_text", lambda text: masked.append(len(text)) or real(text))
    work = tmp_path / "work"
    work.mkdir()
    imported = read_junit([tmp_path / "big.xml"], work)
    # What the entry keeps of it (the reason, the group) is masked; the file itself is masked once, when attached.
    assert sum(masked) < 1_000_000, masked
    cases = (work / "cases.tsv").read_text()
    assert token not in cases and "RuntimeError: login with" in cases
    assert "RuntimeError" in imported.body and token not in imported.body
