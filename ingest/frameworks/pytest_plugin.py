"""A pytest plugin that records a test run as a coverage entry: `pytest --kb --kb-workload W --kb-backend B`.

Registered through the `pytest11` entry point, so it is loaded wherever kb is installed, and does nothing
unless `--kb` is given (it only adds its options). With `--kb`, pytest's own JUnit XML writer records the
run (to the `--junitxml` file when one is given, else to a temporary one), and at the end the file becomes
an entry exactly as `kb ingest junit` makes it (ingest/importers/junit.py): passed, failed, errors, skipped with their
reasons, expected failures, durations; and, since the plugin runs in the test process, the entry also gets
that process's environment (versions, hardware, git state), which a file read later cannot tell.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

TOOL = "pytest --kb"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kb", "recording the test run as a kb coverage entry")
    group.addoption("--kb", action="store_true", default=False, help="Record this test run as a kb coverage entry.")
    group.addoption("--kb-workload", metavar="NAME", help="The workload the tests exercise (e.g. flex-attention).")
    group.addoption("--kb-backend", metavar="NAME", help="The backend they ran on (e.g. neuron).")
    group.addoption("--kb-mode", metavar="MODE", help="eager or compiled.")
    group.addoption("--kb-tag", metavar="TAG", action="append", default=[], help="A tag for the entry (repeatable).")
    group.addoption("--kb-title", metavar="TITLE", help="A title (default: from the suite and its counts).")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Before pytest's junitxml plugin configures itself: make sure it writes a file for kb to read."""
    if not config.getoption("kb") or hasattr(config, "workerinput"):  # xdist workers: the controller records
        return
    if not config.pluginmanager.has_plugin("junitxml"):
        _say(config, "--kb needs pytest's junitxml plugin, which is disabled (-p no:junitxml); nothing is recorded")
        return
    work = None
    if not config.option.xmlpath:
        work = tempfile.TemporaryDirectory(prefix="kb-pytest-")
        config.option.xmlpath = str(Path(work.name) / "pytest.xml")
    config.stash[_STATE] = (Path(config.option.xmlpath), work)


def pytest_unconfigure(config: pytest.Config) -> None:
    """After the session: junitxml wrote its file at session finish; read it into an entry."""
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    xml, work = state
    try:
        _record(config, xml)
    except Exception as problem:  # recording must never change the outcome of the tests
        _say(config, f"could not record the test run: {problem}")
    finally:
        if work is not None:
            work.cleanup()


def _record(config: pytest.Config, xml: Path) -> None:
    from ingest import environment
    from ingest.describe import RunInfo
    from ingest.importers.imported import create_imported
    from ingest.importers.junit import read_junit
    from kb.errors import KbError
    from kb.store.knowledge_base import KnowledgeBase

    try:
        kb = KnowledgeBase.find()
    except KbError as problem:
        _say(config, f"{problem}; the results stay in {xml}: `kb ingest junit {xml}` records them")
        return
    info = RunInfo(
        title=config.getoption("kb_title"), workload=config.getoption("kb_workload"),
        backend=config.getoption("kb_backend"), mode=config.getoption("kb_mode"), tags=config.getoption("kb_tag"),
    )  # fmt: skip
    captured = environment.capture(Path.cwd(), [sys.executable, "-m", "pytest", *config.invocation_params.args])
    with tempfile.TemporaryDirectory(prefix="kb-pytest-") as work:
        try:
            imported = read_junit([xml], Path(work))
        except KbError as problem:
            _say(config, str(problem))
            return
        imported.fields["hardware"] = captured["hardware"]
        if captured["environment"]:
            imported.fields["environment"] = captured["environment"]
        git = {k: v for k, v in captured["git"].items() if k != "diff" and v is not None}
        if git:
            imported.fields["git"] = git
        imported.fields["coverage"]["xfailed"] = _expected_failures(imported.files)
        entry = create_imported(kb, imported, info, tool=TOOL, versions=captured["versions"])
    entry.data["provenance"]["environment"] = "run_time"  # captured in the test process itself
    kb.save(entry)
    from kb.terminal.plain import with_path

    _say(config, with_path(f"recorded {entry.id} ({entry.kind}): {imported.body.splitlines()[0]}", entry.path))


def _expected_failures(files: list[tuple[Path, str]]) -> int:
    """How many skips were expected failures (pytest.xfail), from the per-case table read_junit made."""
    from ingest.importers.junit import CASES_NAME

    table = next(path for path, name in files if name == CASES_NAME)
    with table.open(encoding="utf-8") as rows:
        next(rows)  # the header
        cells = (row.rstrip("\n").split("\t", 2) for row in rows)  # case, outcome, reason: no tabs within
        return sum(1 for _, outcome, reason in cells if outcome == "skipped" and reason.startswith("expected failure"))


def _say(config: pytest.Config, text: str) -> None:
    reporter: Any = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"kb: {text}")
    else:
        print(f"kb: {text}", file=sys.stderr)


_STATE = pytest.StashKey[tuple]()
