"""kb's masking against detect-secrets' plugins on the secrets corpus: what each leaks and what each mangles.

`python -m bench.secrets_detectors` (needs the `secrets-bench` extra: detect-secrets). For every credential
shape in tests/data/secrets_corpus.py, a detector leaks it when the text it is shown in keeps the secret's
middle (kb) or when no finding covers the secret (detect-secrets reports values and does not mask: masking what
it reports is what a masker built on it could do); detect-secrets is also counted by line, a secret leaked only
when nothing at all is reported on its text (what a masker hiding whole flagged lines would do). For every
look-alike, a detector mangles it when kb changes the text or detect-secrets reports anything on it.
detect-secrets runs with all its plugins and default filters, as `detect-secrets scan` does, each text in a
file of its own. kb's patterns are measured as they are now and, given `--before REV`, as they were at a git
revision (kb/redact.py of that revision, loaded from `git show`).
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

from data.secrets_corpus import LOOK_ALIKES, SECRETS  # noqa: E402


def kb_masker(rev: str | None) -> Callable[[str], str]:
    if rev is None:
        from kb.redact import redact_text

        return redact_text
    source = subprocess.run(
        ["git", "show", f"{rev}:kb/redact.py"], cwd=ROOT, capture_output=True, text=True, check=True
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
    parser.add_argument("--before", help="also measure kb/redact.py as it was at this git revision")
    run(parser.parse_args().before)


def run(before: str | None = None) -> None:
    """Leaks and mangled look-alikes of kb's masking (and of it at git revision `before`) and detect-secrets'."""
    secrets = [secret.text for secret in SECRETS]
    alikes = [alike.text for alike in LOOK_ALIKES]
    rows = []
    for label, rev in [("kb now", None)] + ([(f"kb at {before}", before)] if before else []):
        mask = kb_masker(rev)
        leaked = [s.id for s in SECRETS if s.probe in mask(s.text)]
        mangled = [a.id for a in LOOK_ALIKES if mask(a.text) != a.text]
        rows.append((label, leaked, mangled))
    secret_findings = detect_secrets_findings(secrets)
    alike_findings = detect_secrets_findings(alikes)
    pairs = list(zip(SECRETS, secret_findings, strict=True))
    mangled = [a.id for a, found in zip(LOOK_ALIKES, alike_findings, strict=True) if found]
    leaked = [s.id for s, found in pairs if not any(s.probe in f for f in found)]
    rows.append(("detect-secrets 1.5, values reported", leaked, mangled))
    rows.append(("detect-secrets 1.5, lines flagged", [s.id for s, found in pairs if not found], mangled))
    print(f"{len(SECRETS)} credential shapes, {len(LOOK_ALIKES)} look-alikes\n")
    print(f"{'detector':36} {'leaked':>7} {'mangled':>8}")
    for label, leaked, mangled in rows:
        print(f"{label:36} {len(leaked):>7} {len(mangled):>8}")
    for label, leaked, mangled in rows:
        print(f"\n{label}\n  leaked: {', '.join(leaked) or '-'}\n  mangled: {', '.join(mangled) or '-'}")


if __name__ == "__main__":
    main()
