"""Rows 4 to 6 of `python -m bench.peers`, on one generated knowledge base of a given size.

- 4, find runs: kb's entries (bench.generate, seed 1) and the same runs in MLflow's SQLite store; three
  questions asked of both, as processes (kb's CLI against a `python -m` script using MlflowClient) and inside
  one warm process each; `grep -rli` for the text question; the answers compared.
- 5, the site: `kb site build` against `mkdocs build` of the same Markdown (bench.site's MkDocs project), both
  as processes, full and after one edited entry (MkDocs with --dirty).
- 6, growth: bench.index's benchmark (build, one edit, search; against grep and FTS5) in a process of its
  own for its peak memory, MLflow's load, and the peak memory of every process above.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench import peers_jobs as jobs
from bench import site
from bench.mlflow_runs import mlflow_runs
from bench.peers_venv import Sample, alternated, env, job, measure, median_s, new_store, peak_mb

KB = [sys.executable, "-m", "kb"]
TIMEOUT_S = {1_000: 300, 10_000: 1200, 100_000: 7200}


def kb_questions() -> dict[str, list[str]]:
    """Row 4's questions as kb command lines (the MLflow side is bench.peers_jobs._mlflow_question)."""
    return {
        "failed": ["ls", "--kind", "run", "--backend", jobs.BACKEND, "--status", "failed", "--package",
                   f"torch{jobs.TORCH_SPEC}", "--limit", "0", "--json"],
        "top": ["ls", "--kind", "run", "--workload", jobs.WORKLOAD, "--sort", "metric.tokens_per_s", "--limit",
                str(jobs.TOP), "--json"],
        "text": ["search", jobs.kb_text_query(), "--kind", "run", "--limit", str(jobs.TEXT_LIMIT), "--json"],
    }  # fmt: skip


