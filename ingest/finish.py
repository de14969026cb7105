"""Close a run entry: its outcome, what the run handed over, the failure class, the output tail, attachments.

One function serves every way a run ends: `kb record` after its command exits, a run recorded after the
fact, and a `running` entry whose recorder was killed (settled later as `killed`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest import rank_summaries, steps
from ingest.frameworks.integration import metric_names
from ingest.runfolder import Folded, fold_events
from kb.model.entry import Entry, iso, parse_time
from kb.store.knowledge_base import KnowledgeBase, is_text_name, shown_name

if TYPE_CHECKING:
    from ingest.signatures import Finding

OUTPUT_LOG = "output.log"
GIT_DIFF = "git.diff"
RUN_FOLDER = "run"
# An entry lists at most this many attachments: each is four values of its front matter, which holds 200,000.
ATTACHMENTS_LISTED = 10_000
RUN_FILES_KEPT = ATTACHMENTS_LISTED - 100  # a run folder copied in leaves room for kb's own files
TAIL_BLOCK = 64 * 1024
# Statuses that call for a failure section, and the class used when no evidence says more.
DEFAULT_CLASS = {"failed": "crash", "killed": "crash", "interrupted": "interrupted"}


@dataclass
class Outcome:
    status: str
    ended: datetime | None = None
    exit_code: int | None = None
    signal: str | None = None
    wall_s: float | None = None  # measured on a monotonic clock where kb ran the command itself
    observed: dict[str, Any] | None = None  # how kb saw it end: the weakest word on the failure
    stated: dict[str, Any] | None = None  # what a person said: the strongest


def finish(
    kb: KnowledgeBase, entry: Entry, outcome: Outcome, logs: tuple[Path, ...] = (), output: Path | None = None
) -> Entry:
    """Write the entry's final state. `output` is the log whose tail the body shows (the command's output by
    default); it and `logs` are searched for failure signatures."""
    data = entry.data
    data["status"] = outcome.status
    if "command" in data:
        data["command"]["exit_code"] = outcome.exit_code
        data["command"]["signal"] = outcome.signal
    timings = data.setdefault("timings", {})
    if outcome.ended is not None:
        timings["ended"] = iso(outcome.ended)
        started = timings.get("started")
        if outcome.wall_s is not None:
            timings["wall_s"] = round(outcome.wall_s, 3)
        # A figure already there is the run's own, on its monotonic clock (run.json); timestamps keep only seconds.
        elif started and not isinstance(timings.get("wall_s"), (int, float)):
            wall = outcome.ended - parse_time(started)
            timings["wall_s"] = round(max(wall.total_seconds(), 0.0), 3)
    if not timings:
        del data["timings"]
    folder = kb.attachments_path(entry)
    # the run wrote these itself; they are published with the entry
    masking = [f"{RUN_FOLDER}/{said}" for said in kb.mask_files(folder / RUN_FOLDER)]
    folded = fold_events(entry, folder / RUN_FOLDER) if (folder / RUN_FOLDER).is_dir() else Folded()
    _figures_from_stream(entry, folder / RUN_FOLDER, folded)
    _ranks_from_files(entry, folder / RUN_FOLDER)
    output = output or folder / OUTPUT_LOG
    _fallbacks_from_output(entry, output)
    _backend_evidence_from_output(entry, output)
    _neuron_compile_settings(entry, folded)
    _settle_failure(entry, outcome, tuple(dict.fromkeys((output, *logs))))
    entry.body = _body(kb, entry, folded, output)
    unnamed: list[str] = []
    unlisted: list[str] = []
    entry.data["attachments"] = list_attachments(kb, entry, unnamed, unlisted)
    if not entry.data["attachments"]:
        del entry.data["attachments"]
    if unnamed or unlisted or masking:
        problems = data.setdefault("provenance", {}).setdefault("capture_problems", [])
        problems += [f"{path}: not listed as an attachment, its name is not UTF-8 text" for path in unnamed]
        problems += masking
        if unlisted:
            problems.append(
                f"too many files: {len(unlisted):,} files past the first {ATTACHMENTS_LISTED:,} in path order are "
                f"not listed as attachments (they stay in {kb.relative(entry, kb.attachments_path(entry))}), from "
                f"{unlisted[0]}"
            )
    kb.save(entry)
    return entry


def _figures_from_stream(entry: Entry, run_folder: Path, folded: Folded) -> None:
    """A run killed before it wrote its figures (SIGKILL, the OOM killer) still streamed its steps: use them."""
    stream = steps.read_stream(run_folder)
    timings = entry.data.get("timings") or {}
    if stream is None or not stream["steps"] or "first_step_s" in timings:
        return  # nothing streamed, or the run wrote its own figures
    found, rates = steps.figures(stream)
    entry.data["timings"] = {**timings, **{key: value for key, value in found.items() if key not in timings}}
    metrics = entry.data.setdefault("metrics", {})
    for name, metric in rates.items():
        metrics.setdefault(name, metric | {"better": "higher"})
    for logged, name in metric_names(stream["logs"]).items():
        numbers = [(step, value) for step, value in stream["logs"][logged] if isinstance(value, (int, float))]
        if numbers and name not in metrics:
            metrics[name] = {"value": numbers[-1][1], "step": numbers[-1][0]}
    if not metrics:
        del entry.data["metrics"]
    folded.notes.append(
        f"The run stopped before it wrote its own figures: the timings and metrics here are from the "
        f"{len(stream['steps'])} steps it streamed to {steps.STREAM} up to its last flush."
    )


def _ranks_from_files(entry: Entry, run_folder: Path) -> None:
    """When rank 0 never gathered the ranks (it died, or was stopped), their own files tell."""
    summaries = rank_summaries.read_summaries(run_folder)
    if "ranks" in entry.data or not summaries:
        return
    world = max(int(s.get("world_size") or 1) for s in summaries)
    if world > 1:
        entry.data["ranks"] = rank_summaries.section(summaries, world)


def _fallbacks_from_output(entry: Entry, output: Path) -> None:
    """A CPU-fallback warning in the run's own output overrules a verdict that saw none.

    The output covers the whole process: a once-per-process warning given before an instrumented run began
    (or in a run kb could not watch) is there even when no watch saw it.
    """
    section = entry.data.get("fallbacks")
    if not output.is_file() or (isinstance(section, dict) and section.get("stayed_on_device") is False):
        return
    from ingest.fallback_text import may_fall_back, ops_named, scan_output

    if not isinstance(section, dict) and not may_fall_back(entry.data.get("backend"), entry.data.get("versions")):
        return  # nothing falls back to the CPU from the CPU

    found = scan_output(output)
    if not found:
        return
    section = dict(section) if isinstance(section, dict) else {"target": entry.data.get("backend")}
    ops = sorted({op for _, line in found for op in ops_named(line) if op})
    what = f"{len(ops)} operator{'s' if len(ops) != 1 else ''} ({', '.join(ops[:5])})" if ops else "work"
    section["stayed_on_device"] = False
    section["summary"] = f"Not all work stayed on the device: the run's output says {what} fell back to the CPU."
    section["evidence"] = [
        *(section.get("evidence") or []),
        *(f"{OUTPUT_LOG}:{number}: {line}" for number, line in found[:5]),
    ]
    section["output_ops"] = ops
    entry.data["fallbacks"] = section


def _backend_evidence_from_output(entry: Entry, output: Path) -> None:
    """What the backends printed in the run's output: the Neuron compile cache (hits, cached failures that are
    not retried, its path), torch_xla's compile-cause analysis (PT_XLA_DEBUG_LEVEL)."""
    if not output.is_file():
        return
    from ingest.backend_evidence import neuron_from_output, xla_debug_from_output

    for name, read in (("neuron_cache", neuron_from_output), ("xla_debug", xla_debug_from_output)):
        found = read(output)
        if found is not None:
            entry.data.setdefault("backend_evidence", {})[name] = found


