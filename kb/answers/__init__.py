"""The answers the evidence is for: the board and its checklist, comparisons, trends, regressions,
expectations and decisions. Read through the index's named queries (kb.index.answers); rendered by the
terminal and the site."""
