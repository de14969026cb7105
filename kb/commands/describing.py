"""The options that say what ran, declared once for `kb record`, `kb ingest` and `kb add`."""

from __future__ import annotations

import typer

WORKLOAD = typer.Option(None, "--workload", help="What ran, e.g. llama3-8b-pretrain.")
BACKEND = typer.Option(None, "--backend", help="cuda, rocm, neuron, tpu, xla, mps, cpu, ...")
MODE = typer.Option(None, "--mode", help="eager or compiled (or another mode name).")
TAG = typer.Option([], "--tag", help="A tag; repeatable.")
SETTING = typer.Option([], "--setting", help="key=value, e.g. batch=8; repeatable.")
VERSION = typer.Option([], "--version", help="package=version, e.g. torch=2.9.0; repeatable.")
AUTHOR = typer.Option(None, "--author", help="Who ran it.")
NOTE = typer.Option(None, "--note", help="Notes in Markdown: what was tried, what it means.")
