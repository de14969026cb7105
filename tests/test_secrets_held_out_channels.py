"""The held-out half of the independent corpus planted in every channel the in-sample corpus is planted in
(tests/test_secrets_corpus.py: a recorded command's environment, arguments and output, notes, options, the run
folder, `--from`, attached logs in three encodings, `kb add`, `kb decide`, `kb release`, JUnit, a profiler
trace, a TORCH_TRACE folder; then the index and the site), and every file read in every form: no held-out
credential that masking finds in text leaks through any channel, and every held-out look-alike survives. The
credentials the held-out measurement leaks (test_secrets_held_out.KNOWN_LEAKS) are left out: they are counted
there."""

from __future__ import annotations

import pytest
from data.secrets_corpus import Secret
from data.secrets_corpus_independent import HELD_OUT_LOOK_ALIKES, HELD_OUT_SECRETS, rand
from test_secrets_corpus import CHANNELS, Planted, plant
from test_secrets_held_out import KNOWN_LEAKS

SECRETS = [s for s in HELD_OUT_SECRETS if s.id not in KNOWN_LEAKS]
# `kb release` takes a URL: a password of the in-sample corpus's kind, made here.
PASSWORD = rand("held-out-release", 18)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Planted:
    return plant(tmp_path_factory.mktemp("held-out"), SECRETS, HELD_OUT_LOOK_ALIKES, PASSWORD)


def test_every_channel_was_reached(stored: Planted) -> None:
    assert sorted(stored.entries) == sorted(CHANNELS)
    assert all("[REDACTED]" in stored.entry_text(channel) for channel in stored.entries)


@pytest.mark.parametrize("secret", SECRETS, ids=[s.id for s in SECRETS])
def test_no_part_of_a_held_out_credential_is_stored_anywhere(stored: Planted, secret: Secret) -> None:
    probe, whole = secret.probe.lower().encode(), secret.value.encode()
    assert [path for path, (data, lower) in stored.scanned.items() if probe in lower or whole in data] == []


@pytest.mark.parametrize("alike", HELD_OUT_LOOK_ALIKES, ids=[a.id for a in HELD_OUT_LOOK_ALIKES])
def test_a_held_out_look_alike_survives_in_the_recorded_run(stored: Planted, alike) -> None:
    record = stored.entries["record"]
    assert record.data["environment"][alike.variable] == alike.text
    assert alike.text in record.data["command"]["argv"] and alike.text in record.body
