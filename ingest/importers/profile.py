"""`kb ingest profile TRACE`: a torch.profiler Chrome trace, summarised as evidence.

torch.profiler (through kineto) writes `{"schemaVersion": 1, "deviceProperties": [...], "traceEvents": [...],
"traceName": ..., ...}` with `prof.export_chrome_trace(path)` or `tensorboard_trace_handler` (gzipped with
use_gzip=True). The events that carry time are complete events (`"ph": "X"`, `ts` and `dur` in
microseconds); their `cat` says where they ran: on the host (`cpu_op`, `user_annotation`, `python_function`,
`cuda_runtime`, ...) or on a device (`kernel`, `gpu_memcpy`, `gpu_memset`, `collective_comm`).

The summary splits the profiled window so that each instant counts once, for the first of these that was
busy: device compute, communication, memory copies, host work; else it was idle. So communication and
copies count only their exposed part (what compute did not hide), and host only host work while no device
worked; where a device was traced, `busy_s` keeps each one's whole time. Host work is every host event except the
`ProfilerStep#N` spans, which wrap each step whole and would hide the gaps between its operators.

Operator names and the trace's name are masked (kb.secrets.redact) before they are cut to length, and the
attached trace is masked too, gzipped ones included.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import sys
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ingest.importers.imported import Imported
from ingest.importers.regular import refuse_irregular
from kb.errors import KbError
from kb.secrets.redact import redact_pieces, redact_text
from kb.store.knowledge_base import safe_name

GZIP_MAGIC = b"\x1f\x8b"
GZIP_COPY_ABOVE = 1 << 20  # a plain trace larger than this is attached gzipped (traces compress ~10x)
CHUNK = 1 << 20  # characters read at a time
MAX_VALUE_CHARS = 16 << 20  # no single event comes near this; a value that does is not read
MAX_TIME_US = 1e15 * 1000  # a thousand times today's epoch in microseconds: beyond it a time is no measurement
KNOWN_SCHEMA_VERSIONS = (1,)
TOP = 10
NAME_MAX = 120  # C++ kernel names run to thousands of characters

# kineto's activity type names (libkineto ActivityType.h): the categories a torch.profiler trace is made of.
PYTORCH_CATEGORIES = frozenset(
    {
        "cpu_op", "user_annotation", "gpu_user_annotation", "gpu_memcpy", "gpu_memset", "kernel",
        "external_correlation", "cuda_runtime", "cuda_driver", "cpu_instant_event", "python_function",
        "overhead", "mtia_runtime", "mtia_ccp_events", "mtia_insight", "cuda_sync", "cuda_event",
        "glow_runtime", "cuda_profiler_range", "hpu_op", "xpu_runtime", "xpu_driver", "collective_comm",
        "privateuse1_runtime", "privateuse1_driver",
    }
)  # fmt: skip
COMPUTE_CATEGORIES = frozenset({"kernel"})
COPY_CATEGORIES = frozenset({"gpu_memcpy", "gpu_memset"})
COMMUNICATION_CATEGORIES = frozenset({"collective_comm", "collective", "nccl"})
DEVICE_CATEGORIES = COMPUTE_CATEGORIES | COPY_CATEGORIES | COMMUNICATION_CATEGORIES
# Spans that label or wait rather than work: the profiler's own window, device-side copies of user
# annotations (the kernels under them are counted already), and synchronisation waits.
NOT_WORK_CATEGORIES = frozenset({"trace", "gpu_user_annotation", "cuda_profiler_range", "cuda_sync", "cuda_event"})
# Python frames enclose the operators they call; torch's own tables leave them out of self time, and so does kb.
NOT_OPERATOR_CATEGORIES = frozenset({"python_function"})
COLLECTIVE_KERNEL = re.compile(
    r"nccl|rccl|all[_-]?reduce|all[_-]?gather|reduce[_-]?scatter|all[_-]?to[_-]?all|broadcast", re.IGNORECASE
)
PROFILER_STEP = re.compile(r"ProfilerStep#\d+\Z")
HINT = "kb reads torch.profiler traces (export_chrome_trace)"
NUMBERS = (int, float)
_SPACE = re.compile(r"[ \t\n\r]*")

Interval = tuple[int, int]  # start and end in integer nanoseconds: unions and sums stay exact


def read_trace(path: Path, workdir: Path) -> Imported:
    """Summarise a torch.profiler trace; raises KbError (naming the file) for anything else."""
    refuse_irregular(path, "the trace torch.profiler wrote (.json or .json.gz)")
    tally = _Tally(path.name)
    header = _read_document(path, tally)
    _check_is_pytorch_trace(path.name, header, tally)
    attachment, name = _attachment(path, workdir)
    profile = _profile(tally, name)
    fields: dict[str, Any] = {"profile": profile, "status": "completed"}
    if "steps" in profile:
        fields["timings"] = {"step_s": {"median": profile["steps"]["median_s"], "count": profile["steps"]["count"]}}
    trace_name = header.get("traceName")
    trace_name = redact_text(trace_name) if isinstance(trace_name, str) and trace_name.strip() else path.name
    return Imported(
        title=f"Profile: {_plain_stem(trace_name)}",
        kind="run",
        fields=fields,
        body=_body(profile),
        files=[(attachment, name)],
    )


# Reading


class _Stream:
    """A JSON document read a chunk at a time, one value at a time.

    The standard library has no streaming JSON parser, and json.load holds the whole document as Python
    objects (several times the file's size: gigabytes for the traces of a large model). Here the top-level
    object is walked by hand and each event is decoded alone, so memory holds a chunk of text and what
    the summary keeps per event (an interval and a name), not the document.
    """

    def __init__(self, handle: TextIO, name: str):
        self.handle = handle
        self.name = name
        self.decoder = json.JSONDecoder()
        self.text = ""
        self.pos = 0
        self.at_end = False
        # Where self.text begins in the file, for error positions.
        self.dropped_chars = 0
        self.dropped_bytes = 0
        self.dropped_lines = 0
        self.line_start = 0

    def _more(self) -> bool:
        """Read the next chunk, dropping the text already decoded; False at the end of the file."""
        if self.at_end:
            return False
        chunk = self.handle.read(CHUNK)
        if not chunk:
            self.at_end = True
            return False
        done = self.text[: self.pos]
        newline = done.rfind("\n")
        if newline >= 0:
            self.line_start = self.dropped_chars + newline + 1
        self.dropped_lines += done.count("\n")
        self.dropped_bytes += len(done.encode("utf-8"))
        self.dropped_chars += self.pos
        self.text = self.text[self.pos :] + chunk
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not white space, without taking it; "" at the end of the file."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text) or not self._more():
                return self.text[self.pos : self.pos + 1]

    def take(self, expected: str) -> str:
        """The next character, which must be one of `expected` (the first named in errors, as json does)."""
        char = self.peek()
        if not char or char not in expected:
            raise self.error(json.JSONDecodeError(f"Expecting {expected[0]!r} delimiter", self.text, self.pos))
        self.pos += 1
        return char

    def value(self) -> Any:
        """The next JSON value, reading more of the file while the text so far ends inside it."""
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.text) - self.pos < MAX_VALUE_CHARS and self._more():
                    continue
                if not self.at_end:
                    raise KbError(
                        f"{self._where(exc.pos)}: one JSON value longer than {MAX_VALUE_CHARS >> 20} M characters; "
                        f"{HINT}, whose events are small"
                    ) from None
                raise self.error(exc) from None
            except RecursionError:
                raise KbError(f"{self._where(self.pos)}: JSON nested too deeply; {HINT}") from None
            except ValueError as exc:  # a number json will not convert, e.g. one of thousands of digits
                raise KbError(f"{self._where(self.pos)}: not a usable JSON value ({exc}); {HINT}") from None
            if end < len(self.text) or not self._more():  # a number at the end of the text may go on
                self.pos = end
                return value

    def error(self, exc: json.JSONDecodeError, hint: str = "is the file complete?") -> KbError:
        return KbError(f"{self._where(exc.pos)}: not valid JSON ({exc.msg}); {hint}")

    def _where(self, pos: int) -> str:
        before = self.text[:pos]
        newline = before.rfind("\n")
        line_start = self.dropped_chars + newline + 1 if newline >= 0 else self.line_start
        char = self.dropped_chars + pos
        line = self.dropped_lines + before.count("\n") + 1
        offset = self.dropped_bytes + len(before.encode("utf-8"))
        return f"{self.name}: line {line} column {char - line_start + 1} (byte {offset})"


def _read_document(path: Path, tally: _Tally) -> dict[str, Any]:
    """The top-level fields other than traceEvents; each event goes to `tally` as it is read."""
    try:
        with _open_text(path) as handle:
            return _walk_document(_Stream(handle, path.name), tally)
    except EOFError:
        raise KbError(
            f"{path.name}: not a complete gzip file (it ends inside the compressed data); was it copied while "
            "being written?"
        ) from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise KbError(
            f"{path.name}: not a valid gzip file ({exc}); give the trace as torch.profiler wrote it"
        ) from None
    except OSError as exc:
        raise KbError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _open_text(path: Path) -> TextIO:
    """The trace as text, decompressed when it is gzipped; the first bytes decide, not the name."""
    if not path.exists():
        raise KbError(f"{path}: no such file; give the trace torch.profiler wrote (.json or .json.gz)")
    if path.is_dir():
        raise KbError(
            f"{path} is a folder; give one trace file in it (tensorboard_trace_handler writes *.pt.trace.json)"
        )
    # newline="" keeps \r\n as two characters, so that byte offsets in errors stay true.
    if _is_gzipped(path):
        return gzip.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")  # type: ignore[return-value]
    return open(path, encoding="utf-8-sig", errors="replace", newline="")


def _is_gzipped(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def _walk_document(stream: _Stream, tally: _Tally) -> dict[str, Any]:
    first = stream.peek()
    if first != "{":
        if first != "[":
            stream.value()  # text that is not JSON at all fails here, with its position
        raise KbError(f"{stream.name}: not a Chrome trace: no traceEvents; {HINT}")
    stream.take("{")
    header: dict[str, Any] = {}
    if stream.peek() == "}":
        stream.take("}")
    else:
        while True:
            if stream.peek() != '"':
                raise stream.error(
                    json.JSONDecodeError("Expecting property name enclosed in double quotes", stream.text, stream.pos)
                )
            key = stream.value()
            stream.take(":")
            if key == "traceEvents" and stream.peek() == "[":
                header[key] = _walk_events(stream, tally)
            else:
                header[key] = stream.value()
            if stream.take(",}") == "}":
                break
    if stream.peek():
        raise stream.error(json.JSONDecodeError("Extra data", stream.text, stream.pos), "text follows the trace")
    return header


def _walk_events(stream: _Stream, tally: _Tally) -> list[Any]:
    """Tally every event of the traceEvents array; returns an empty list in its place in the header."""
    stream.take("[")
    if stream.peek() == "]":
        stream.take("]")
        return []
    while True:
        tally.add(stream.value())
        if stream.take(",]") == "]":
            return []


@dataclass
class _Tally:
    """What the summary needs from the events, kept as they stream past."""

    name: str
    events: int = 0  # every event, of any phase
    complete: int = 0
    categories: Counter[str] = field(default_factory=Counter)
    first: int | None = None
    last: int | None = None
    host: list[Interval] = field(default_factory=list)
    compute: list[Interval] = field(default_factory=list)
    communication: list[Interval] = field(default_factory=list)
    copies: list[Interval] = field(default_factory=list)
    threads: dict[tuple[Any, Any], list[tuple[int, int, str]]] = field(default_factory=lambda: defaultdict(list))
    device_ops: dict[str, list[int]] = field(default_factory=dict)  # name -> [nanoseconds, calls]
    steps: list[int] = field(default_factory=list)

    def add(self, event: Any) -> None:
        index = self.events
        self.events += 1
        if not isinstance(event, dict):
            raise KbError(f"{self.name}: traceEvents[{index}] is {type(event).__name__}, not an event object; {HINT}")
        category = event.get("cat")
        category = category.lower() if isinstance(category, str) else ""  # kineto once wrote "Kernel"
        if category:
            self.categories[category] += 1
        if event.get("ph") != "X":
            return
        interval = _interval(event, index, self.name)
        name = sys.intern(str(event.get("name", "")))  # a million events share a few hundred names
        self.complete += 1
        if self.first is None or interval[0] < self.first:
            self.first = interval[0]
        if self.last is None or interval[1] > self.last:
            self.last = interval[1]
        if category in NOT_WORK_CATEGORIES:
            return
        if category in DEVICE_CATEGORIES:
            self._add_device(category, name, interval)
        elif category == "user_annotation" and PROFILER_STEP.match(name):
            self.steps.append(interval[1] - interval[0])
        else:
            self.host.append(interval)
            if category not in NOT_OPERATOR_CATEGORIES:
                self.threads[(_hashable(event.get("pid")), _hashable(event.get("tid")))].append((*interval, name))

    def _add_device(self, category: str, name: str, interval: Interval) -> None:
        if category in COPY_CATEGORIES:
            self.copies.append(interval)
        elif category in COMMUNICATION_CATEGORIES or COLLECTIVE_KERNEL.search(name):
            self.communication.append(interval)
        else:
            self.compute.append(interval)
        total = self.device_ops.setdefault(name, [0, 0])
        total[0] += interval[1] - interval[0]
        total[1] += 1


def _hashable(value: Any) -> Any:
    """A pid or tid as a key: numbers and strings as they are, anything else (a list, an object) as its JSON."""
    return value if isinstance(value, (str, int, float)) or value is None else json.dumps(value, sort_keys=True)


def _interval(event: dict[str, Any], index: int, trace: str) -> Interval:
    start, duration = event.get("ts"), event.get("dur")
    if type(start) not in NUMBERS or type(duration) not in NUMBERS:  # type(), not isinstance: true is no time
        raise KbError(
            f'{trace}: traceEvents[{index}] ({_short(str(event.get("name")), 60)!r}) is a complete event ("ph": "X") '
            f"without numeric ts and dur; {HINT}"
        )
    # NaN fails both comparisons; infinities and numbers of hundreds of digits are no measured time either.
    if not (abs(start) <= MAX_TIME_US and abs(duration) <= MAX_TIME_US):  # type: ignore[arg-type]
        raise KbError(
            f"{trace}: traceEvents[{index}] ({_short(str(event.get('name')), 60)!r}) has ts {_short(repr(start), 40)} "
            f"and dur {_short(repr(duration), 40)}, not times in microseconds; {HINT}"
        )
    begin = round(start * 1000)  # type: ignore[operator]
    # A negative duration is no measured time: count it as none rather than reject the whole trace.
    return begin, begin + max(0, round(duration * 1000))  # type: ignore[operator]


def _check_is_pytorch_trace(trace: str, header: dict[str, Any], tally: _Tally) -> None:
    if "traceEvents" not in header:
        raise KbError(f"{trace}: not a Chrome trace: no traceEvents; {HINT}")
    if not isinstance(header["traceEvents"], list):
        kind = type(header["traceEvents"]).__name__
        raise KbError(f"{trace}: not a Chrome trace: traceEvents is {kind}, not a list of events; {HINT}")
    version = header.get("schemaVersion")
    if "schemaVersion" in header and (isinstance(version, bool) or version not in KNOWN_SCHEMA_VERSIONS):
        known = ", ".join(map(str, KNOWN_SCHEMA_VERSIONS))
        raise KbError(
            f"{trace}: schemaVersion {_short(json.dumps(version), 40)} is not a torch.profiler trace version kb knows "
            f"(expected {known}); was it written by a newer PyTorch, or by another profiler?"
        )
    if not PYTORCH_CATEGORIES & set(tally.categories) and (tally.categories or "schemaVersion" not in header):
        common = tally.categories.most_common(5)
        found = ", ".join(f"{_short(str(name), 40)} ({count})" for name, count in common) or "no categories"
        raise KbError(
            f"{trace}: no torch.profiler events: found {found}; expected categories such as cpu_op, "
            f"user_annotation, kernel, gpu_memcpy; {HINT}"
        )
    if not tally.complete:
        raise KbError(
            f'{trace}: no complete events ("ph": "X"), so no time to summarise; was the profiler stopped '
            "before an active step?"
        )


def _attachment(path: Path, workdir: Path) -> tuple[Path, str]:
    """The trace to attach: as it is when plain and small (kb masks secrets in text as it attaches it), else a
    gzipped copy with secrets masked, streamed in bounded memory; kb would attach gzip byte for byte."""
    name = safe_name(path.name)
    gzipped = _is_gzipped(path)
    if not gzipped and path.stat().st_size <= GZIP_COPY_ABOVE:
        return path, name
    copy = workdir / (name if gzipped else f"{name}.gz")  # a gzipped trace keeps its name
    try:
        with _open_text(path) as source, gzip.open(copy, "wt", encoding="utf-8", newline="", compresslevel=6) as target:
            for piece in redact_pieces(source, CHUNK, MAX_VALUE_CHARS):
                target.write(piece)
    except OSError as exc:
        raise KbError(f"cannot compress {path}: {exc.strerror or exc}") from None
    return copy, copy.name


# Summarising


def _profile(tally: _Tally, attachment: str) -> dict[str, Any]:
    assert tally.first is not None and tally.last is not None  # checked: there are complete events
    total = tally.last - tally.first
    split = _split(tally, total)
    profile: dict[str, Any] = {"trace": attachment, "total_s": _seconds(total)}
    profile["split_s"] = {part: _seconds(ns) for part, ns in split.items()}
    device = tally.compute + tally.communication + tally.copies
    if device:
        profile["device_idle_s"] = _seconds(total - _union_length(device))
        profile["busy_s"] = {
            "device_compute": _seconds(_union_length(tally.compute)),
            "memory_copy": _seconds(_union_length(tally.copies)),
            "communication": _seconds(_union_length(tally.communication)),
            "host": _seconds(_union_length(tally.host)),
        }
    profile["top_host_ops"] = _top_host_ops(tally.threads)
    if tally.device_ops:
        profile["top_device_ops"] = _top_device_ops(tally.device_ops)
    if tally.steps:
        profile["steps"] = {"count": len(tally.steps), "median_s": _seconds(round(statistics.median(tally.steps)))}
    profile["events"] = tally.complete
    return profile


def _split(tally: _Tally, total: int) -> dict[str, int]:
    """Each instant once, for the first busy part in this order (see the module's docstring)."""
    order = (
        ("device_compute", tally.compute),
        ("communication", tally.communication),
        ("memory_copy", tally.copies),
        ("host", tally.host),
    )
    split: dict[str, int] = {}
    covered: list[Interval] = []
    busy_before = 0
    for part, intervals in order:
        covered += intervals
        busy = _union_length(covered)
        split[part] = busy - busy_before
        busy_before = busy
    split["idle"] = total - busy_before
    return {part: split[part] for part in ("device_compute", "memory_copy", "communication", "host", "idle")}


def _union_length(intervals: Iterable[Interval]) -> int:
    length = 0
    end = None
    for start, stop in sorted(intervals):
        if end is None or start >= end:
            length += stop - start
            end = stop
        elif stop > end:
            length += stop - end
            end = stop
    return length


def _top_host_ops(threads: dict[tuple[Any, Any], list[tuple[int, int, str]]]) -> list[dict[str, Any]]:
    """Operators by self time: each one's duration less its direct children's, nested per thread."""
    ops: dict[str, list[int]] = {}  # name -> [self, total, calls]
    for events in threads.values():
        for name, own, whole in _self_times(events):
            totals = ops.setdefault(name, [0, 0, 0])
            totals[0] += own
            totals[1] += whole
            totals[2] += 1
    ranked = sorted(ops.items(), key=lambda item: (-item[1][0], item[0]))[:TOP]
    return [
        # Masked before it is cut: a secret cut short no longer looks like one.
        {"name": _short(redact_text(name)), "self_s": _seconds(own), "total_s": _seconds(whole), "calls": calls}
        for name, (own, whole, calls) in ranked
    ]


def _self_times(events: list[tuple[int, int, str]]) -> Iterator[tuple[str, int, int]]:
    """(name, self, total) for one thread's events; an event's parent is the innermost one still open.

    An event inside another of its name (aten::sum calling aten::sum) adds no total time of its own, so
    that a name's total is never counted twice.
    """
    events.sort(key=lambda event: (event[0], -event[1]))  # a parent starting with its child comes first
    children = [0] * len(events)
    repeated = [False] * len(events)
    open_events: list[int] = []
    open_names: Counter[str] = Counter()
    for index, (start, end, name) in enumerate(events):
        while open_events and events[open_events[-1]][1] <= start:
            open_names[events[open_events.pop()][2]] -= 1
        if open_events:
            parent = open_events[-1]
            children[parent] += min(end, events[parent][1]) - start
        repeated[index] = open_names[name] > 0
        open_events.append(index)
        open_names[name] += 1
    for (start, end, name), inside, inner in zip(events, children, repeated, strict=True):
        yield name, max(0, end - start - inside), 0 if inner else end - start


def _top_device_ops(device_ops: dict[str, list[int]]) -> list[dict[str, Any]]:
    ranked = sorted(device_ops.items(), key=lambda item: (-item[1][0], item[0]))[:TOP]
    return [
        {"name": _short(redact_text(name)), "total_s": _seconds(ns), "calls": calls} for name, (ns, calls) in ranked
    ]


def _seconds(nanoseconds: int | float) -> float:
    """Seconds to 4 significant digits: more than a trace's timing is worth, and stable under re-reading."""
    return float(f"{nanoseconds / 1e9:.4g}")


def _short(name: str, limit: int = NAME_MAX) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _plain_stem(name: str) -> str:
    stem = Path(name).name
    for suffix in (".gz", ".json"):
        stem = stem.removesuffix(suffix)
    return stem or name


# The Markdown body

PART_LABELS = {
    "host": "host",
    "device_compute": "device compute",
    "memory_copy": "memory copies",
    "communication": "communication",
    "idle": "idle",
}


def _body(profile: dict[str, Any]) -> str:
    return "\n".join([_summary(profile), "", *_split_table(profile), *_op_tables(profile)])


def _summary(profile: dict[str, Any]) -> str:
    total = profile["total_s"]
    shares = ", ".join(f"{label} {_share(profile['split_s'][part], total)}" for part, label in PART_LABELS.items())
    text = f"Profiled {_human(total)}: {shares}"
    if profile["top_host_ops"]:
        top = profile["top_host_ops"][0]
        text += f"; top host op {_short(top['name'], 60)} ({_human(top['self_s'])} self)"
    if profile.get("top_device_ops"):
        top = profile["top_device_ops"][0]
        text += f"; top device op {_short(top['name'], 60)} ({_human(top['total_s'])})"
    return text + "."


def _split_table(profile: dict[str, Any]) -> list[str]:
    busy = profile.get("busy_s", {})
    lines = ["## Time split", "", "| Part | Seconds | Share |" + (" Busy, overlaps included (s) |" if busy else "")]
    lines.append("|---|---:|---:|" + ("---:|" if busy else ""))
    for part, label in PART_LABELS.items():
        seconds = profile["split_s"][part]
        cells = [label, f"{seconds:g}", _share(seconds, profile["total_s"])]
        if busy:
            cells.append(f"{busy[part]:g}" if part in busy else "")
        lines.append("| " + " | ".join(cells) + " |")
    facts = [f"{profile['events']} complete events", f"trace attached as `{profile['trace']}`"]
    if "steps" in profile:
        facts.insert(0, f"{profile['steps']['count']} steps, median {_human(profile['steps']['median_s'])}")
    if "device_idle_s" in profile:
        facts.append(f"device idle {_human(profile['device_idle_s'])}")
    text = "; ".join(facts)
    return [*lines, "", text[0].upper() + text[1:] + "."]


def _op_tables(profile: dict[str, Any]) -> list[str]:
    lines = ["", "## Top host operators by self time", "", "| Operator | Self (s) | Total (s) | Calls |"]
    lines.append("|---|---:|---:|---:|")
    lines += [
        f"| {_cell(op['name'])} | {op['self_s']:g} | {op['total_s']:g} | {op['calls']} |"
        for op in profile["top_host_ops"]
    ]
    if profile.get("top_device_ops"):
        lines += ["", "## Top device operations", "", "| Kernel or copy | Total (s) | Calls |", "|---|---:|---:|"]
        lines += [f"| {_cell(op['name'])} | {op['total_s']:g} | {op['calls']} |" for op in profile["top_device_ops"]]
    return [*lines, ""]


def _cell(name: str) -> str:
    return "`" + name.replace("`", "'").replace("|", "\\|") + "`"


def _share(part: float, total: float) -> str:
    return f"{round(100 * part / total)}%" if total else "0%"


def _human(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"
