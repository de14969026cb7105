"""What the site's search indexes of an entry: `kb search`'s columns (kb.index.fulltext), each with its weight.

One definition of the fields and their weights serves both searches: the entry page holds each column's text
in a hidden block, weighted for Pagefind by the column's bm25 weight, and nothing else of the page is indexed.
The exact-value tokens kb's index adds (model=LSTM as one token) are for FTS5 only: the words stay.
"""

from __future__ import annotations

import re

from kb.index.fulltext import DEFAULT_FIELDS, document
from kb.model.entry import Entry

# A token fulltext.exact() made: its punctuation is private-use. Tried only where a word starts: from every
# position of a long word, the search ran to the word's end and back (a line of 50,000 "[" took a minute).
_EXACT = re.compile(r"(?<!\S)\S*[\ue000-\uefff]\S*\s?")
_JOINED = re.compile(r"(?<=\w)[^\w\s]+(?=[^\W\d_])|_")  # flex-attention, torch.compile, compile_timeout
_CAMEL = re.compile(r"\b[^\W_]+[A-Z][^\W_]*")  # OutOfMemoryError, CompileTime, NeuronCore


def search_text(entry: Entry) -> list[tuple[float, str]]:
    """(Pagefind weight, text) for each column with any text, in the index's column order."""
    columns = document(entry)
    texts = ((weight, _words(columns[name])) for name, weight in DEFAULT_FIELDS.items())
    return [(weight, text) for weight, text in texts if text]


def _words(text: str) -> str:
    """The text split into words where FTS5 splits it (Pagefind keeps flex-attention one word, which a phrase then
    misses), so a failure class is its words (compile timeout); numbers keep their points, for the excerpt. A word
    with capitals inside is lower-cased: Pagefind would also index its parts (CompileTime: compile, time), which
    FTS5 holds as one word."""
    return _CAMEL.sub(_lower, _JOINED.sub(" ", _EXACT.sub("", text))).strip()


def _lower(word: re.Match[str]) -> str:
    return word[0] if word[0].isupper() else word[0].lower()  # OOM stays: Pagefind finds no parts in it
