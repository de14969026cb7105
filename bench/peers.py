"""`python -m bench.peers [--quick] [--large]`: kb beside the tools a user would otherwise pick, on the same work.

Rows, each measured several times with the tools alternated (A B A B ...), medians reported:
1. logging one value per step in a training loop: kb's step timer and `log` against `mlflow.log_metric`
   (SQLite store; also with synchronous=False), W&B's `run.log` offline and a bare loop, each in a process of
   its own; microseconds per step, the share of a 5 ms step, and the run's start and finish;
2. environment capture as a process: kb's (ingest.environment) against `python -m torch.utils.collect_env`;
3. recording a trivial command end to end: `kb record -- true` against a script that runs `true` in an
   MLflow run and logs the params, tags, metrics and output that kb's entry holds;
4. to 6. at 1,000 and 10,000 entries (100,000 with --large: generating, indexing and building the site at that
   size take about an hour more here): finding runs (kb against MLflow, grep and FTS5), the site (kb against
   MkDocs), and growth with the fitted exponent (bench.peers_scale).
MLflow and W&B run from a venv of their own under ~/.cache/kb/, made on first use (bench.peers_venv); W&B
runs offline. A table in Markdown is printed last, with the machine and its load; kb / peer below 1 means
kb took less (time, memory).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import peers_jobs as jobs
from bench import peers_scale, peers_venv, site
from bench.peers_venv import alternated, env, job, measure, median_s, new_store, peak_mb
from bench.timing import machine

STEP_S = 0.005  # the training step the per-step cost is set against
KB = [sys.executable, "-m", "kb"]


@dataclass
class Line:
    """One line of the table: kb's figure beside one peer's, for one measurement (lower is better)."""

    row: str
    what: str
    kb: float
    peer: str
    value: float
    unit: str
    note: str = ""

    def ratio(self) -> str:
        if not self.value or not self.kb:
            return "-"
        ratio = self.kb / self.value
        return f"1/{1 / ratio:,.0f}" if ratio < 0.01 else f"{ratio:.3g}"

    def order(self) -> tuple[int, int]:
        """Row, then size: rows 4 to 6 are measured size by size, and shown row by row."""
        number, _, size = self.row.partition(" · ")
        return int(number), int(size.replace(",", "") or 0)


# -- row 1 --------------------------------------------------------------------------------------------------

STEP_TOOLS = {
    "bare": "bare loop (no logging)",
    "mlflow": "`mlflow.log_metric`, SQLite store",
    "mlflow-async": "`mlflow.log_metric(synchronous=False)`",
    "wandb": "W&B `run.log`, offline",
}


def row_steps(peers: Path, folder: Path, rounds: int, quick: bool) -> list[Line]:
    """Row 1: each tool's loop in a fresh process, its store made beforehand; MLflow's loops are short: a
    synchronous metric takes tens of milliseconds, and with synchronous=False the queue drains as slowly at
    the end of the run."""
    count, peer_count, max_s = (2_000, 100, 1.0) if quick else (20_000, 300, 4.0)

    def loop(tool: str) -> dict[str, float]:
        python = sys.executable if tool in ("bare", "kb") else peers
        steps = peer_count if tool.startswith("mlflow") else count
        # No knowledge base (KB_HOME empty): kb's run leaves its run folder under TMPDIR, W&B's run in `folder`.
        return job(python, "steps", tool, steps, max_s, cwd=folder, timeout=300, KB_HOME="", TMPDIR=str(folder)).json()

    new_store(peers, folder / "mlflow.db")
    results = alternated({tool: (lambda t=tool: loop(t)) for tool in ("kb", *STEP_TOOLS)}, rounds, warm=not quick)
    step = {tool: statistics.median(r["step_s"] for r in runs) * 1e6 for tool, runs in results.items()}
    ends = {tool: statistics.median(r["start_finish_s"] for r in runs) for tool, runs in results.items()}
    steps = {tool: int(min(r["steps"] for r in runs)) for tool, runs in results.items()}
    what = "logging one value per step, in the loop"
    lines = [Line("1", what, step["kb"], label, step[tool], "µs/step", f"{steps[tool]:,} steps")
             for tool, label in STEP_TOOLS.items()]  # fmt: skip
    lines += [Line("1", "starting and finishing the run", ends["kb"], label, ends[tool], "s")
              for tool, label in STEP_TOOLS.items() if tool != "bare"]  # fmt: skip
    return lines


# -- row 2 --------------------------------------------------------------------------------------------------


def row_capture(folder: Path, rounds: int, quick: bool) -> list[Line]:
    """Row 2: both as processes, in a small git work tree (kb reads git state; collect_env does not)."""
    _git_tree(folder)
    collect = [sys.executable, "-m", "torch.utils.collect_env"]
    samples = alternated(
        {
            "kb": lambda: job(sys.executable, "kb-capture", cwd=folder, timeout=120),
            "collect_env": lambda: measure(collect, environ=env(), cwd=folder, timeout=300),
        },
        rounds,
        warm=not quick,
    )
    produced = samples["kb"][-1].json()
    note = (f"kb: {produced['bytes'] / 1000:.1f} KB of JSON, {produced['versions']} package versions; "
            f"collect_env: {len(samples['collect_env'][-1].out) / 1000:.1f} KB of text")  # fmt: skip
    peer = "`python -m torch.utils.collect_env`"
    return [
        Line("2", "environment capture, as a process", median_s(samples["kb"]), peer,
             median_s(samples["collect_env"]), "s", note),
        Line("2", "peak memory of that process", peak_mb(samples["kb"]), peer, peak_mb(samples["collect_env"]), "MB"),
    ]  # fmt: skip


def _git_tree(folder: Path) -> None:
    (folder / "train.py").write_text("print('training')\n")
    for args in (["init", "-q"], ["add", "train.py"], ["-c", "user.name=bench", "-c", "user.email=bench@example.com",
                                                       "commit", "-q", "-m", "train"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


# -- row 3 --------------------------------------------------------------------------------------------------


def row_record(peers: Path, folder: Path, rounds: int, quick: bool) -> list[Line]:
    """Row 3: `kb record -- true` against an MLflow run logging the same values, both as processes, each
    writing into a store in use."""
    root = folder / "kb"
    kb_env = env(KB_HOME=str(root))
    record = [*KB, "record", "--", "true"]
    subprocess.run([*KB, "init", str(root)], env=kb_env, check=True, capture_output=True)
    subprocess.run(record, env=kb_env, cwd=folder, check=True, capture_output=True)
    payload = folder / "payload.json"
    payload.write_text(json.dumps(record_payload(root)))
    db = new_store(peers, folder / "mlflow.db")
    samples = alternated(
        {
            "kb": lambda: measure(record, environ=kb_env, cwd=folder, timeout=120),
            "mlflow": lambda: job(peers, "mlflow-record", db, payload, cwd=folder, timeout=300),
        },
        rounds,
        warm=not quick,
    )
    peer = "MLflow run logging the same (script)"
    return [
        Line("3", "record `true`, start to entry on disk", median_s(samples["kb"]), peer, median_s(samples["mlflow"]),
             "s", "MLflow logs values handed to it; kb also gathers them (row 2)"),
        Line("3", "peak memory of that process", peak_mb(samples["kb"]), peer, peak_mb(samples["mlflow"]), "MB"),
    ]  # fmt: skip


def record_payload(root: Path) -> dict[str, dict[str, Any]]:
    """kb's entry for `true` as MLflow params (what ran), tags (on what, how it ended) and metrics (timings)."""
    from kb.store.knowledge_base import KnowledgeBase

    entry = next(KnowledgeBase(root).iter_entries())
    flat = _flatten(entry.data)
    metrics = {k: v for k, v in flat.items() if k.startswith("timings.") and isinstance(v, (int, float))}
    params = {k: str(v) for k, v in flat.items() if k.startswith(("command.", "settings.", "recorder."))}
    tags = {k: str(v) for k, v in flat.items() if k not in metrics and k not in params}
    return {"params": params, "tags": tags, "metrics": metrics}


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat |= _flatten(value, f"{prefix}{key}.")
        elif value is not None:
            flat[f"{prefix}{key}"] = value if isinstance(value, (int, float, str)) else json.dumps(value)
    return flat


