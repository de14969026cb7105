"""`kb ingest compile-trace DIR`: what torch.compile did, read from the folder TORCH_TRACE=DIR wrote.

PyTorch writes one structured trace log per process there, `dedicated_log_torch_trace_[rank_N_]*.log`. Each
record is one line: a glog prefix (`V1130 06:46:39.676000 23211 torch/_dynamo/utils.py:2350] `), then a
JSON object whose first key names the event and whose `frame_id`, `frame_compile_id`, `attempt` (and
`compiled_autograd_id`, `rank`) place it in a compile; a record with `has_payload` (the payload's md5) is
followed by its payload, one line per payload line, each starting with a tab. The events read here:

- `dynamo_start`: a frame compile began (its stack's last frame names the function);
- `compilation_metrics`: a frame compile ended: `compile_id` ("0/1"), `co_name`, times (`duration_us`,
  `*_cumulative_compile_time_us`, `entire_frame_compile_time_s`), per-frame cache hit/miss counts,
  `recompile_reason`, `restart_reasons`, `fail_type`/`fail_reason`; `bwd_compilation_metrics` is the same
  for a backward graph, compiled lazily at the first backward() (`*_runtime` variants are not compiles);
- `dynamo_output_graph`: one per FX graph Dynamo produced;
- artifacts (`{"artifact": {"name": ...}}`): `dynamo_graph_break_reason` (payload: the break's message),
  `recompile_reasons` (payload: the failed guards, one string or a JSON list), and
  `fx_graph_cache_{hit,miss,bypass}` / `aotautograd_cache_{hit,miss,bypass}`, one per cache lookup.

The section has the shape of ingest.pytorch.compile_evidence's (kb's in-process watch), with the same key
names where the trace holds the same facts, so that `kb compare` lines them up; `source: torch_trace` says
where it came from. Logs are read line by line and only the short payloads needed are kept (inductor's
output code, also in the log, can be megabytes). `tlparse`, where installed, renders its HTML report too.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ingest.compile_format import CACHE_COUNTERS, break_reason, cache_state, compile_split
from ingest.importers.imported import Imported
from ingest.importers.regular import is_regular
from kb.errors import KbError
from kb.secrets.redact import redact_pieces, redact_text
from kb.store.knowledge_base import REDACT_BLOCK

LOG_GLOB = "dedicated_log_torch_trace_*.log"
LOG_PREFIX = "dedicated_log_torch_trace_"
# `[rank0]:` only reaches ordinary torch logs, but costs nothing to accept.
GLOG_PREFIX = re.compile(rb"(?:\[rank\d+\]:)?[VIWEC]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ [^\n]*?:\d+\] ")
EXPECTED_PREFIX = "V1130 06:46:39.676000 23211 torch/_dynamo/utils.py:2350] "
MAX_LINE = 8 << 20  # PyTorch keeps record metadata under about 1 MB; only payload lines (skipped) run longer
MAX_PAYLOAD_LINES = 80  # a break's reason and a recompile's guards come first; tracebacks follow
MAX_PAYLOAD_LINE_CHARS = 2000
MAX_FRAMES = 50
MAX_REASONS = 20
MAX_REASON_CHARS = 300
SIGNIFICANT = 6
MAX_SECONDS = 1e9  # three decades of compiling: a larger time (or a negative one) is no measurement
GZIP_OVER = 1 << 20
TLPARSE_TIMEOUT_S = 300
COMPILE_EVENTS = ("dynamo_start", "compilation_metrics", "dynamo_output_graph")
KEPT_PAYLOADS = ("dynamo_graph_break_reason", "recompile_reasons")
# artifact -> the in-process counter it stands for (CACHE_COUNTERS), so the cache verdict is reached the same way.
CACHE_ARTIFACTS = {
    "fx_graph_cache_hit": ("inductor", "fxgraph_cache_hit"),
    "fx_graph_cache_miss": ("inductor", "fxgraph_cache_miss"),
    "fx_graph_cache_bypass": ("inductor", "fxgraph_cache_bypass"),
    "aotautograd_cache_hit": ("aot_autograd", "autograd_cache_hit"),
    "aotautograd_cache_miss": ("aot_autograd", "autograd_cache_miss"),
    "aotautograd_cache_bypass": ("aot_autograd", "autograd_cache_bypass"),
}


def read_compile_trace(folder: Path, workdir: Path) -> Imported:
    """The compile evidence in a TORCH_TRACE folder; KbError (and nothing written) when it holds none."""
    logs = _trace_logs(folder)
    trace = _Trace()
    for log in logs:
        trace.read(log)
    if not trace.compiled_logs:
        raise KbError(f"no torch.compile events in {folder}; was the script compiled?")
    section = trace.section()
    files = [_attachable(log, workdir) for log in logs]
    report, note = _tlparse_reports([log for log in logs if log.name in trace.compiled_logs], workdir)
    fields: dict[str, Any] = {"status": "completed", "mode": "compiled", "compile": section}
    if section["compile_s"] > 0:
        fields["timings"] = {"compile_s": section["compile_s"]}
    return Imported(
        title=f"Compile trace: {trace.main_function() or folder.resolve().name}",
        kind="run",
        fields=fields,
        body=_body(section, trace, note),
        files=files + report,
    )


def _trace_logs(folder: Path) -> list[Path]:
    try:
        if not folder.exists():
            raise KbError(f"{folder}: no such folder; give the folder TORCH_TRACE pointed at")
        if not folder.is_dir():
            raise KbError(f"{folder}: not a folder; give the folder TORCH_TRACE pointed at")
        found = sorted(folder.glob(LOG_GLOB))
    except OSError as exc:  # a name too long, a folder that may not be listed
        raise KbError(f"cannot read {folder}: {exc.strerror}; give the folder TORCH_TRACE pointed at") from None
    logs = [path for path in found if is_regular(path)]  # a link could point anywhere on the machine
    if not logs:
        others = f" ({len(found)} links or other files that are not regular files, not read)" if found else ""
        raise KbError(f"{folder}: no TORCH_TRACE logs ({LOG_GLOB}){others}; run with TORCH_TRACE={folder}")
    return logs


def _round(value: float) -> float:
    return float(f"{value:.{SIGNIFICANT}g}")


def _seconds(meta: dict[str, Any], *keys: str, scale: float = 1e-6) -> float | None:
    for key in keys:
        value = meta.get(key)
        # Compared before multiplying: an integer of hundreds of digits does not convert to a float.
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_SECONDS / scale:
            return _round(value * scale)
    return None


def _lookups(value: Any) -> int:
    """A count of cache lookups from a record: a non-negative integer, else none."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _name(value: Any) -> str | None:
    """A function or artifact name from a record: text, else none."""
    return value if isinstance(value, str) and value else None


