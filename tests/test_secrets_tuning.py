"""Masking on the corpora it was tuned on: every credential is masked but the ones listed, each with its reason and
each a strict expected failure, so that a credential masked since shows as a pass to move out of the list.

The independent corpus (tests/data/secrets_corpus_independent.py) and the Nosey Parker corpus
(tests/data/secrets_corpus_noseyparker.py, its rules' examples) are tuning data, whole: kb vendors Nosey Parker's rule
set, and its leaks there were looked at and closed. The held-out figure is test_secrets_held_out.py's."""

from __future__ import annotations

import pytest
from data import secrets_corpus_noseyparker
from data.secrets_corpus_independent import LOOK_ALIKES, SECRETS

from kb.secrets.redact import redact_text

# The tuning corpus's credentials masking keeps, and why.
TUNING_LEAKS = {
    "langfuse": "a UUID after a prefix is kept as a UUID, which evidence holds (run and request ids)",
    "axiom": "a UUID after a prefix is kept as a UUID, which evidence holds (run and request ids)",
    "scaleway": "17 capitals and digits after `SCW`: too short a run to tell from an identifier",
}

# The Nosey Parker corpus's credentials masking keeps, and why. Five are not credentials: the corpus took the last
# long group of its rule's match, which there is a user name, a host or a template.
NOSEYPARKER_LEAKS = {
    "np.generic.3#2": "`PASS = '...'` in capitals: `PASS` is a test's outcome in logs",
    "np.generic.15#2": 'a comparison (`password == "X"`) on a line with no token-like run to search',
    "np.pwhash.1#1": "an MD5-crypt hash alone on its line, no run of 16 token characters in it",
    "np.jenkins.2#0": "a hex password two lines below the notice that names it",
    "np.truenas.1#3": 'an API key in a JSON list, a line below its `"params"` name',
    "np.netrc.1#1": "not a credential: the probe is a netrc login name (its password is masked)",
    "np.psexec.1#5": "not a credential: the probe is psexec's user name (its `-p` password is masked)",
    "np.odbc.1#8": "not a credential: the probe is a template (`#{...}`), not a value",
    "np.mongodb.1#12": "not a credential: the probe is a URL's user name (its password is masked)",
    "np.postgres.1#6": "not a credential: the probe is a URL's host (its password is masked)",
}


def _marked(secrets, leaks, reason):
    return [
        pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=reason(s.id))) if s.id in leaks else s
        for s in secrets
    ]


def test_the_noseyparker_corpus_is_apart_from_the_independent_one() -> None:
    corpus = secrets_corpus_noseyparker.SECRETS
    assert len(corpus) >= 300 and len({s.id for s in corpus}) == len(corpus)
    assert secrets_corpus_noseyparker.SOURCE.startswith("praetorian-inc/noseyparker@")
    assert not {s.value for s in corpus} & {s.value for s in SECRETS}
    assert all(s.probe in s.text for s in corpus)


@pytest.mark.parametrize("secret", _marked(SECRETS, TUNING_LEAKS, TUNING_LEAKS.get), ids=[s.id for s in SECRETS])
def test_a_tuning_credential_is_masked(secret) -> None:
    assert secret.probe not in redact_text(secret.text)


@pytest.mark.parametrize("alike", LOOK_ALIKES, ids=[a.id for a in LOOK_ALIKES])
def test_a_tuning_look_alike_is_kept(alike) -> None:
    assert redact_text(alike.text) == alike.text


@pytest.mark.parametrize(
    "secret",
    _marked(secrets_corpus_noseyparker.SECRETS, NOSEYPARKER_LEAKS, NOSEYPARKER_LEAKS.get),
    ids=[s.id for s in secrets_corpus_noseyparker.SECRETS],
)
def test_a_noseyparker_credential_is_masked(secret) -> None:
    assert secret.probe not in redact_text(secret.text)
