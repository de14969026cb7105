"""A fresh held-out secrets corpus, from a source kb's masking was never written or tuned from: the examples of Nosey
Parker's rules (https://github.com/praetorian-inc/noseyparker, Apache-2.0, its notice in NOTICE-noseyparker; the
commit is in the JSON file's `source`), each a credential in the context its rule's authors saw it in (source code,
configuration, shell, URLs, private key files).

tests/data/secrets_corpus_fresh_build.py made secrets_corpus_fresh.json from them: each credential's characters
replaced by random ones of the same class behind its vendor prefix, so no value is anyone's credential; texts are
stored base64-encoded so that secret scanners run on this repository do not flag the file. Every credential
here is held out: kb is measured on them as they are (bench/secrets_detectors.py, docs/reliability.md) and no
pattern of kb's is written from them.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from data.secrets_corpus import Secret

_CORPUS = json.loads(Path(__file__).with_name("secrets_corpus_fresh.json").read_text())
SOURCE: str = _CORPUS["source"]


def _decoded(text: str) -> str:
    return base64.b64decode(text).decode()


def _secret(number: int, item: dict) -> Secret:
    text, value = _decoded(item["text"]), _decoded(item["value"])
    return Secret(item["id"], value, text.replace(value, "{}"), f"FRESH_{number}_SECRET")


SECRETS: list[Secret] = [_secret(number, item) for number, item in enumerate(_CORPUS["items"])]