def _short(text: Any) -> str:
    return redact_text(str(text).strip())[:MAX_REASON_CHARS]


def _meta(record: dict[str, Any], event: str) -> dict[str, Any]:
    """An event's metadata; {} where a hand-edited log has something else there."""
    value = record.get(event)
    return value if isinstance(value, dict) else {}


def _compile_id(record: dict[str, Any]) -> str | None:
    """The compile id as torch's CompileId prints it: "0/1", or "!2/0/1" under compiled autograd."""
    frame, number = (_id_part(record.get(key)) for key in ("frame_id", "frame_compile_id"))
    autograd = _id_part(record.get("compiled_autograd_id"))
    if autograd is not None:
        return f"!{autograd}" + (f"/{frame}/{number}" if frame is not None else "")
    return None if frame is None or number is None else f"{frame}/{number}"


def _id_part(value: Any) -> int | str | None:
    """A part of a compile id: torch writes integers; text is kept, anything else (a list, a mapping) is none."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _cache_verdict(meta: dict[str, Any], kind: str) -> str | None:
    hits = sum(_lookups(meta.get(f"{kind}_{where}_cache_hit_count")) for where in ("local", "remote"))
    misses = sum(_lookups(meta.get(f"{kind}_{where}_cache_miss_count")) for where in ("local", "remote"))
    if misses:
        return "miss"
    return "hit" if hits else None


@dataclass
class _Frame:
    """One frame compile (a compile id); `fields` becomes its row in the section."""

    fields: dict[str, Any]
    recompile: bool
    log: str


@dataclass
class _Record:
    """A parsed record line and, for the artifacts whose payload is read, the start of that payload."""

    data: dict[str, Any]
    log: str
    payload: list[str] | None = None


@dataclass
class _Trace:
    """What the logs say, gathered record by record."""

    frames: dict[tuple[str, str], _Frame] = field(default_factory=dict)
    graphs: int = 0
    breaks: dict[tuple[str, str | None], int] = field(default_factory=dict)
    seen_breaks: set[tuple[str, str, str, str | None]] = field(default_factory=set)
    recompile_guards: list[tuple[tuple[str, str], str]] = field(default_factory=list)
    cache: dict[str, dict[str, int]] = field(default_factory=dict)
    torch: str | None = None
    truncated: list[str] = field(default_factory=list)
    compiled_logs: set[str] = field(default_factory=set)

    def read(self, path: Path) -> None:
        try:
            with open(path, "rb") as handle:
                for record in _records(path, handle, self.truncated):
                    self._take(record)
        except OSError as exc:
            raise KbError(f"cannot read {path}: {exc.strerror}") from None

    def _take(self, record: _Record) -> None:
        data = record.data
        cid = _compile_id(data)
        if any(event in data for event in COMPILE_EVENTS):
            self.compiled_logs.add(record.log)
        if "dynamo_output_graph" in data:
            self.graphs += 1
        if cid is None:
            return
        key = (record.log, cid)
        if "dynamo_start" in data:
            self._frame(key, data)
            stack = _meta(data, "dynamo_start").get("stack")
            if isinstance(stack, list) and stack and isinstance(stack[-1], dict):
                self.frames[key].fields.setdefault("function", _name(stack[-1].get("name")))
        elif "compilation_metrics" in data:
            self._frame_ended(key, data, _meta(data, "compilation_metrics"))
        elif "bwd_compilation_metrics" in data:
            self._backward(key, _meta(data, "bwd_compilation_metrics"))
        elif "artifact" in data:
            self._artifact(key, data, _name(_meta(data, "artifact").get("name")), record.payload)

    def _frame(self, key: tuple[str, str], data: dict[str, Any]) -> _Frame:
        if key not in self.frames:
            fields: dict[str, Any] = {"id": key[1]}
            if _id_part(data.get("rank")) is not None:
                fields["rank"] = data["rank"]
            number = data.get("frame_compile_id")
            self.frames[key] = _Frame(fields, recompile=isinstance(number, int) and number > 0, log=key[0])
        return self.frames[key]

    def _frame_ended(self, key: tuple[str, str], data: dict[str, Any], meta: dict[str, Any]) -> None:
        frame = self._frame(key, data)
        self.torch = self.torch or _name(meta.get("pytorch_version"))
        restarts = meta.get("restart_reasons")
        values = {
            "function": _name(meta.get("co_name")) or frame.fields.get("function"),
            "compile_s": _seconds(meta, "duration_us", "dynamo_cumulative_compile_time_us")
            or _seconds(meta, "entire_frame_compile_time_s", scale=1.0),
            "dynamo_s": _seconds(meta, "dynamo_cumulative_compile_time_us"),
            "aot_autograd_s": _seconds(meta, "aot_autograd_cumulative_compile_time_us"),
            "backend_s": _seconds(meta, "inductor_cumulative_compile_time_us"),  # None on a cache hit
            "fx_cache": _cache_verdict(meta, "inductor_fx"),
            "aot_cache": _cache_verdict(meta, "aotautograd"),
            "recompile_reason": _short(meta["recompile_reason"]) if meta.get("recompile_reason") else None,
            "fail_type": _short(meta["fail_type"]) if meta.get("fail_type") else None,
            "fail_reason": _short(meta["fail_reason"]) if meta.get("fail_type") and meta.get("fail_reason") else None,
            "restarts": len(restarts) if isinstance(restarts, list) and restarts else None,
            # Dynamo gave the frame up (a break in a loop, say): it ran uncompiled, as the in-process watch says.
            "ran_eagerly": True if meta.get("fail_type") else None,
        }
        frame.fields.update({name: value for name, value in values.items() if value is not None})
        for line in str(meta.get("recompile_reason") or "").splitlines():
            if line.strip():
                self.recompile_guards.append((key, line))

    def _backward(self, key: tuple[str, str], meta: dict[str, Any]) -> None:
        seconds = _seconds(meta, "duration_us", "backward_cumulative_compile_time_us") or _seconds(
            meta, "inductor_compile_time_s", scale=1.0
        )
        if key in self.frames and seconds is not None:
            fields = self.frames[key].fields
            fields["backward_s"] = _round(fields.get("backward_s", 0.0) + seconds)

    def _artifact(self, key: tuple[str, str], data: dict[str, Any], name: Any, payload: list[str] | None) -> None:
        if name in CACHE_ARTIFACTS:
            group, counter = CACHE_ARTIFACTS[name]
            counts = self.cache.setdefault(group, {})
            counts[counter] = counts.get(counter, 0) + 1
        elif name == "dynamo_graph_break_reason" and payload is not None:
            reason, where = _graph_break(payload)
            # A restarted compile (attempt 1) may log the same break again: one break per compile and site.
            seen = (key[0], key[1], reason, where)
            if seen not in self.seen_breaks:
                self.seen_breaks.add(seen)
                self.breaks[(reason, where)] = self.breaks.get((reason, where), 0) + 1
        elif name == "recompile_reasons" and payload is not None:
            self._frame(key, data)
            self.recompile_guards += [(key, line) for line in _guard_failures(payload)]

    def main_function(self) -> str | None:
        """The first function compiled that is not a resume function Dynamo made at a graph break."""
        names = (frame.fields.get("function") for frame in self.frames.values())
        return next((name for name in names if name and not name.startswith("torch_dynamo_resume_in_")), None)

    def section(self) -> dict[str, Any]:
        frames = list(self.frames.values())
        several_logs = len({frame.log for frame in frames}) > 1
        rows = [{**frame.fields, **({"log": frame.log} if several_logs else {})} for frame in frames]

        def total(key: str) -> float | None:
            values = [row[key] for row in rows if isinstance(row.get(key), float)]
            return _round(sum(values)) if values else None

        stages = {
            "dynamo": "dynamo_s",
            "aot_autograd": "aot_autograd_s",
            "backend": "backend_s",
            "backward": "backward_s",
        }
        section: dict[str, Any] = {
            "source": "torch_trace",
            "frames": rows[:MAX_FRAMES],
            "frame_count": len(rows),
            # Forward frames and the backward graphs compiled lazily at the first backward(): every compile.
            "compile_s": _round((total("compile_s") or 0.0) + (total("backward_s") or 0.0)),
            "compile_split_s": compile_split(rows),
            "stages_s": {name: value for name, key in stages.items() if (value := total(key)) is not None},
            "stages_nested": True,
            "graphs": self.graphs,
            "graph_breaks": {
                "count": sum(self.breaks.values()),
                "sites": len(self.breaks),
                "reasons": [
                    {"reason": reason, "count": count, **({"at": where} if where else {})}
                    for (reason, where), count in list(self.breaks.items())[:MAX_REASONS]
                ],
            },
            "recompiles": {"count": sum(frame.recompile for frame in frames), "reasons": self._recompile_reasons()},
            # Graphs compiled without a single cache lookup: "bypass", as kb's in-process watch says.
            "cache": cache_state({}, self.cache) or ("bypass" if self.graphs else None),
            "cache_counters": {
                name: self.cache.get(group, {}).get(key, 0) for name, (group, key) in CACHE_COUNTERS.items()
            },
        }
        if len(rows) > MAX_FRAMES:
            section["frames_omitted"] = len(rows) - MAX_FRAMES
        failed = [row["fail_type"] for row in rows if row.get("fail_type")]
        if failed:
            section["fail_types"] = {kind: failed.count(kind) for kind in dict.fromkeys(failed)}
        if self.torch:
            section["torch"] = str(self.torch)
        return section

    def _recompile_reasons(self) -> list[str]:
        """'function: failed guard', as kb's in-process watch writes them; the log gives each one twice."""
        reasons = []
        for key, guard in self.recompile_guards:
            function = self.frames[key].fields.get("function") or "?"
            reasons.append(f"{function}: {_short(guard)}"[:MAX_REASON_CHARS])
        return list(dict.fromkeys(reasons))[:MAX_REASONS]


