"""The site answers with the practical floor set in kb.toml, as the CLI does: a base whose floor is 30%, where the
default 2% would call cuda's 25% drop from torch 2.9.0 to 2.10.0 a regression and 30% calls it equivalent."""

from __future__ import annotations

from pathlib import Path

import pytest
from answers_base import WORKLOAD, make_base
from conftest import json_data, run_kb
from test_site_answers_pages import fold, text, trend_table

from kb.store.knowledge_base import KnowledgeBase

FLOOR = 0.3


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[KnowledgeBase, Path]:
    base, _ = make_base(tmp_path_factory.mktemp("site-floor"))
    out = base.root / "site"
    config = base.root / "kb.toml"
    for settings in (config.read_text(), config.read_text().replace("floor = 0.02", f"floor = {FLOOR}")):
        config.write_text(settings)  # built at 2% first: a page kept from that build would answer with the old floor
        result = run_kb("--kb", str(base.root), "site", "build", "--out", str(out))
        assert result.returncode == 0, result.stderr
    return base, out


def cli(base: KnowledgeBase, *args: str) -> object:
    return json_data(run_kb("--kb", str(base.root), *args, "--json").stdout)


def test_the_trend_page_judges_changes_with_the_floor_of_kb_toml(built: tuple[KnowledgeBase, Path]) -> None:
    base, out = built
    found = cli(base, "trend", "tokens_per_s", "--workload", WORKLOAD)
    cuda = next(series for series in found["series"] if series["group"].startswith("cuda"))
    assert [point["flag"] for point in cuda["points"]] == ["", ""]  # -25%: within a floor of 30%
    chart, rows, expected = trend_table(out, "torch", found)
    assert rows[1:] == expected
    assert "regression" not in chart
    said = text((out / "trends" / f"{WORKLOAD}.html").read_text())
    assert "each change judged between the runs on either side of it (floor 30%)" in said
    assert "noise band" not in said


@pytest.mark.parametrize("page", ["index.html", "compare/index.html"])
def test_the_board_on_the_site_judges_with_the_floor_of_kb_toml(built: tuple[KnowledgeBase, Path], page: str) -> None:
    base, out = built
    said = text((out / page).read_text())
    for workload in cli(base, "board")["workloads"]:
        assert fold(workload["best"]) in said
    assert "floor 30%" in said and "floor 2%" not in said