# -- rows 4 to 6 ----------------------------------------------------------------------------------------------


def rows_scale(
    peers: Path, folder: Path, sizes: tuple[int, ...], rounds: int, quick: bool
) -> tuple[list[Line], list[list[str]]]:
    mkdocs = site._mkdocs()
    at: dict[int, dict[str, Any]] = {}
    for size in sizes:
        _say(f"rows 4-6 at {size:,} entries ...")
        at[size] = peers_scale.measure_size(size, folder / str(size), rounds, quick, peers, mkdocs)
    lines = sorted((line for size in sizes for line in scale_lines(size, at[size])), key=Line.order)
    return lines, growth(at)


QUESTION_TEXT = {
    "failed": f"failed runs on {jobs.BACKEND} with torch{jobs.TORCH_SPEC}",
    "top": f"top {jobs.TOP} by tokens/s for {jobs.WORKLOAD}",
    "text": f'failure text "{jobs.PHRASE}"',
}


def scale_lines(size: int, f: dict[str, Any]) -> list[Line]:
    ask, load, index, sites = f["ask"], f["load"], f["index"], f["site"]
    lines = []
    four, five, six = (f"{row} · {size:,}" for row in (4, 5, 6))
    for question, by in ask["process_s"].items():
        what = f"{QUESTION_TEXT[question]}, as a process"
        lines.append(Line(four, what, by["kb"], "MLflow (Python script)", by["mlflow"], "s",
                          ask["agreement"][question]))  # fmt: skip
        if "grep" in by:
            lines.append(Line(four, what, by["kb"], "`grep -rli` over entries/", by["grep"], "s"))
    for question in jobs.QUESTIONS:
        what = f"{QUESTION_TEXT[question]}, in process (warm)"
        lines.append(Line(four, what, ask["warm_s"]["kb"][question] * 1e3, "`MlflowClient.search_runs`",
                          ask["warm_s"]["mlflow"][question] * 1e3, "ms", ask["agreement"][question]))  # fmt: skip
    lines.append(Line(four, "full-text query in process (warm; bench.index's four)", index["query_ms"],
                      "SQLite FTS5, same text", index["fts_ms"], "ms"))  # fmt: skip
    lines.append(Line(four, "`kb search` as a process (bench.index's four)", index["search_process_s"],
                      "`grep -rli` (bench.index's four words)", index["grep_s"], "s"))  # fmt: skip

    pages = sites["pages"]
    if "mkdocs" in sites["full_s"]:
        per_page = (sites["full_s"]["kb"] / pages["kb"]) / (sites["full_s"]["mkdocs"] / pages["mkdocs"])
        note = f"kb {pages['kb']:,} pages, MkDocs {pages['mkdocs']:,}: per page kb / MkDocs {per_page:.2f}"
        lines += [
            Line(five, "full site build, as a process", sites["full_s"]["kb"], "`mkdocs build`",
                 sites["full_s"]["mkdocs"], "s", note),
            Line(five, "rebuild after one edited entry", sites["edit_s"]["kb"], "`mkdocs build --dirty`",
                 sites["edit_s"]["mkdocs"], "s"),
            Line(five, "peak memory of a full build", sites["full_peak_mb"]["kb"], "`mkdocs build`",
                 sites["full_peak_mb"]["mkdocs"], "MB"),
        ]  # fmt: skip
    client_all = load["client_s_per_run"] * load["runs"]
    lines += [
        Line(six, "index build (kb: SQLite with FTS5 full text)", index["build_s"], "MLflow: runs by SQL bulk insert",
             load["bulk_s"], "s", f"{load['runs']:,} runs; not the same work: MLflow indexes no text"),
        Line(six, "index build", index["build_s"], "MLflow: the same runs through MlflowClient (projected)",
             client_all, "s", f"{load['client_s_per_run'] * 1e3:.0f} ms per run × {load['runs']:,}"),
        Line(six, "one entry added or edited, until found", index["pick_s"], "MLflow: one run through MlflowClient",
             load["client_s_per_run"], "s"),
        Line(six, "the same, with `kb watch` running", index["watched_pick_s"], "MLflow: one run through MlflowClient",
             load["client_s_per_run"], "s"),
        Line(six, "peak memory: index build / load", f["index_peak_mb"], "MLflow load (bulk and client)",
             load["peak_mb"], "MB", "kb: bench.index's whole process (build, edits, searches)"),
    ]  # fmt: skip
    return lines


