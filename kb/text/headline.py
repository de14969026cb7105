"""What an entry answers, as labelled lines of plain text: the headline (how it ended, how fast, how long it
took to get going, whether it stayed on the accelerator, whether the numbers agree, why it failed) and the
readable sections after it. Plain data: the terminal (kb.terminal.rich_text) and any page can lay it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from kb.model.entry import Entry
from kb.text import humanize
from kb.text.sections import flatten

Pairs = list[tuple[str, str]]
CACHE_WORDS = {"fresh": "cold", "warm": "warm", "mixed": "partly warm", "bypass": "cache bypassed"}
MEDIAN_STEP = "_median_step"  # the rate of the median step, beside the one over the wall time
RECORD_TIME = "read when the entry was recorded, not when the run ran"
PROGRESS_VALUES = 5  # logged series shown in a running entry's progress


@dataclass
class Records:
    """A table of records (compile frames, attachments); `cut` is the column shortened when space is short."""

    header: list[str]
    rows: list[list[str]]
    cut: int = 0


Section = Union[Pairs, Records]


def record_time(entry: Entry) -> bool:
    """Whether the versions and hardware were read after the run, by the recording machine."""
    return (entry.data.get("provenance") or {}).get("environment") == "record_time"


def headline(entry: Entry) -> Pairs:
    d = entry.data
    lines: Pairs = []
    status = _status(entry)
    if status:
        lines.append(("status", status))
    timings = d.get("timings") or {}
    step = timings.get("step_s")
    if isinstance(step, dict) and step.get("median") is not None:
        spread = [f"{k} {humanize.duration(step[k])}" for k in ("p10", "p90") if step.get(k) is not None]
        count = f"{humanize.number(step['count'])} step{'s' if step['count'] != 1 else ''}" if step.get("count") else ""
        extra = ", ".join(x for x in (" – ".join(spread), count) if x)
        lines.append(("steady step", f"{humanize.duration(step['median'])} median" + (f" ({extra})" if extra else "")))
    elif isinstance(step, (int, float)):
        lines.append(("steady step", humanize.duration(step)))
    rates, others = _metrics(d.get("metrics") or {})
    if rates:
        lines.append(("throughput", " · ".join(rates)))
    if others:
        lines.append(("reported" if (d.get("provenance") or {}).get("source") == "reported" else "metrics",
                      " · ".join(others)))  # fmt: skip
    preparation = _preparation(timings, d.get("compile") or {})
    if preparation:
        lines.append(("preparation", preparation))
    compiled = _compile_counts(d.get("compile") or {})
    if compiled:
        lines.append(("compile", compiled))
    placement = _on_device(d.get("fallbacks") or {})
    if placement:
        lines.append(("on device", placement))
    numerics = _numerics(d.get("numerics") or {})
    if numerics:
        lines.append(("numerics", numerics))
    memory = d.get("memory") or {}
    peaks = [f"{_memory_label(name)} {humanize.field(name, value)}"
             for name, value in memory.items() if isinstance(value, (int, float))]  # fmt: skip
    if peaks:
        lines.append(("memory", " · ".join(peaks)))
    use = _device_use(memory.get("device_over_time"))
    if use:
        lines.append(("device use", use))
    failure = d.get("failure") or {}
    if failure:
        what = " ".join(str(x) for x in (failure.get("class"), failure.get("message") and f"— {failure['message']}")
                        if x)  # fmt: skip
        lines.append(("failure", what or "-"))
        if failure.get("explanation"):
            lines.append(("why", str(failure["explanation"])))
    if record_time(entry):
        lines.append(("environment", f"versions and hardware {RECORD_TIME}"))
    return lines


def progress(found: dict[str, Any], now: float) -> Pairs:
    """A running run's progress as its step stream tells it (ingest.steps.progress), as of `now` (epoch seconds)."""
    count = found.get("steps") or 0
    elapsed = found.get("elapsed_s")
    if not count:
        lines: Pairs = [("steps", "none finished yet")]
    else:
        since = f" in {humanize.duration(elapsed)} since the run began" if elapsed is not None else ""
        lines = [("steps", f"{humanize.number(count)} done{since}")]
    rates = found.get("rates") or {}
    if rates:
        text = " · ".join(humanize.quantity(value, unit) for unit, value in rates.items())
        lines.append(("rate so far", f"{text} (first steps and compiles included)"))
    if found.get("recent_step_s_median") is not None:
        recent = found.get("recent_steps")
        of = f" of the last {humanize.number(recent)}" if isinstance(recent, int) and recent > 1 else ""
        lines.append(("recent step", f"{humanize.duration(found['recent_step_s_median'])} median{of}"))
    for name, last in list((found.get("last_logged") or {}).items())[:PROGRESS_VALUES]:
        lines.append((f"last {name}", f"{humanize.number(last.get('value'))} at step {last.get('step')}"))
    flushed = found.get("flushed_at")
    if isinstance(flushed, (int, float)):
        lines.append(("as of", f"the stream's last write, {humanize.duration(max(now - flushed, 0.0))} ago"))
    return lines