def _neuron_compile_settings(entry: Entry, folded: Folded) -> None:
    """torch.compile settings the run states that TorchNeuron documents it does not honour: warnings, quoted."""
    from ingest.backend_evidence import neuron_compile_settings

    settings = entry.data.get("settings")
    found = neuron_compile_settings(entry.data.get("backend"), settings if isinstance(settings, dict) else {})
    if found is None:
        return
    entry.data.setdefault("backend_evidence", {})["neuron_compile"] = found
    ignored, rejected = found.get("mode_ignored"), found.get("dynamic_rejected")
    if ignored:
        said = ignored["documented"]
        folded.notes.append(f"torch.compile mode `{ignored['mode']}` has no effect on Neuron, whose documentation "
                            f"says: “{said}” The figures are those of the default mode.")  # fmt: skip
    if rejected:
        said = rejected["documented"]
        folded.notes.append(f"The run asks torch.compile for dynamic=True; Neuron's documentation says: “{said}”")


def _settle_failure(entry: Entry, outcome: Outcome, logs: tuple[Path, ...]) -> None:
    """Failure details by strength: a person's words, then the run's own report (events), then log
    signatures, then how kb saw the command end."""
    data = entry.data
    if outcome.status not in DEFAULT_CLASS:
        return
    observed = outcome.observed or {}
    failure = {**(data.get("failure") or {}), **(outcome.stated or {})}
    if "message" not in failure and outcome.status == "failed":
        # A run that did not say why: the exceptions its processes printed say more than "exit code N" (a
        # signal, kb's own or the kernel's, is better told by how kb saw the command end).
        _message_from_exceptions(failure, logs)
    if "class" in (outcome.stated or {}):
        failure["assigned"] = "manual"
    elif "class" not in failure:
        found = None if "class" in observed else _propose(logs)
        if found is not None:
            path, finding = found
            failure["class"] = finding.failure_class
            failure["evidence"] = f"{path.name}:{finding.line}: {finding.text}"
            failure.setdefault("message", finding.text)
        else:
            failure["class"] = observed.get("class", DEFAULT_CLASS[outcome.status])
        failure["assigned"] = "auto"
    for key, value in observed.items():
        failure.setdefault(key, value)
    data["failure"] = failure