def growth(at: dict[int, dict[str, Any]]) -> list[list[str]]:
    """Each figure at every size and its growth exponent: the slope of log(figure) over log(size)."""
    series = {
        ("kb index build, s", "kb"): lambda f: f["index"]["build_s"],
        ("one edited entry found, s", "kb"): lambda f: f["index"]["pick_s"],
        ("one edited entry found, s", "kb with `kb watch`"): lambda f: f["index"]["watched_pick_s"],
        ("full-text query in process, ms", "kb"): lambda f: f["index"]["query_ms"],
        ("full-text query in process, ms", "FTS5"): lambda f: f["index"]["fts_ms"],
        ("`kb search` as a process, s", "kb"): lambda f: f["index"]["search_process_s"],
        ("`kb search` as a process, s", "grep -rli"): lambda f: f["index"]["grep_s"],
        (f"{QUESTION_TEXT['failed']}, in process, ms", "kb"): lambda f: f["ask"]["warm_s"]["kb"]["failed"] * 1e3,
        (f"{QUESTION_TEXT['failed']}, in process, ms", "MLflow"): lambda f: (
            f["ask"]["warm_s"]["mlflow"]["failed"] * 1e3
        ),
        ("load the runs, s", "MLflow bulk SQL"): lambda f: f["load"]["bulk_s"],
        ("add one run, s", "MLflow client"): lambda f: f["load"]["client_s_per_run"],
        ("site build, s", "kb"): lambda f: f["site"]["full_s"]["kb"],
        ("site build, s", "MkDocs"): lambda f: f["site"]["full_s"].get("mkdocs"),
        ("site rebuild after one edit, s", "kb"): lambda f: f["site"]["edit_s"]["kb"],
        ("site rebuild after one edit, s", "MkDocs --dirty"): lambda f: f["site"]["edit_s"].get("mkdocs"),
        ("peak memory, index build, MB", "kb"): lambda f: f["index_peak_mb"],
        ("peak memory, site build, MB", "kb"): lambda f: f["site"]["full_peak_mb"]["kb"],
        ("peak memory, site build, MB", "MkDocs"): lambda f: f["site"]["full_peak_mb"].get("mkdocs"),
        ("peak memory, load, MB", "MLflow"): lambda f: f["load"]["peak_mb"],
    }
    sizes = sorted(at)
    table = []
    for (what, tool), read in series.items():
        values = [read(at[size]) for size in sizes]
        if None in values:
            continue
        table.append(
            [what, tool, *(f"{v:,.0f}" if v >= 100 else f"{v:.3g}" for v in values), f"{slope(sizes, values):.2f}"]
        )
    return table