def _device_use(section: Any) -> str:
    """Device memory and utilisation over the run (ingest.pytorch.device_use), or why none was sampled."""
    if not isinstance(section, dict) or section.get("device") == "cpu":  # a CPU run has no device to tell of
        return ""
    if not section.get("sampled"):
        return f"not sampled: {section.get('reason') or 'no reason given'}"
    every = humanize.duration(section.get("interval_s"))
    parts = [f"{humanize.number(section.get('samples'))} samples, one every {every}"]
    for key, label in (("allocated_max_gb", "allocated up to"), ("peak_gb", "peak"),
                       ("reserved_max_gb", "reserved up to")):  # fmt: skip
        if isinstance(section.get(key), (int, float)):
            parts.append(f"{label} {humanize.field(key, section[key])}")
    if isinstance(section.get("utilization_mean_pct"), (int, float)):
        most = section.get("utilization_max_pct")
        parts.append(f"utilisation {humanize.number(section['utilization_mean_pct'])}% mean, {most}% max")
    return " · ".join(parts) + (f" ({section['series']})" if section.get("series") else "")


def _memory_label(name: str) -> str:
    """host_peak_rss_gb -> host peak RSS: the unit goes with the figure, abbreviations in capitals."""
    return " ".join(word.upper() if word == "rss" else word for word in name.removesuffix("_gb").split("_"))


def _status(entry: Entry) -> str:
    d = entry.data
    provenance = d.get("provenance") or {}
    if provenance.get("source") == "reported":
        by = " ".join(str(x) for x in ("by", provenance.get("publisher"), "on", provenance.get("date")) if x)
        url = provenance.get("url") or (d.get("report") or {}).get("url")
        return f"reported {by}".strip() + (f" ({url})" if url else "")
    if not entry.status:
        return ""
    command = d.get("command") or {}
    wall = (d.get("timings") or {}).get("wall_s")
    words = [entry.status]
    if isinstance(wall, (int, float)):
        words.append(f"after {humanize.duration(wall)}")
    if command.get("signal"):
        words.append(f"(signal {command['signal']})")
    elif command.get("exit_code") is not None:
        words.append(f"(exit {command['exit_code']})")
    return " ".join(words)


