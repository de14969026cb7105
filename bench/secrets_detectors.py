"""kb's masking against detect-secrets' plugins and gitleaks' rule set: what each leaks and what each mangles.

`python -m bench.secrets_detectors` (needs the `secrets-bench` extra: detect-secrets). Three corpora: the
in-sample one (tests/data/secrets_corpus.py, which grew with kb's patterns), the independent one
(tests/data/secrets_corpus_independent.py), which kb is tuned on too now that its leaks are known, and the fresh
held-out one (tests/data/secrets_corpus_fresh.py: Nosey Parker's rule examples, which no pattern of kb's was
written from): its figure is the one docs/reliability.md states. It has no look-alikes. For every credential in
a corpus, a detector leaks it when the text it is shown in keeps the secret's middle (kb), when no finding covers
the secret's middle (gitleaks' rules, all of them, as kb vendors them: kb.secrets.gitleaks), or when no finding
covers the secret (detect-secrets reports values and does not mask: masking what it reports is what a masker
built on it could do); detect-secrets is also counted by line, a secret leaked only when nothing at all is
reported on its text (what a masker hiding whole flagged lines would do). For every look-alike, a detector
mangles it when kb changes the text or detect-secrets reports anything on it. detect-secrets runs with all its
plugins and default filters, as `detect-secrets scan` does, each text in a file of its own. kb's patterns are
measured as they are now and, given `--before REV`, as they were at a git revision (kb/secrets/redact.py of that
revision, loaded from `git show`).
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from data import secrets_corpus, secrets_corpus_fresh, secrets_corpus_independent  # noqa: E402
from data.secrets_corpus import LookAlike, Secret  # noqa: E402

CORPORA: dict[str, tuple[list[Secret], list[LookAlike]]] = {
    "in-sample corpus": (secrets_corpus.SECRETS, secrets_corpus.LOOK_ALIKES),
    "independent corpus (tuned on)": (secrets_corpus_independent.SECRETS, secrets_corpus_independent.LOOK_ALIKES),
    "fresh corpus (held out)": (secrets_corpus_fresh.SECRETS, []),
}


def kb_masker(rev: str | None) -> Callable[[str], str]:
    if rev is None:
        from kb.secrets.redact import redact_text

        return redact_text
    source = subprocess.run(
        ["git", "show", f"{rev}:kb/secrets/redact.py"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(source.stdout)
    spec = importlib.util.spec_from_file_location("redact_before", handle.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.redact_text


def detect_secrets_findings(texts: list[str]) -> list[list[str]]:
    """The secret values detect-secrets reports in each text (every plugin, the default filters)."""
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        sys.exit("bench.secrets_detectors needs detect-secrets: pip install -e '.[secrets-bench]'")
    found = []
    with tempfile.TemporaryDirectory() as folder, default_settings():
        for number, text in enumerate(texts):
            path = Path(folder) / f"text_{number}.txt"
            path.write_text(text + "\n")
            collection = SecretsCollection()
            collection.scan_file(str(path))
            found.append([secret.secret_value or "" for _, secret in collection])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="also measure kb/secrets/redact.py as it was at this git revision")
    run(parser.parse_args().before)


def run(before: str | None = None) -> None:
    """Leaks and mangled look-alikes of each detector on each corpus."""
    for name, (secrets, alikes) in CORPORA.items():
        measure(name, secrets, alikes, before)


def gitleaks_covers(text: str, probe: str) -> bool:
    from kb.secrets.gitleaks import find

    at = text.find(probe)
    return any(start <= at < end for start, end, _ in find(text, every_rule=True))


def measure(name: str, secrets: list[Secret], alikes: list[LookAlike], before: str | None) -> None:
    rows = []
    for label, rev in [("kb now", None)] + ([(f"kb at {before}", before)] if before else []):
        mask = kb_masker(rev)
        leaked = [s.id for s in secrets if s.probe in mask(s.text)]
        mangled = [a.id for a in alikes if mask(a.text) != a.text]
        rows.append((label, leaked, mangled))
    from kb.secrets.gitleaks import find

    leaked = [s.id for s in secrets if not gitleaks_covers(s.text, s.probe)]
    rows.append(("gitleaks rules (vendored)", leaked, [a.id for a in alikes if find(a.text, every_rule=True)]))
    secret_findings = detect_secrets_findings([s.text for s in secrets])
    alike_findings = detect_secrets_findings([a.text for a in alikes])
    pairs = list(zip(secrets, secret_findings, strict=True))
    mangled = [a.id for a, found in zip(alikes, alike_findings, strict=True) if found]
    leaked = [s.id for s, found in pairs if not any(s.probe in f for f in found)]
    rows.append(("detect-secrets 1.5, values reported", leaked, mangled))
    rows.append(("detect-secrets 1.5, lines flagged", [s.id for s, found in pairs if not found], mangled))
    print(f"\n== {name}: {len(secrets)} credentials, {len(alikes)} look-alikes\n")
    print(f"{'detector':36} {'leaked':>7} {'mangled':>8}")
    for label, leaked, mangled in rows:
        print(f"{label:36} {len(leaked):>7} {len(mangled):>8}")
    for label, leaked, mangled in rows:
        print(f"\n{label}\n  leaked: {', '.join(leaked) or '-'}\n  mangled: {', '.join(mangled) or '-'}")


if __name__ == "__main__":
    main()
