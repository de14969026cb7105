"""Mask credentials before text becomes part of an entry.

Entries, their logs and the sites built from them are shared through git and static hosting, where a
leaked token stays in history for good. So every log line, command line, environment and note is passed
through here first, and what looks like a credential is replaced by `MASK`, keeping the text around it:

- values of a known shape anywhere: AWS access key ids, Hugging Face, GitHub, OpenAI, Anthropic, Slack,
  Google (API keys, OAuth client secrets and access tokens), Stripe, npm, PyPI, SendGrid and GitLab
  tokens, Slack webhook paths, JWTs, bearer tokens, URL passwords and PEM private key blocks;
- values assigned to a secret-looking name (see `is_secret_name`): `HF_TOKEN=...`, `password: ...`,
  `--api-key ...`, `"api_key": "..."`, `Authorization: Bearer ...`, `AccountKey=...` in Azure connection
  strings, `sig=...` in Azure SAS URLs, whole `Cookie:` headers.

Masking errs towards hiding: a harmless value next to a secret-looking name is masked too. Harmless
look-alikes that evidence needs (commit hashes, digests, versions, `TOKENIZERS_PARALLELISM=false`,
`num_tokens: 4096`, Inductor's `"key": "f..."` cache keys) are kept. Every pattern is linear in the
text's length, so megabyte logs are cheap.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TextIO

MASK = "[REDACTED]"

# Word parts of a name that say it holds a secret. PRIVATE alone is not one: it names PyTorch's
# PrivateUse1 dispatch key, and private keys and tokens carry KEY or TOKEN anyway. TOKENS is not one
# either: `num_tokens` and `tokens_per_s` are metrics. PASS is not one: `PASS: test_x` is test output.
_SECRET_WORDS = frozenset(
    {
        "TOKEN", "ACCESSTOKEN", "AUTHTOKEN", "APITOKEN", "SESSIONTOKEN",
        "SECRET", "SECRETS", "CLIENTSECRET",
        "PASSWORD", "PASSWORDS", "PASSWD", "PWD", "PASSPHRASE",
        "KEY", "KEYS", "APIKEY", "PRIVATEKEY", "SECRETKEY", "ACCESSKEY",
        "CREDENTIAL", "CREDENTIALS", "CREDS",
        "AUTH", "AUTHORIZATION", "AUTHENTICATION",
        "COOKIE", "COOKIES", "SESSION", "SESSIONID",
        "SIGNATURE", "SIG",
    }
)  # fmt: skip
# A last word part that describes a secret rather than holding it: `key_size`, `max_session_len`,
# `token_type`, `HF_TOKEN_PATH`, `KeyError`.
_DESCRIPTIVE_WORDS = frozenset(
    {"SIZE", "LEN", "LENGTH", "BITS", "COUNT", "TYPE", "NAME", "FILE", "PATH", "DIR", "URL", "ERROR", "EXCEPTION"}
)
# Whole names (word parts joined by `_`) that the rule above gets wrong: the shell's working directory,
# and the dispatch key that PyTorch backend evidence is full of (`DispatchKey`, `dispatch_key=...`).
_HARMLESS_NAMES = frozenset({"PWD", "DISPATCH_KEY"})
# Substrings of every secret word, so that a look-ahead skips most names before any Python runs; trying
# the stems only where one can start halves the time spent on a log.
_STEMS = ("token", "secret", "pass", "pwd", "key", "cred", "auth", "cookie", "session", "sig")
_STEM_STARTS = "".join(sorted({stem[0] for stem in _STEMS} | {stem[0].upper() for stem in _STEMS}))
# Values that configure rather than authenticate: `use_auth_token=True`, `"api_key": null`.
_NOT_SECRET_VALUES = frozenset({"true", "false", "none", "null"})
# Inductor names its caches' entries by a SHA-256 in lower-case base32, with a letter for the cache in
# front (`"key": "fvyrmq..."` in compile traces): a digest, not a secret, when the name is a bare `key`.
_CACHE_KEY = re.compile(r"[a-z]?[a-z2-7]{51}")

# Camel case, digits and any punctuation separate word parts: `HFToken`, `api_key2`, `X-Api-Key`.
_WORD_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")

# Private keys: a whole block, even with escaped newlines in JSON; or, where a log was cut into pieces
# (as kb's tee does), a block's start and the key lines after it, or the key lines that begin a piece
# and end a block. Certificates are public and never match.
_PEM_BEGIN = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
# A line inside a block: base64, or a header like DEK-Info; never a line holding a mask (no `[`), so
# that masking twice changes nothing.
_PEM_LINE = r"(?:[A-Za-z0-9+/=]{0,128}|[A-Za-z-]{1,32}: [^\r\n\[]*)"
_PEM = re.compile(
    rf"{_PEM_BEGIN}[^-]*(?:-(?!----)[^-]*)*{_PEM_END}"  # up to the next run of dashes only: linear
    rf"|{_PEM_BEGIN}(?:\r?\n{_PEM_LINE}){{0,512}}"
    rf"|\A(?:{_PEM_LINE}\r?\n){{0,512}}{_PEM_END}"
)

# Credentials recognisable by their shape. Each starts where no word goes on before it, so every
# start is tried once. Groups `url`, `hook` and `bearer` are kept in front of the mask.
_SHAPES = re.compile(
    r"(?P<url>://[^\s:/?#@\"'<>\[\]]*:)[^\s/?#@\"'<>\[\]]+(?=@)"  # scheme://user:password@host
    r"|(?<![A-Za-z0-9_-])(?:"
    r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"  # AWS access key id
    r"|hf_(?=[A-Za-z0-9]*[A-Z])[A-Za-z0-9]{30,}"  # Hugging Face; the capital spares `hf_` identifiers
    r"|gh[pousr]_[A-Za-z0-9]{36,}"  # GitHub classic tokens
    r"|github_pat_[A-Za-z0-9_]{40,}"  # GitHub fine-grained tokens
    r"|sk-(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic (not sk-learn)
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|xox[abeoprs]-[0-9][A-Za-z0-9-]{8,}"  # Slack tokens
    r"|(?P<hook>hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/-]+"  # Slack webhooks
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*"  # JWT
    r"|AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"  # Google API key
    r"|npm_[A-Za-z0-9]{36,}"  # npm
    r"|gl(?:pat|oas|dt|rt|cbt|ptt|ft|imt|agent|soat)-[A-Za-z0-9_-]{20,}"  # GitLab's token prefixes
    r"|pypi-Ag[A-Za-z0-9_-]{50,}"  # PyPI (a macaroon: its base64 starts alike)
    r"|SG\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{40,}"  # SendGrid
    r"|GOCSPX-[A-Za-z0-9_-]{24,}"  # Google OAuth client secret
    r"|ya29\.[A-Za-z0-9_-]{20,}"  # Google OAuth access token
    r"|(?P<bearer>(?i:bearer)[ \t]+)(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{16,}=*"  # not "the bearer of"
    r")"
)

# `name=value`, `name: value`, `"name": "value"`, `--name value`, `env["NAME"] = value` where the name
# may be secret: the match is only a candidate, `is_secret_name` and the value decide. The value is a
# quoted string (also with escaped quotes, as JSON inside a JSON string has them: `\"auth\": \"...\"`),
# an earlier mask (so masking twice changes nothing) or a bare word; an HTTP auth scheme in front of it
# is kept. A Cookie header is masked to the end of its line (it is all secrets), or of the JSON string
# it is in.
_NAME = r"[A-Za-z_][A-Za-z0-9_.-]{0,63}"
_ASSIGNMENT = re.compile(
    rf"""
    (?<![A-Za-z0-9_.-])(?=[A-Za-z_-])
    (?=-{{0,2}}[A-Za-z0-9_.-]{{0,64}}?(?=[{_STEM_STARTS}])(?i:{"|".join(_STEMS)}))
    (?:
        (?P<cookie>(?i:(?:set-)?cookie)["']?[ \t]*:[ \t]*)(?P<cookie_value>[^"\\\s](?:[^"\\\r\n]|\\.)*)
      | (?:
            --?(?P<flag>{_NAME})[ \t]+(?!-)
          | -{{0,2}}(?P<name>{_NAME})\\?["']?\]?[ \t]*(?:=(?!=)|:(?!:))[ \t]*
        )
        (?:(?i:bearer|basic|token|digest|negotiate)[ \t]+)?
        (?:
            "(?P<dq>(?:[^"\\\r\n]|\\.)+)"
          | '(?P<sq>(?:[^'\\\r\n]|\\.)+)'
          | \\"(?P<escaped>(?:[^"\\\r\n]|\\[^"\r\n])+)\\"
          | (?P<bare>{re.escape(MASK)}|[^\s"'`,;&<>()\[\]{{}}]+)
        )
    )
    """,
    re.X,
)


def is_secret_name(name: str) -> bool:
    """Whether a variable, key or flag name says its value is a secret.

    The name is split into word parts (on punctuation, digits and camel case); it is secret when a part
    is a secret word (`HF_TOKEN`, `X-Api-Key`, `db_pwd`) unless the last part only describes the secret
    (`key_size`, `token_type`) or the name is a known harmless one (`PWD`). `TOKENIZERS_PARALLELISM`,
    `AUTHOR` and `KEYBOARD_LAYOUT` are kept because no part equals a secret word. `SESSION_MANAGER` (a
    desktop socket path) counts as secret: masking it costs nothing.
    """
    parts = [part.upper() for part in _WORD_PART.findall(name)]
    if not parts or "_".join(parts) in _HARMLESS_NAMES or parts[-1] in _DESCRIPTIVE_WORDS:
        return False
    return any(part in _SECRET_WORDS for part in parts)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of an environment with secret-named values masked and secrets inside other values masked."""
    return {name: MASK if is_secret_name(name) else redact_text(value) for name, value in env.items()}


def redact_text(text: str) -> str:
    """The text with every credential it contains replaced by MASK; the rest is unchanged.

    Private key blocks are masked whole when the text holds the whole block, so pass a log in pieces
    of many lines rather than line by line.
    """
    if "PRIVATE KEY" in text:
        text = _PEM.sub(MASK, text)
    return _mask_assignments(_SHAPES.sub(_mask_shape, text))


def _mask_shape(match: re.Match[str]) -> str:
    if match["url"]:  # the user name can be a token too: `https://<token>:x-oauth-basic@github.com`
        return _SHAPES.sub(_mask_shape, match["url"]) + MASK
    return (match["hook"] or match["bearer"] or "") + MASK


def _mask_assignments(text: str) -> str:
    out: list[str] = []
    done = start = 0
    while match := _ASSIGNMENT.search(text, start):
        masked = _mask_assignment(match)
        if masked is None:  # not a secret after all; a secret may still start inside the candidate
            start = match.start() + 1
            continue
        out += (text[done : match.start()], masked)
        done = start = match.end()
    out.append(text[done:])
    return "".join(out)


def _mask_assignment(match: re.Match[str]) -> str | None:
    value = match.lastgroup  # the value's group: it is the last one to close
    assert value is not None
    name = match["flag"] or match["name"]
    if value != "cookie_value" and (
        not is_secret_name(name)
        or match[value].lower() in _NOT_SECRET_VALUES
        or (name.lower() == "key" and _CACHE_KEY.fullmatch(match[value]))
    ):
        return None
    text = match.string
    return text[match.start() : match.start(value)] + MASK + text[match.end(value) : match.end()]


_PEM_OPEN = re.compile(_PEM_BEGIN)
_PEM_CLOSE = re.compile(_PEM_END)
_SEPARATOR = re.compile(r"[\s,;&{}]")
HOLD_MAX = 64 * 1024  # a private key block is a few KiB: an open one is held back this far at most
LONG_LINE = 64 * 1024  # a line without an end is cut past this, at a separator outside any secret
CONTEXT = 1024  # what is held back after such a cut, so that a value there meets its name
CUT_TRIES = 8


class StreamMasker:
    """Masks text that arrives in pieces (reads of a pipe, blocks of a file) as if it came whole.

    `feed` returns the masked text that is safe to write now; it holds back only what a later piece may
    complete into a secret: a private key block that has begun but not ended, and the end of a line too long
    to wait for (past `long_line`). So a key printed one line at a time is masked whole, and a long line is
    never cut inside a token, while ordinary logs are written as they come (a kill loses nothing held).
    """

    def __init__(self, long_line: int = LONG_LINE) -> None:
        self._pending = ""
        self._long_line = long_line

    def feed(self, text: str) -> str:
        pending = self._pending + text
        cut = _safe_cut(pending, self._long_line)
        self._pending = pending[cut:]
        return redact_text(pending[:cut]) if cut else ""

    def close(self) -> str:
        rest, self._pending = self._pending, ""
        return redact_text(rest) if rest else ""


def _safe_cut(text: str, long_line: int) -> int:
    """Where `text` can be cut with no secret in two: after its last whole line, unless a key block is open."""
    begin = None
    for begin_match in _PEM_OPEN.finditer(text, max(len(text) - HOLD_MAX, 0)) if "PRIVATE KEY" in text else ():
        begin = begin_match.start()
    if begin is not None and not _PEM_CLOSE.search(text, begin):
        return begin if len(text) - begin < HOLD_MAX else len(text)  # past the bound: masked from its start
    cut = text.rfind("\n") + 1
    if cut or len(text) <= long_line:
        return cut
    # One line longer than that: cut at a separator that no secret, nor a name with its value, spans.
    cut = len(text) - CONTEXT
    for _ in range(CUT_TRIES):
        separator = _last_separator(text, cut)
        if separator is None:
            break
        window = max(separator - CONTEXT, 0)
        spans = [span for span in _secret_spans(text[window : separator + CONTEXT], window) if span[0] < separator]
        inside = [start for start, end in spans if start < separator < end]
        if not inside:
            return separator
        cut = min(inside)
    return len(text) - CONTEXT  # nothing like a secret or separator nearby: any cut is as good


def _last_separator(text: str, before: int) -> int | None:
    """The position just after the last separator (white space, `,;&{}`) before `before`, within 4 KiB."""
    found = None
    for match in _SEPARATOR.finditer(text, max(before - 4096, 0), before):
        found = match.end()
    return found


def _secret_spans(text: str, offset: int) -> Iterator[tuple[int, int]]:
    for match in _SHAPES.finditer(text):
        yield offset + match.start(), offset + match.end()
    for match in _ASSIGNMENT.finditer(text):
        yield offset + match.start(), offset + match.end()


def redact_pieces(source: TextIO, block: int = 1 << 20, longest: int = 16 << 20) -> Iterator[str]:
    """The text of `source` with secrets masked, in pieces, for files of any size (memory stays bounded).

    Pieces end after whole lines; a line longer than `longest` (a trace written on one line) is cut at a
    separator that no secret spans (StreamMasker).
    """
    masker = StreamMasker(longest)
    for chunk in iter(lambda: source.read(block), ""):
        yield masker.feed(chunk)
    yield masker.close()