def measure_size(size: int, folder: Path, rounds: int, quick: bool, peers: Path, mkdocs: Path | None) -> dict[str, Any]:
    """Every figure of rows 4 to 6 at one size, keyed by name; its knowledge base, store and sites in folder
    (removed afterwards: at 10,000 entries they take a gigabyte)."""
    from bench.generate import default_cache, generate

    timeout = next((t for limit, t in sorted(TIMEOUT_S.items()) if size <= limit), max(TIMEOUT_S.values()))
    folder.mkdir()
    try:
        began = time.perf_counter()
        kb = generate(folder / "kb", size, seed=1, cache=default_cache())
        _say(f"{size:,} entries generated in {time.perf_counter() - began:.0f} s; indexing (bench.index) ...")
        index = job(sys.executable, "kb-index-bench", kb.root, size, rounds, cwd=folder, timeout=timeout)
        figures: dict[str, Any] = {"index": _unsized(index.json()), "index_peak_mb": index.peak_mb}

        runs = folder / "runs.json"
        runs.write_text(json.dumps(mlflow_runs(kb)))
        db = new_store(peers, folder / "mlflow.db")
        load = job(peers, "mlflow-load", db, runs, 2 if quick else 5, cwd=folder, timeout=timeout)
        figures["load"] = {**load.json(), "peak_mb": load.peak_mb}
        _say(f"{figures['load']['runs']:,} runs loaded into MLflow; asking ...")

        figures["ask"] = _ask(kb, db, folder, peers, rounds, quick, timeout)
        _say("building sites ...")
        figures["site"] = _sites(kb, folder, rounds if size <= 1_000 else 1, quick, mkdocs, timeout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return figures


def _unsized(figures: dict[str, float]) -> dict[str, float]:
    """bench.index names its figures by size (build_s_10k): the size is known here."""
    return {key.rsplit("_", 1)[0]: value for key, value in figures.items()}


def _say(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


# -- row 4: the questions -----------------------------------------------------------------------------------


def _ask(kb: Any, db: Path, folder: Path, peers: Path, rounds: int, quick: bool, timeout: float) -> dict[str, Any]:
    kb_env = env(KB_HOME=str(kb.root))
    processes: dict[str, dict[str, list[Sample]]] = {}
    for question, args in kb_questions().items():
        if quick and question != "failed":
            continue  # the quick run asks one question as processes: an MLflow process takes seconds to start
        variants = {
            "kb": lambda args=args: measure([*KB, *args], environ=kb_env, cwd=folder, timeout=timeout),
            "mlflow": lambda q=question: job(peers, "mlflow-ask", db, q, cwd=folder, timeout=timeout),
        }
        if question == "text":
            grep = ["grep", "-rli", jobs.PHRASE, str(kb.entries_path)]
            variants["grep"] = lambda: measure(grep, environ=kb_env, cwd=folder, timeout=timeout)  # noqa: B023
        processes[question] = alternated(variants, rounds, warm=not quick)
    repeats = 3 if quick else 3 * rounds
    warm = {
        "kb": job(sys.executable, "kb-ask-warm", kb.root, repeats, cwd=folder, timeout=timeout),
        "mlflow": job(peers, "mlflow-ask-warm", db, repeats, cwd=folder, timeout=timeout),
    }
    answers = {tool: sample.json() for tool, sample in warm.items()}
    return {
        "process_s": {q: {tool: median_s(samples) for tool, samples in by.items()} for q, by in processes.items()},
        "warm_s": {tool: answer["seconds"] for tool, answer in answers.items()},
        "agreement": {q: agreement(answers["kb"]["ids"][q], answers["mlflow"]["ids"][q]) for q in jobs.QUESTIONS},
    }


def agreement(kb_ids: list[str], mlflow_ids: list[str]) -> str:
    """How the two answers compare, in a few words."""
    both = len(set(kb_ids) & set(mlflow_ids))
    if set(kb_ids) == set(mlflow_ids):
        return f"same {both} runs"
    return f"kb {len(kb_ids)}, MLflow {len(mlflow_ids)}, {both} in both"


# -- row 5: the sites ---------------------------------------------------------------------------------------


def _sites(kb: Any, folder: Path, rounds: int, quick: bool, mkdocs: Path | None, timeout: float) -> dict[str, Any]:
    kb_env = env(KB_HOME=str(kb.root))
    out = folder / "site"
    build = [*KB, "site", "build", "--out", str(out)]
    project = site._mkdocs_project(kb, folder / "mkdocs") if mkdocs else None
    full: dict[str, list[Sample]] = {"kb": [], "mkdocs": []}
    for _ in range(rounds):  # no warm-up round: at 10,000 entries a build takes minutes (as bench.site)
        shutil.rmtree(out, ignore_errors=True)
        full["kb"].append(measure(build, environ=kb_env, cwd=folder, timeout=timeout))
        if project:
            full["mkdocs"].append(_mkdocs(mkdocs, project, timeout, dirty=False))
    figures: dict[str, Any] = {"pages": {"kb": _pages(out)}}
    if project:
        figures["pages"]["mkdocs"] = _pages(site._mkdocs_site(project))
    edited: dict[str, list[Sample]] = {"kb": [], "mkdocs": []}
    paths = sorted(kb.iter_entry_paths())
    edits = 1 if quick else 2
    for round_ in range(edits):
        victim = paths[round_ * len(paths) // edits]  # months apart: file names begin with the date
        line = f"\nEdited in round {round_}: zyzzyva.\n"
        with victim.open("a", encoding="utf-8") as handle:
            handle.write(line)
        edited["kb"].append(measure(build, environ=kb_env, cwd=folder, timeout=timeout))
        if project:
            with (project / "docs" / victim.relative_to(kb.entries_path)).open("a", encoding="utf-8") as handle:
                handle.write(line)
            edited["mkdocs"].append(_mkdocs(mkdocs, project, timeout, dirty=True))
    for kind, samples in (("full", full), ("edit", edited)):
        figures[f"{kind}_s"] = {tool: median_s(values) for tool, values in samples.items() if values}
        figures[f"{kind}_peak_mb"] = {tool: peak_mb(values) for tool, values in samples.items() if values}
    return figures


def _mkdocs(mkdocs: Path, project: Path, timeout: float, dirty: bool) -> Sample:
    out = site._mkdocs_site(project)
    if not dirty:
        shutil.rmtree(out, ignore_errors=True)
    argv = [str(mkdocs), "build", "-q", "-f", str(project / "mkdocs.yml"), "-d", str(out)]
    return measure([*argv, "--dirty"] if dirty else argv, environ=env(), timeout=timeout)


def _pages(folder: Path) -> int:
    return sum(1 for _ in folder.rglob("*.html"))
