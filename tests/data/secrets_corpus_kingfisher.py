"""The held-out secrets corpus: the examples of MongoDB Kingfisher's rules (https://github.com/mongodb/kingfisher,
Apache-2.0, its notice in NOTICE-kingfisher; the commit is in the JSON file's `source`) that are not Nosey Parker's,
each a credential in the context its rule's authors saw it in.

tests/data/secrets_corpus_kingfisher_build.py made secrets_corpus_kingfisher.json from them: each credential's
characters replaced by random ones of the same class behind its vendor prefix, so no value is anyone's credential;
texts are stored base64-encoded so that secret scanners run on this repository do not flag the file. No pattern or
rule of kb's was written or tuned from it: kb is measured on it as it is (bench/secrets_detectors.py,
tests/test_secrets_held_out.py, docs/reliability.md).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from data.secrets_corpus import Secret

_CORPUS = json.loads(Path(__file__).with_name("secrets_corpus_kingfisher.json").read_text())
SOURCE: str = _CORPUS["source"]
LEFT_OUT_AS: str = _CORPUS["left_out_as"]


def _decoded(text: str) -> str:
    return base64.b64decode(text).decode()


def _secret(number: int, item: dict) -> Secret:
    text, value = _decoded(item["text"]), _decoded(item["value"])
    return Secret(item["id"], value, text.replace(value, "{}"), f"KINGFISHER_{number}_SECRET")


SECRETS: list[Secret] = [_secret(number, item) for number, item in enumerate(_CORPUS["items"])]