def slope(sizes: list[int], values: list[float]) -> float:
    """Least-squares slope of log(value) against log(size): 1 is linear, 0 flat."""
    xs, ys = [math.log(s) for s in sizes], [math.log(max(v, 1e-12)) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


# -- the table ------------------------------------------------------------------------------------------------


def figure(value: float, unit: str) -> str:
    if unit == "µs/step":
        share = value * 1e-6 / STEP_S
        return f"{figure(value, 'µs')} ({share:.2%})" if share < 0.1 else f"{figure(value, 'µs')} ({share:.0%})"
    if unit == "MB":
        return f"{value:,.0f} MB"
    return f"{value:,.3g} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def render(lines: list[Line], growth_rows: list[list[str]], sizes: tuple[int, ...], header: str) -> str:
    out = [header, "", "| row | measurement | kb | peer | peer's figure | kb / peer | note |", "|---" * 7 + "|"]
    out += [f"| {ln.row} | {ln.what} | {figure(ln.kb, ln.unit)} | {ln.peer} | {figure(ln.value, ln.unit)} | "
            f"{ln.ratio()} | {ln.note} |" for ln in lines]  # fmt: skip
    if growth_rows:
        columns = " | ".join(f"{size:,}" for size in sizes)
        out += ["", f"| growth | tool | {columns} | exponent |", "|---|---|" + "---|" * (len(sizes) + 1)]
        out += ["| " + " | ".join(row) + " |" for row in growth_rows]
    return "\n".join(out)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="small sizes, one round: checks that it runs")
    parser.add_argument("--large", action="store_true", help="also 100,000 entries (about an hour more on 2 CPUs)")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()
    sizes = (100, 300) if args.quick else (1_000, 10_000, 100_000) if args.large else (1_000, 10_000)
    rounds = 1 if args.quick else 3
    load = os.getloadavg()[0]
    try:
        peers = peers_venv.ensure()
    except RuntimeError as exc:
        raise SystemExit(f"python -m bench.peers: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="kb-bench-peers-") as name:
        work = Path(name)
        for number in (1, 2, 3):
            (work / str(number)).mkdir()
        _say("row 1: logging per step ...")
        lines = row_steps(peers, work / "1", rounds, args.quick)
        _say("row 2: environment capture ...")
        lines += row_capture(work / "2", rounds, args.quick)
        _say("row 3: recording a run ...")
        lines += row_record(peers, work / "3", rounds, args.quick)
        scale, growth_rows = rows_scale(peers, work, sizes, rounds, args.quick)
    lines += scale
    if args.quick:
        rounds_text = "quick: 1 round, no warm-up"
    else:
        rounds_text = f"{rounds} rounds alternated after a warm-up round, medians; site builds at 10,000: 1 round"
    header = (f"kb beside its peers ({rounds_text}); {machine()}; load average {load:.1f} at the start, "
              f"{os.getloadavg()[0]:.1f} at the end")  # fmt: skip
    print(render(lines, growth_rows, sizes, header))
    if args.json:
        args.json.write_text(json.dumps({"lines": [vars(line) for line in lines], "growth": growth_rows}, indent=1))


if __name__ == "__main__":
    main()
