"""The decisions page: every decision, its choice and triggers, the evidence it cites, and why it is due."""

from __future__ import annotations

from collections.abc import Iterator

from kb.index import site as index_site
from kb.index import stored_json
from kb.website import answers as site_answers
from kb.website.pages.base import Build, Page, Publisher, digest, href


class DecisionsPage(Publisher):
    def pages(self, build: Build) -> Iterator[Page]:
        db, paths = self.site.db, self.site.paths
        decisions = []
        for entry_id, title, recorded, front_matter in index_site.decisions(db):
            section = stored_json.loads(front_matter).get("decision") or {}
            state = build.due.get(entry_id)
            decisions.append(
                {
                    "id": entry_id,
                    "title": title,
                    "recorded": recorded,
                    "href": href(paths[entry_id], 0),
                    "status": section.get("status"),
                    "choice": section.get("choice"),
                    "question": section.get("question"),
                    "triggers": section.get("triggers") or [],
                    "reasons": state.reasons if state else [],
                    "evidence": site_answers.decision_evidence(
                        db, site_answers.evidence_ids(stored_json.loads(front_matter)), paths
                    ),
                    "fired_by": site_answers.fired_by(db, state.entries, paths) if state else [],
                }
            )
        context = {"decisions": decisions}
        yield Page("decisions.html", "decisions.html", digest("decisions", context), lambda: context)