def _metrics(metrics: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Rates (a unit per second) apart from the other figures, each humanised with its unit. A rate measured two
    ways says which: over the steady wall time, or of the median step (`<name>_median_step`)."""
    rates, others = [], []
    for name, metric in metrics.items():
        if not isinstance(metric, dict):
            continue
        unit = metric.get("unit") or humanize.unit_of(name)
        text = humanize.quantity(metric.get("value"), unit)
        if unit and "/s" in unit:
            if name.endswith(MEDIAN_STEP):
                text += " (median step)"
            elif isinstance(metrics.get(name + MEDIAN_STEP), dict):
                text += " (wall)"
            rates.append(text)
        else:
            step = f" at step {metric['step']}" if metric.get("step") is not None else ""
            others.append(f"{name} {text}{step}")
    return rates, others


def _preparation(timings: dict[str, Any], compile_: dict[str, Any]) -> str:
    parts = []
    for key, label in (("load_s", "load"), ("first_step_s", "first step"), ("warmup_s", "warm-up")):
        if isinstance(timings.get(key), (int, float)):
            parts.append(f"{label} {humanize.duration(timings[key])}")
    seconds = timings.get("compile_s", compile_.get("compile_s"))
    if isinstance(seconds, (int, float)):
        cache = CACHE_WORDS.get(compile_.get("cache") or "", "")
        parts.append(f"compile {humanize.duration(seconds)}" + (f" ({cache})" if cache else ""))
    return " · ".join(parts)


def _compile_counts(compile_: dict[str, Any]) -> str:
    breaks = compile_.get("graph_breaks") or {}
    sites = breaks.get("sites")  # older entries count only how often a break was met
    counts = [(compile_.get("graphs"), "graph", "graphs"), (compile_.get("frame_count"), "frame", "frames"),
              (sites, "graph-break site", "graph-break sites") if isinstance(sites, int)
              else (breaks.get("count"), "graph break", "graph breaks"),
              ((compile_.get("recompiles") or {}).get("count"), "recompile", "recompiles"),
              (len(breaks.get("eager_frames") or []) or None, "frame ran eagerly", "frames ran eagerly")]  # fmt: skip
    return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts if isinstance(n, int))


def _on_device(fallbacks: dict[str, Any]) -> str:
    stayed = fallbacks.get("stayed_on_device")
    target = fallbacks.get("target") or "the accelerator"
    summary = str(fallbacks.get("summary") or "")
    if stayed is True:
        return f"stayed on {target}"
    if stayed is False:
        return f"left {target}" + (f": {summary}" if summary else "")
    return summary


def _numerics(numerics: dict[str, Any]) -> str:
    verdict = numerics.get("verdict")
    if not verdict:
        return ""
    against = " ".join(str(x) for x in (numerics.get("compared"), numerics.get("reference") and
                                        f"against {numerics['reference']}") if x)  # fmt: skip
    names = (("max_abs_err", "max abs err"), ("max_rel_err", "max rel err"))
    errors = [f"{label} {humanize.number(numerics[key])}" for key, label in names if numerics.get(key) is not None]
    detail = ", ".join(x for x in (against, *errors, numerics.get("reason")) if x)
    return str(verdict) + (f" ({detail})" if detail else "")


def sections(entry: Entry) -> list[tuple[str, Section]]:
    """The sections after the headline, each short: the raw field dump is `kb show --all`."""
    d = entry.data
    out: list[tuple[str, Section]] = []
    for key, label in (("report", "Reported"), ("coverage", "Coverage"), ("decision", "Decision"),
                       ("release", "Release")):  # fmt: skip
        if d.get(key):
            out.append((label, flatten(d[key])))
    compile_ = d.get("compile") or {}
    if compile_:
        out += _compile(compile_, str((d.get("command") or {}).get("cwd") or ""))
    xla = (d.get("backend_evidence") or {}).get("xla_debug") or {}
    if isinstance(xla.get("compile_causes"), dict) and xla["compile_causes"]:
        causes = [(f"{n}×", str(cause)) for cause, n in xla["compile_causes"].items()]
        out.append((f"XLA compile causes ({xla.get('compiles', sum(xla['compile_causes'].values()))})", causes))
    fallbacks = d.get("fallbacks") or {}
    if fallbacks.get("placement") or (fallbacks.get("warnings") or {}).get("ops"):
        out.append(("Placement", _placement(fallbacks)))
    timings = [(name, humanize.field(name, value)) for name, value in (d.get("timings") or {}).items()
               if name.endswith("_s") and isinstance(value, (int, float))]  # fmt: skip
    if timings:
        out.append(("Timings", timings))
    if d.get("settings"):
        out.append(("Settings", flatten(d["settings"])))
    command = _command(d)
    if command:
        out.append(("Command", command))
    marker = f" ({RECORD_TIME})" if record_time(entry) else ""
    if d.get("versions"):
        out.append(("Versions" + marker, flatten(d["versions"])))
    hardware = _hardware(d.get("hardware") or {})
    if hardware:
        out.append(("Hardware" + marker, hardware))
    if d.get("links"):
        out.append(("Links", flatten(d["links"])))
    attachments = [a for a in d.get("attachments") or [] if isinstance(a, dict) and a.get("path")]
    if attachments:
        rows = [[str(a["path"]), str(a.get("role") or ""), humanize.size(a.get("bytes"))] for a in attachments]
        out.append(("Attachments", Records(["file", "role", "size"], rows)))
    return out


def _site(at: str, cwd: str) -> str:
    """Where a graph broke (file:line), the path relative to the run's folder when inside it."""
    folder = cwd.rstrip("/") + "/"
    return at[len(folder) :] if cwd and at.startswith(folder) else at


def _compile(compile_: dict[str, Any], cwd: str) -> list[tuple[str, Section]]:
    out: list[tuple[str, Section]] = []
    stages = compile_.get("stages_s") or {}
    stage_text = ", ".join(f"{name.replace('_', ' ')} {humanize.duration(s)}" for name, s in stages.items()
                           if isinstance(s, (int, float)))  # fmt: skip
    pairs: Pairs = []
    if isinstance(compile_.get("compile_s"), (int, float)):
        pairs.append(("time", humanize.duration(compile_["compile_s"]) + (f" ({stage_text})" if stage_text else "")))
    counters = compile_.get("cache_counters") or {}
    if compile_.get("cache") or counters:
        fx = "/".join(str(counters.get(f"fxgraph_{k}", 0)) for k in ("hit", "miss", "bypass"))
        aot = "/".join(str(counters.get(f"aot_{k}", 0)) for k in ("hit", "miss", "bypass"))
        state = CACHE_WORDS.get(compile_.get("cache") or "", compile_.get("cache") or "")
        pairs.append(("cache", f"{state} (FX graph hit/miss/bypass {fx}, AOT autograd {aot})" if counters else state))
    if pairs:
        out.append(("Compile", pairs))
    frames = [f for f in compile_.get("frames") or [] if isinstance(f, dict)]
    if frames:
        eagerly = " (ran eagerly)"
        rows = [[str(f.get("id") or ""), str(f.get("function") or "") + (eagerly if f.get("ran_eagerly") else ""),
                 humanize.duration(f.get("compile_s")), humanize.duration(f.get("aot_autograd_s")),
                 humanize.duration(f.get("backend_s")), str(f.get("fx_cache") or "-"), str(f.get("aot_cache") or "-"),
                 str(f.get("recompile_reason") or "")]
                for f in frames]  # fmt: skip
        out.append(("Compile frames", Records(["frame", "function", "compile", "aot", "backend", "fx", "aot cache",
                                               "recompile reason"], rows, cut=1)))  # fmt: skip
    breaks = compile_.get("graph_breaks") or {}
    counted = _counted(breaks.get("reasons") or [], cwd)
    lines = [(f"{n}×", text) for text, n in counted.items()]
    for frame in breaks.get("eager_frames") or []:
        if isinstance(frame, dict):
            where = frame.get("at") or frame.get("break_at")
            named = " ".join(str(part) for part in (frame.get("function"), where and f"at {_site(str(where), cwd)}")
                             if part)  # fmt: skip
            lines.append(("ran eagerly", f"{named}: {frame.get('reason') or ''}".strip(": ")))
    if breaks.get("count") or lines:
        # A site is one place in the code; Dynamo meets it again at each recompile and in each resumed frame.
        sites = breaks.get("sites", len(counted))
        met = breaks.get("count", sum(counted.values()))
        out.append((f"Graph breaks ({sites} {'site' if sites == 1 else 'sites'}, met {met}×)", lines))
    recompiles = compile_.get("recompiles") or {}
    counted = _counted(recompiles.get("reasons") or [], cwd)
    if recompiles.get("count") or counted:
        out.append((f"Recompiles ({recompiles.get('count', sum(counted.values()))})",
                    [(f"{n}×", text) for text, n in counted.items()]))  # fmt: skip
    return out


def _counted(reasons: list[Any], cwd: str) -> dict[str, int]:
    """Reasons as lines with how often each was met: a record {reason, count, at}, or a line of text per time."""
    counted: dict[str, int] = {}
    for reason in reasons:
        text = str(reason.get("reason") or "") if isinstance(reason, dict) else str(reason)
        if isinstance(reason, dict) and reason.get("at"):
            text = f"at {_site(str(reason['at']), cwd)}: {text}"
        counted[text] = counted.get(text, 0) + (reason.get("count", 1) if isinstance(reason, dict) else 1)
    return counted


def _placement(fallbacks: dict[str, Any]) -> Pairs:
    placement = fallbacks.get("placement") or {}
    target = placement.get("target") or fallbacks.get("target") or "the target"
    pairs: Pairs = []
    for group, counts in placement.items():
        if not isinstance(counts, dict) or "total" not in counts:
            continue
        text = f"{counts.get('off_target', 0)} of {counts['total']} off {target}"
        examples = [str(e) for e in counts.get("examples") or []]
        pairs.append((group, text + (f" (e.g. {', '.join(examples[:3])})" if examples else "")))
    ops = (fallbacks.get("warnings") or {}).get("ops") or []
    if ops:
        pairs.append(("ops on the CPU", ", ".join(str(op) for op in ops)))
    return pairs


def _command(d: dict[str, Any]) -> Pairs:
    command = d.get("command") or {}
    pairs: Pairs = [(key, str(command[key])) for key in ("line", "cwd") if command.get(key)]
    git = d.get("git") or {}
    if git.get("commit"):
        extra = ", ".join(x for x in (git.get("branch"), "dirty" if git.get("dirty") else "") if x)
        pairs.append(("git", str(git["commit"])[:12] + (f" ({extra})" if extra else "")))
    return pairs


def _hardware(hardware: dict[str, Any]) -> Pairs:
    pairs: Pairs = [(key, str(hardware[key])) for key in ("hostname", "os", "cpu") if hardware.get(key)]
    if hardware.get("cpu_cores"):
        pairs.append(("cores", f"{hardware['cpu_cores']} ({hardware.get('cpu_threads', '?')} threads)"))
    if isinstance(hardware.get("memory_gb"), (int, float)):
        pairs.append(("memory", humanize.field("memory_gb", hardware["memory_gb"])))
    accelerators = hardware.get("accelerators")
    if isinstance(accelerators, list):
        names = [" ".join(str(a.get(k)) for k in ("vendor", "name") if a.get(k)) if isinstance(a, dict) else str(a)
                 for a in accelerators]  # fmt: skip
        pairs.append(("accelerators", ", ".join(names) or "none found"))
    return pairs
