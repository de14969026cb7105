"""The independent corpus planted in every channel the in-sample corpus is planted in (tests/test_secrets_corpus.py:
a recorded command's environment, arguments and output, notes, options, the run folder, `--from`, attached logs in
three encodings, `kb add`, `kb decide`, `kb release`, JUnit, a profiler trace, a TORCH_TRACE folder; then the index
and the site), and every file read in every form: no credential that masking finds in text leaks through any
channel, and every look-alike survives. The credentials masking keeps (test_secrets_held_out.TUNING_LEAKS) are left
out: they are counted there."""

from __future__ import annotations

import pytest
from data.secrets_corpus import Secret
from data.secrets_corpus_independent import LOOK_ALIKES, rand
from data.secrets_corpus_independent import SECRETS as CORPUS
from test_secrets_corpus import CHANNELS, Planted, plant
from test_secrets_held_out import TUNING_LEAKS

SECRETS = [s for s in CORPUS if s.id not in TUNING_LEAKS]
# `kb release` takes a URL: a password of the in-sample corpus's kind, made here.
PASSWORD = rand("held-out-release", 18)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Planted:
    return plant(tmp_path_factory.mktemp("independent"), SECRETS, LOOK_ALIKES, PASSWORD)


def test_every_channel_was_reached(stored: Planted) -> None:
    assert sorted(stored.entries) == sorted(CHANNELS)
    assert all("[REDACTED]" in stored.entry_text(channel) for channel in stored.entries)


@pytest.mark.parametrize("secret", SECRETS, ids=[s.id for s in SECRETS])
def test_no_part_of_a_credential_is_stored_anywhere(stored: Planted, secret: Secret) -> None:
    probe, whole = secret.probe.lower().encode(), secret.value.encode()
    assert [path for path, (data, lower) in stored.scanned.items() if probe in lower or whole in data] == []


@pytest.mark.parametrize("alike", LOOK_ALIKES, ids=[a.id for a in LOOK_ALIKES])
def test_a_look_alike_survives_in_the_recorded_run(stored: Planted, alike) -> None:
    record = stored.entries["record"]
    assert record.data["environment"][alike.variable] == alike.text
    assert alike.text in record.data["command"]["argv"] and alike.text in record.body