def _message_from_exceptions(failure: dict[str, Any], logs: tuple[Path, ...]) -> None:
    from ingest.exceptions import failure_message, last_exceptions

    for path in logs:
        raised = last_exceptions(path) if path.is_file() else []
        message = failure_message(raised)
        if message:
            failure["message"] = message
            failure["exceptions"] = [
                {"rank": item.rank, "at": f"{path.name}:{item.line}", "text": item.text} for item in raised[:16]
            ]
            return


def _propose(logs: tuple[Path, ...]) -> tuple[Path, Finding] | None:
    """The most telling finding across all logs, with the log it came from."""
    from ingest import signatures  # compiling its patterns costs a completed run's recording for nothing

    origin: dict[int, tuple[Path, Finding]] = {}
    for path in logs:
        if path.is_file():
            origin.update((id(finding), (path, finding)) for finding in signatures.scan_file(path))
    chosen = signatures.propose([finding for _, finding in origin.values()])
    return None if chosen is None else origin[id(chosen)]


def _body(kb: KnowledgeBase, entry: Entry, folded: Folded, output: Path) -> str:
    parts = [entry.body.rstrip()] if entry.body.strip() else []
    if folded.notes:
        parts.append("## Notes from the run\n\n" + "\n\n".join(folded.notes))
    if folded.skipped:
        listed = "\n".join(f"- {line}" for line in folded.skipped[:50])
        parts.append(f"## Events skipped\n\nThese lines of the run's events could not be used:\n\n{listed}")
    if output.is_file():
        tail, total = tail_lines(output, kb.config.record.tail_lines)
        link = kb.relative(entry, output)
        if total == 0:
            parts.append(f"## Output\n\nThe command printed nothing ([{output.name}]({link}) is empty).")
        else:
            if len(tail) < total:
                shown = f"The last {len(tail)} of {total} lines"
            else:
                shown = "The one line" if total == 1 else f"All {total} lines"
            parts.append(
                f"## Output\n\n{shown}; the whole output is in [{output.name}]({link}).\n\n"
                + fenced("\n".join(tail), "text")
            )
    return "\n\n".join(parts) + "\n" if parts else ""


def fenced(text: str, language: str = "") -> str:
    """A Markdown code block whose fence is longer than any run of backticks inside the text."""
    longest, run = 0, 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def tail_lines(path: Path, count: int) -> tuple[list[str], int]:
    """The last `count` lines of a file and its total line count, reading from the end for the lines."""
    total = 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            total += block.count(b"\n")
        size = handle.tell()
        if size and not _ends_with_newline(handle, size):
            total += 1
        data = b""
        position = size
        while position > 0 and data.count(b"\n") <= count:
            step = min(TAIL_BLOCK, position)
            position -= step
            handle.seek(position)
            data = handle.read(step) + data
    lines = data.decode("utf-8", errors="replace").splitlines()
    return (lines[-count:] if count else []), total


def _ends_with_newline(handle: Any, size: int) -> bool:
    handle.seek(size - 1)
    return handle.read(1) == b"\n"


def list_attachments(
    kb: KnowledgeBase, entry: Entry, unnamed: list[str] | None = None, unlisted: list[str] | None = None
) -> list[dict[str, Any]]:
    """Every file in the entry's attachment folder, with its role and size, in path order, at most
    ATTACHMENTS_LISTED (the paths of the others go to `unlisted`). A file or folder whose name is not UTF-8 text
    (a run may write any bytes) cannot be named in an entry: it stays on disk, unlisted, and its path (bytes
    written \\xNN) goes to `unnamed`."""
    folder = kb.attachments_path(entry)
    if not folder.is_dir():
        return []
    found = []
    for root, dirs, files in os.walk(folder):
        for name in [name for name in dirs if not is_text_name(name)]:
            dirs.remove(name)
            _note_unnamed(kb, entry, Path(root, name), unnamed)
        dirs.sort()
        for name in sorted(files):
            path = Path(root, name)
            if name.startswith("."):
                continue
            if not is_text_name(name):
                _note_unnamed(kb, entry, path, unnamed)
                continue
            if len(found) == ATTACHMENTS_LISTED:
                if unlisted is not None:
                    unlisted.append(kb.relative(entry, path))
                continue
            found.append({"path": kb.relative(entry, path), "role": _role(path, folder), "bytes": path.stat().st_size})
    return found


def _note_unnamed(kb: KnowledgeBase, entry: Entry, path: Path, unnamed: list[str] | None) -> None:
    if unnamed is not None:
        unnamed.append(shown_name(kb.relative(entry, path)))


def _role(path: Path, folder: Path) -> str:
    relative = path.relative_to(folder).as_posix()
    if relative == OUTPUT_LOG:
        return "output"
    if relative == GIT_DIFF:
        return "diff"
    if relative == f"{RUN_FOLDER}/events.jsonl":
        return "events"
    if path.suffix in (".log", ".txt"):
        return "log"
    return "file"
