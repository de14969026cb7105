"""The decisions page: every decision, its choice and triggers, the evidence it cites, its last review, and why it
is due, each reason linked to the runs and releases behind it (`kb revisit`, `kb show`). Decisions are grouped
(due, not due, not checked, unreadable); from a dozen on, only the due and the unreadable unfolded, so that
hundreds stay a screen to scan; a decision, review or release file kb cannot read (git conflict markers, say) is
named, never left out unseen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kb.answers.decisions import OPEN_STATUSES, decision_state, unreadable_decisions
from kb.errors import KbError
from kb.index import answers as index_answers
from kb.index import site as index_site
from kb.index import stored_json
from kb.website import answers as site_answers
from kb.website.pages.answer_pages import shown_error
from kb.website.pages.base import Build, Page, Publisher, digest, href

SHOWN_ENTRIES = 10  # the runs named under one reason; the rest are counted
FOLDED_FROM = 13  # decisions: from this many, the groups not due are folded (a dozen cards read as one page)
GROUPS = (
    ("due", "Due for a revisit"),
    ("quiet", "Not due"),
    ("closed", "Not checked (rejected, superseded or without a status)"),
    ("unreadable", "Unreadable"),
)


class DecisionsPage(Publisher):
    def pages(self, build: Build) -> Iterator[Page]:
        site = self.site
        db, paths, root = site.db, site.paths, str(site.kb.root)
        groups: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in GROUPS}
        for entry_id, title, recorded, front_matter in index_site.decisions(db):
            data = stored_json.loads(front_matter)
            section = data.get("decision") or {}
            card = {
                "id": entry_id,
                "title": title,
                "recorded": recorded,
                "href": href(paths[entry_id], 0),
                "status": section.get("status"),
                "choice": section.get("choice"),
                "question": section.get("question"),
                "triggers": section.get("triggers") or [],
                "evidence": site_answers.decision_evidence(db, site_answers.evidence_ids(data), paths),
            }
            try:
                if entry_id in build.unreadable:
                    raise KbError(build.unreadable[entry_id])
                state = decision_state(site.entry(entry_id), db, build.today)
            except KbError as exc:  # a review file with git conflict markers, say: named, never dropped
                groups["unreadable"].append(card | {"unreadable": shown_error(exc, root)})
                continue
            card |= {
                "fired": [_fired(trigger, db, paths) for trigger in state.triggers if trigger.fired],
                "review": state.last_review,
                "untriggered": state.untriggered,
            }
            group = "due" if state.due else "quiet" if card["status"] in OPEN_STATUSES else "closed"
            groups[group].append(card)
        files = [
            {"file": _relative(where, site.kb.entries_path), "what": what}
            for where, what in unreadable_decisions(build.problems)
        ]  # fmt: skip
        shown = [(name, label, groups[name]) for name, label in GROUPS if groups[name]]
        total = sum(len(cards) for cards in groups.values())
        context = {"groups": shown, "files": files, "total": total, "fold": total >= FOLDED_FROM,
                   "none_due": not (groups["due"] or groups["unreadable"] or files)}  # fmt: skip
        yield Page("decisions.html", "decisions.html", digest("decisions", context), lambda: context)


def _fired(trigger: Any, db: Any, paths: dict[str, str]) -> dict[str, Any]:
    """A fired trigger's reason with the entries behind it, each by id (a release by its title) and linked."""
    data = index_answers.front_matters(db, trigger.entries[:SHOWN_ENTRIES])
    entries = []
    for entry_id in trigger.entries[:SHOWN_ENTRIES]:
        item = data.get(entry_id) or {}
        name = item.get("title") if item.get("kind") == "release" else None
        entries.append({"id": entry_id, "name": name or entry_id, "href": paths.get(entry_id)})
    return {"text": trigger.text, "reason": trigger.reason or trigger.text, "entries": entries,
            "more": max(0, len(trigger.entries) - SHOWN_ENTRIES)}  # fmt: skip


def _relative(where: str, entries: Path) -> str:
    """`file:line` as the page names it: relative to the entries folder, never the builder's own path."""
    path = Path(where)
    return path.relative_to(entries).as_posix() if path.is_relative_to(entries) else where