def _records(path: Path, handle: IO[bytes], truncated: list[str]) -> Iterator[_Record]:
    """The records of one log, each with the payload kept when its artifact is one read here.

    A malformed record line is an error unless it is the last line after good ones: a run killed while
    writing leaves half a line, which is skipped and noted in `truncated`.
    """
    log = path.name
    pending: _Record | None = None
    bad: tuple[int, str] | None = None
    good = False  # a bad first line is no truncation: the file is not a trace
    for number, line, fits in _lines(handle):
        if bad is not None:
            raise KbError(f"{path}:{bad[0]}: not a structured trace record ({bad[1]})")
        if line.startswith(b"\t"):
            if pending is not None and pending.payload is not None and len(pending.payload) < MAX_PAYLOAD_LINES:
                pending.payload.append(line[1:].decode("utf-8", "replace")[:MAX_PAYLOAD_LINE_CHARS])
            continue
        if not line.strip():
            continue
        if pending is not None:
            yield pending
            pending = None
        data, why = _parse_record(line, fits)
        if data is None:
            if not good:
                raise KbError(f"{path}:{number}: not a structured trace record ({why})")
            bad = (number, why)
            continue
        good = True
        artifact = data.get("artifact")
        wanted = isinstance(artifact, dict) and _name(artifact.get("name")) in KEPT_PAYLOADS and "has_payload" in data
        pending = _Record(data, log, [] if wanted else None)
    if pending is not None:
        yield pending
    if bad is not None:
        truncated.append(f"{path.name}:{bad[0]}")


