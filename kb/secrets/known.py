"""The credentials this machine holds, read in memory so that their exact values are masked wherever they appear.

A value no rule recognises (a netrc password, a registry token, a cloud secret of any shape) is still masked when
it is the value of a secret-named environment variable of this process (which a recorded run inherits) or sits in
one of the credential files training tools read: netrc, the Hugging Face token, AWS credentials, Docker's config,
the git credential store, GitHub CLI's hosts, .pypirc, .npmrc, Kaggle's key and Google's application credentials.
This is what CI systems do with registered secrets. The values are only ever held in memory: nothing read here is
written anywhere, and a file that cannot be read or parsed is skipped without a word about its content.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import itertools
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

SHORTEST = 8  # a shorter value is too likely to be ordinary text (`admin`, `test`) to be masked everywhere
_MAX_FILE = 1 << 20  # credential files are small; a larger one is not what it claims to be
_URL_PASSWORD = re.compile(r"://[^:/@\s]*:([^@\s]+)@")
_NPM_SECRET = re.compile(r"(?:_authToken|_auth|_password)\s*=\s*(\S+)")


@functools.cache
def values() -> tuple[str, ...]:
    """Every known credential of this process, longest first (so that one holding another is masked whole)."""
    return gather(os.environ, Path(os.environ.get("HOME") or Path.home()))


def gather(environ: Mapping[str, str], home: Path) -> tuple[str, ...]:
    found = set(_from_environment(environ))
    for reader in _READERS:
        try:
            found.update(reader(environ, home))
        except (OSError, ValueError, UnicodeError, KeyError, TypeError, AttributeError):
            continue  # unreadable or not the format: nothing known from it
    return tuple(sorted((v for v in found if len(v) >= SHORTEST and "\n" not in v), key=len, reverse=True))


def _from_environment(environ: Mapping[str, str]) -> Iterator[str]:
    from kb.secrets.names import harmless_value, is_secret_name

    for name, value in environ.items():
        value = value.strip()
        if value and is_secret_name(name) and not harmless_value(name, value):
            yield value
            yield from _URL_PASSWORD.findall(value)


def _read(path: Path) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read(_MAX_FILE)


def _file(environ: Mapping[str, str], variable: str, default: Path) -> Path:
    return Path(environ[variable]).expanduser() if environ.get(variable) else default


def _netrc(environ: Mapping[str, str], home: Path) -> Iterator[str]:
    words = _read(_file(environ, "NETRC", home / ".netrc")).split()
    for keyword, value in itertools.pairwise(words):
        if keyword in ("password", "account"):
            yield value


def _huggingface(environ: Mapping[str, str], home: Path) -> Iterator[str]:
    hf_home = _file(environ, "HF_HOME", home / ".cache" / "huggingface")
    for path in (_file(environ, "HF_TOKEN_PATH", hf_home / "token"), home / ".huggingface" / "token"):
        if path.is_file():
            yield _read(path).strip()
    stored = hf_home / "stored_tokens"
    if stored.is_file():
        yield from (section.get("hf_token", "") for section in _ini_sections(_read(stored)))


def _ini_secrets(text: str) -> Iterator[str]:
    from kb.secrets.names import is_secret_name

    for section in _ini_sections(text):
        yield from (value.strip() for name, value in section.items() if is_secret_name(name))


def _ini_sections(text: str) -> list[Mapping[str, str]]:
    """The sections of an INI file; one that is not INI raises ValueError."""
    import configparser  # only where such a file is: most machines have none, and every recording reads them

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise ValueError(str(exc)) from None
    return list(parser.values())


def _aws(environ: Mapping[str, str], home: Path) -> Iterator[str]:
    yield from _ini_secrets(_read(_file(environ, "AWS_SHARED_CREDENTIALS_FILE", home / ".aws" / "credentials")))


def _pypirc(environ: Mapping[str, str], home: Path) -> Iterator[str]:
    yield from _ini_secrets(_read(home / ".pypirc"))


def _docker(environ: Mapping[str, str], home: Path) -> Iterator[str]:
    config = json.loads(_read(_file(environ, "DOCKER_CONFIG", home / ".docker") / "config.json"))
    for entry in (config.get("auths") or {}).values():
        for key in ("auth", "identitytoken", "registrytoken", "password"):
            if isinstance(entry.get(key), str):
                yield entry[key]
        if isinstance(entry.get("auth"), str):
            with contextlib.suppress(binascii.Error, UnicodeDecodeError):
                yield base64.b64decode(entry["auth"]).decode().partition(":")[2]


def _git_credentials(environ: Mapping[str, str], home: Path) -> Iterator[str]:
    for path in (home / ".git-credentials", home / ".config" / "git" / "credentials"):
        if path.is_file():
            yield from _URL_PASSWORD.findall(_read(path))


def _github_cli(environ: Mapping[str, str], home: Path) -> Iterator[str]:
    text = _read(home / ".config" / "gh" / "hosts.yml")
    yield from re.findall(r"oauth_token:\s*(\S+)", text)


def _npm(environ: Mapping[str, str], home: Path) -> Iterator[str]:
    yield from _NPM_SECRET.findall(_read(home / ".npmrc"))


def _json_secrets(path: Path) -> Iterator[str]:
    from kb.secrets.names import is_secret_name

    data = json.loads(_read(path))
    for name, value in data.items() if isinstance(data, dict) else ():
        if isinstance(value, str) and is_secret_name(name):
            if "PRIVATE KEY" in value:  # a key's lines: each is masked where the block is cut up
                yield from (line for line in value.splitlines() if len(line) >= 40 and "-----" not in line)
            else:
                yield value


def _kaggle(environ: Mapping[str, str], home: Path) -> Iterator[str]:
    yield from _json_secrets(_file(environ, "KAGGLE_CONFIG_DIR", home / ".kaggle") / "kaggle.json")


def _google(environ: Mapping[str, str], home: Path) -> Iterator[str]:
    default = home / ".config" / "gcloud" / "application_default_credentials.json"
    yield from _json_secrets(_file(environ, "GOOGLE_APPLICATION_CREDENTIALS", default))


_READERS = (_netrc, _huggingface, _aws, _pypirc, _docker, _git_credentials, _github_cli, _npm, _kaggle, _google)