def _lines(handle: IO[bytes]) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line without its newline, whether it fits MAX_LINE); a longer line's rest is skipped."""
    number = 0
    while True:
        line = handle.readline(MAX_LINE)
        if not line:
            return
        number += 1
        fits = line.endswith(b"\n") or len(line) < MAX_LINE
        if not fits:
            while (rest := handle.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                pass
        yield number, line.rstrip(b"\r\n"), fits


def _parse_record(line: bytes, fits: bool) -> tuple[dict[str, Any] | None, str]:
    """The record's JSON object, or None and why the line is not a record."""
    if not fits:
        return None, f"a line longer than {MAX_LINE >> 20} MiB"
    match = GLOG_PREFIX.match(line)
    if match is None:
        if b"\0" in line or not _is_utf8(line):
            return None, "binary data, not a text log"
        return None, f"expected a glog prefix like '{EXPECTED_PREFIX}' and then a JSON object"
    try:
        data = json.loads(line[match.end() :])
    except RecursionError:
        return None, "JSON nested too deeply after the prefix"
    except ValueError as exc:
        return None, f"invalid JSON after the prefix: {exc}"
    if not isinstance(data, dict):
        return None, "the JSON after the prefix is not an object"
    return data, ""


def _is_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _graph_break(payload: list[str]) -> tuple[str, str | None]:
    """('<break type>: <explanation>', 'file.py:LINE') from Dynamo's graph-break message.

    The message reads "Graph break in user code at FILE:LINE", "Graph Break Reason: ...", then the break's
    type on its own line and "Explanation: ...", hints and the user's traceback. Older or other messages
    (a frame skipped after a break it could not resume from) give their first line.
    """
    lines = [line.strip() for line in payload]
    where = next((line.rsplit(" at ", 1)[1] for line in lines if line.startswith("Graph break in user code at ")), None)
    marker = next((i for i, line in enumerate(lines) if line.startswith("Graph Break Reason:")), None)
    if marker is None:
        first = next((line for line in lines if line), "graph break")
        return _short(first), where
    body = [lines[marker].removeprefix("Graph Break Reason:").strip(), *lines[marker + 1 :]]
    body = body[: next((i for i, line in enumerate(body) if line.startswith("User code traceback:")), len(body))]
    return _short(break_reason("\n".join(body)) or "graph break"), where


def _guard_failures(payload: list[str]) -> list[str]:
    """The failed guards: one string as it is, or a JSON list of them (how torch writes more than one)."""
    text = "\n".join(payload).strip()
    if text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError:
            items = None
        if isinstance(items, list):
            return [line for item in items for line in str(item).splitlines() if line.strip()]
    return [line for line in text.splitlines() if line.strip()]


def _attachable(log: Path, workdir: Path) -> tuple[Path, str]:
    """The log as it is, or gzipped (secrets masked first, as attaching text would) when over 1 MiB."""
    if log.stat().st_size <= GZIP_OVER:
        return log, log.name
    target = workdir / f"{log.name}.gz"
    try:
        with (
            open(log, encoding="utf-8", errors="replace", newline="") as src,
            gzip.open(target, "wt", encoding="utf-8", newline="") as dst,
        ):
            dst.writelines(redact_pieces(src, REDACT_BLOCK, MAX_LINE))
    except OSError as exc:
        raise KbError(f"cannot compress {log}: {exc.strerror}") from None
    return target, target.name


def find_tlparse() -> str | None:
    """tlparse on PATH, or beside this Python (a virtualenv's bin, not on PATH unless activated)."""
    found = shutil.which("tlparse")
    if found:
        return found
    beside = Path(sys.executable).parent / "tlparse"
    return str(beside) if beside.is_file() else None


def _tlparse_reports(logs: list[Path], workdir: Path) -> tuple[list[tuple[Path, str]], str]:
    """tlparse's index.html for each log with compiles, and one line for the body on how that went."""
    executable = find_tlparse()
    if executable is None:
        return [], "tlparse is not installed, so no HTML report is attached (`pip install tlparse` adds it)."
    reports: list[tuple[Path, str]] = []
    failures: list[str] = []
    for number, log in enumerate(logs):
        name = "tlparse.html" if len(logs) == 1 else f"tlparse-{log.stem.removeprefix(LOG_PREFIX)}.html"
        out = workdir / f"tlparse-{number}"
        try:
            result = subprocess.run(
                [executable, str(log), "-o", str(out), "--overwrite", "--no-browser"],
                capture_output=True,
                text=True,
                timeout=TLPARSE_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            failures.append(f"{log.name}: no report in {TLPARSE_TIMEOUT_S} s")
            continue
        except OSError as exc:
            failures.append(f"{log.name}: {exc.strerror}")
            continue
        if result.returncode != 0 or not (out / "index.html").is_file():
            failures.append(f"{log.name}: exit status {result.returncode}")
            continue
        reports.append((out / "index.html", name))
    parts = []
    if reports:
        names = ", ".join(name for _, name in reports)
        parts.append(f"tlparse's report is attached as {names} (its links to per-compile pages are not).")
    if failures:
        parts.append(f"tlparse failed on {'; '.join(failures)}.")
    return reports, " ".join(parts)


def _body(section: dict[str, Any], trace: _Trace, tlparse_note: str) -> str:
    lines = [_summary(section, trace), ""]
    if trace.truncated:
        lines += [f"Skipped a truncated last line (a run killed while writing?): {', '.join(trace.truncated)}.", ""]
    if tlparse_note:
        lines += [tlparse_note, ""]
    lines += ["| Compile | Function | Compile s | Recompile reason | Failure |", "|---|---|---|---|---|"]
    for frame in section["frames"]:
        failure = " ".join(str(frame[key]) for key in ("fail_type", "fail_reason") if frame.get(key))
        cells = [
            frame["id"],
            frame.get("function") or "",
            frame.get("compile_s", ""),
            frame.get("recompile_reason"),
            failure,
        ]
        lines.append("| " + " | ".join(_cell(value) for value in cells) + " |")
    if section.get("frames_omitted"):
        lines.append(f"\n{section['frames_omitted']} more frame compiles are in the section's count, not listed.")
    if section["graph_breaks"]["reasons"]:
        lines += ["", "| Graph break | At | Count |", "|---|---|---|"]
        for item in section["graph_breaks"]["reasons"]:
            lines.append(f"| {_cell(item['reason'])} | {_cell(item.get('at'))} | {item['count']} |")
    return "\n".join(lines) + "\n"


def _summary(section: dict[str, Any], trace: _Trace) -> str:
    """The first line: graphs, frames, breaks, recompiles, failures and compile time."""
    functions = {(frame.log, frame.fields["id"].rsplit("/", 1)[0]) for frame in trace.frames.values()}
    compiles = _count(section["frame_count"], "frame compile")
    parts = [f"{_count(section['graphs'], 'graph')} from {compiles} of {_count(len(functions), 'frame')}"]
    breaks = section["graph_breaks"]
    kinds = list(dict.fromkeys(item["reason"].split(": ", 1)[0] for item in breaks["reasons"]))
    parts.append(_count(breaks["count"], "graph break") + (f" ({', '.join(kinds[:3])})" if kinds else ""))
    recompiles = section["recompiles"]
    first = recompiles["reasons"][0].split(": ", 1)[-1] if recompiles["reasons"] else ""
    more = f" and {len(recompiles['reasons']) - 1} more" if len(recompiles["reasons"]) > 1 else ""
    parts.append(_count(recompiles["count"], "recompile") + (f" ({first}{more})" if first else ""))
    if section.get("fail_types"):
        failed = sum(section["fail_types"].values())
        parts.append(f"{_count(failed, 'failed compile')} ({', '.join(section['fail_types'])})")
    parts.append(f"compile {section['compile_s']:.3g} s" if section["compile_s"] else "compile time not logged")
    return "; ".join(parts) + "."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _cell(value: Any) -> str:
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")
