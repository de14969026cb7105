"""Mask credentials before text becomes part of an entry.

Entries, their logs and the sites built from them are shared through git and static hosting, where a
leaked token stays in history for good. So every log line, command line, environment and note is passed
through here first, and what looks like a credential is replaced by `MASK`, keeping the text around it:

- by context, whatever the value's shape: values assigned to a secret-looking name (see `is_secret_name`):
  `HF_TOKEN=...`, `password: ...`, `--api-key ...`, `"api_key": "..."`, `AccountKey=...`, `?sig=...`; every
  `Authorization:` scheme; a machine-made URL user name; passwords in their place on database and cloud command
  lines (`mysql -pX`, `sqlplus user/X@db`); whole `Cookie:` headers;
- by shape: private key blocks, kb's own token shapes (`_TOKEN_SHAPES`), gitleaks' maintained rules
  (kb.secrets.gitleaks) and prefixed high-entropy tokens (`tokens`);
- by value: this machine's own credentials (kb.secrets.known).

Masking errs towards hiding: a harmless value next to a secret-looking name is masked too. Harmless
look-alikes that evidence needs (commit hashes, digests, UUIDs, versions, `TOKENIZERS_PARALLELISM=false`,
`num_tokens: 4096`, state-dict keys, Inductor's `"key": "f..."` cache keys) are kept. Every pattern is linear in
the text's length, and each is tried only where it can match (a context shape on a line holding its fixed text, a
token where a run of 16 token characters is, an assignment where a secret word is): 10 to 15 MB of log a second
of CPU time, 3.5 MB where every line holds a URL, 4 MB on one endless line (`python -m bench.redact`).
"""

from __future__ import annotations

import contextvars
import functools
import math
import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import cycle
from typing import Any, TextIO

from kb.secrets.names import MASK, NOT_SECRET_VALUES, harmless_value, is_secret_name

NAME_MASK = "redacted"  # where a name or tag is masked: they allow no brackets

# Substrings of every secret word, so that a look-ahead skips most names before any Python runs; trying
# the stems only where one can start halves the time spent on a log.
_STEMS = ("token", "secret", "pass", "pwd", "key", "cred", "auth", "cookie", "session", "sig", "pat", "dsn", "webhook",
          "private", "bearer")  # fmt: skip
_STEM_STARTS = "".join(sorted({stem[0] for stem in _STEMS} | {stem[0].upper() for stem in _STEMS}))
# Inductor names its caches' entries by a SHA-256 in lower-case base32, with a letter for the cache in
# front (`"key": "fvyrmq..."` in compile traces): a digest, not a secret, when the name is a bare `key`.
_CACHE_KEY = re.compile(r"[a-z]?[a-z2-7]{51}")


# Private keys: a whole block, even with escaped newlines in JSON; or, where a log was cut into pieces
# (as kb's tee does), a block's start and the key lines after it, or the key lines that begin a piece
# and end a block. Certificates are public and never match.
# SSH2 (RFC 4716) blocks are written with four dashes and spaces: `---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----`.
_PEM_BEGIN = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|---- BEGIN [A-Z0-9 ]*PRIVATE KEY ----"
_PEM_END = r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|---- END [A-Z0-9 ]*PRIVATE KEY ----"
# A line inside a block: base64, or a header like DEK-Info; never a line holding a mask (no `[`), so
# that masking twice changes nothing.
_PEM_LINE = r"(?:[A-Za-z0-9+/=]{0,128}|[A-Za-z-]{1,32}: [^\r\n\[]*)"
_PEM = (
    rf"(?:{_PEM_BEGIN})[^-]*(?:-(?!---)[^-]*)*(?:{_PEM_END})"  # up to the next run of dashes only: linear
    rf"|(?:{_PEM_BEGIN})(?:\r?\n{_PEM_LINE}){{0,512}}"
    rf"|\A(?:{_PEM_LINE}\r?\n){{0,512}}(?:{_PEM_END})"
    # PuTTY key files: the private lines after their count, and the MAC that checks them.
    r"|(?<=Private-Lines: )[0-9]{1,4}(?:(?:\r?\n|(?:\\r)?\\n)(?:[ \t]|\\t)*[A-Za-z0-9+/=]{1,128}(?![^\r\n\\])){1,512}"
    r"|(?<=Private-MAC: )[0-9a-fA-F]{16,}"
)

# A program's name on a command line (also after an escaped line break, as JSON writes one), the words
# before its password option, and the password.
_PROGRAM = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrt]))"
_BEFORE = r"\b[^\n|;&]{0,200}?[ \t]"
_ARGUMENT = r"(?:[^\s'\"\\]|\\(?![nrt]))+"  # to a blank, a quote or an escaped line break (JSON's `\n`)
# An argument: a quoted string (its quotes escaped too, as in JSON) or a run without quotes, after an `=`
# (`-p"X"`, `-p='X'`, `-p\"X\"`, `-pX`): a mask never stops at a quote, nor runs past the string the argument is
# in (`name="... -pX"`).
_SHELL_WORD = rf"=?(?:\\\"[^\"\r\n]*?\\\"|\"[^\"\r\n]*\"|'[^'\r\n]*'|{_ARGUMENT})"

# Credentials recognisable by their shape and the fixed texts (lower case) every match of each holds: a line is
# searched for a shape only where it holds one of them. Each starts where no word goes on before it, so every
# start is tried once. The groups named in _KEPT are context, kept in front of the mask.
_CONTEXT_ALTERNATIVES: tuple[tuple[tuple[str, ...], str], ...] = (
    # scheme://user:password@host, the password up to the host's @ (it may hold @ itself)
    (
        ("://",),
        r"(?P<url>://[^\s:/?#@\"'<>\[\]]*:)[^\s/?#\"'<>\[\]]*[^\s/?#@\"'<>\[\]](?=@[^\s/?#@\"'<>\[\]]*(?:[/?#\s\"'<>]|$))",
    ),
    # scheme://token@host: a user name of 20 letters and digits, with both in it, is a token
    (("://",), r"(?P<userinfo>://)(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{20,}(?=@)"),
    # a password given on a command line: mysql -pX, docker login -p X, sshpass -p X, curl -u user:X
    (
        ("mysql", "mariadb"),
        rf"(?P<cli>{_PROGRAM}(?:mysql(?:dump|admin|sh|import)?|mariadb(?:-dump)?){_BEFORE}-p)(?=\S)(?!assword)"
        rf"{_SHELL_WORD}",
    ),
    # positional passwords: Oracle's `user/PASSWORD@db`; the secret after an account or key id (`b2 authorize-account
    # ID KEY`, `mc alias set NAME URL ACCESS SECRET`, `htpasswd -b FILE USER PASSWORD`); a token as a command's argument
    (
        ("sqlplus", "sqlldr", "expdp", "impdp", "rman", "dgmgrl"),
        rf"(?P<oracle>{_PROGRAM}(?:sqlplus|sqlldr|expdp|impdp|rman|dgmgrl)(?:[ \t]+-\S+)*[ \t]+['\"]?[A-Za-z0-9_$#.]+/)"
        r"[^\s@'\"/]+",
    ),
    (
        ("authorize", "twilio", "htpasswd", "alias", "config"),
        rf"(?P<after_id>{_PROGRAM}(?:b2[ \t]+authorize[-_]account|twilio[ \t]+login|htpasswd[ \t]+-\S*b\S*[ \t]+\S+"
        rf"|mc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+)[ \t]+\S+[ \t]+){_SHELL_WORD}",
    ),
    (
        ("authtoken", "vault", "config"),
        rf"(?P<token_arg>{_PROGRAM}(?:ngrok(?:[ \t]+config)?[ \t]+(?:add-)?authtoken|vault[ \t]+login(?:[ \t]+-\S+)*"
        rf"|(?:aws|gcloud|az)[ \t]+configure?[ \t]+set[ \t]+\S*(?i:secret|token|key|password)\S*)[ \t]+)(?!-)"
        rf"{_SHELL_WORD}",
    ),
    (
        ("login", "sshpass", "twine"),
        rf"(?P<cli_login>{_PROGRAM}(?:(?:docker|podman|nerdctl|buildah|helm(?:[ \t]+registry)?|oras|skopeo|crane)"
        rf"[ \t]+login|sshpass|twine[ \t]+upload){_BEFORE}-p[ \t]*['\"]?){_ARGUMENT}",
    ),
    (("sqlcmd", "bcp", "osql"), rf"(?P<cli_upper>{_PROGRAM}(?:sqlcmd|bcp|osql){_BEFORE}-P[ \t]*['\"]?){_ARGUMENT}"),
    (
        ("ldap",),
        rf"(?P<cli_w>{_PROGRAM}ldap(?:search|modify|add|delete|whoami|passwd){_BEFORE}-w[ \t]*['\"]?){_ARGUMENT}",
    ),
    (("redis-cli",), rf"(?P<cli_a>{_PROGRAM}redis-cli{_BEFORE}(?:-a|--pass)[ \t]*['\"]?){_ARGUMENT}"),
    (
        ("smbclient",),
        rf"(?P<cli_smb>{_PROGRAM}smbclient{_BEFORE}(?:-U|--user)[ \t]*['\"]?[^\s%'\"]+%){_ARGUMENT}",
    ),
    (
        ("curl", "wget", "http"),
        rf"(?P<cli_user>{_PROGRAM}(?:curl|wget|http){_BEFORE}(?:-u|--user)[ \t]*['\"]?[^\s:'\"]+:){_ARGUMENT}",
    ),
    (("-pass",), rf"(?P<cli_pass>-pass(?:in|out)?[ \t]+pass:){_ARGUMENT}"),  # openssl
    (("wandb",), rf"(?P<wandb>{_PROGRAM}wandb[ \t]+login[ \t]+(?:--relogin[ \t]+)?)[0-9a-f]{{40}}\b"),
    # .netrc: `machine h login u password X`, or `password X` alone on its line
    # (the password ends at a quote or backslash too: inside a JSON string those end it, or escape a line break)
    (("password",), r"(?P<netrc>\blogin[ \t]+\S+[ \t]+password[ \t]+)[^\s\"\\]+"),
    (("password",), r"(?P<netrc_line>(?m:^)[ \t]*password[ \t]+)[^\s\"\\]+(?=[ \t]*(?m:$))"),
    # webhooks whose path is the secret
    (
        ("discord", "hooks.zapier.com", "webhook.office.com", "maker.ifttt.com", "chat.googleapis.com"),
        r"(?P<path_hook>(?:discord(?:app)?\.com/api/webhooks|hooks\.zapier\.com/hooks/catch|webhook\.office\.com/webhookb2"
        r"|maker\.ifttt\.com/trigger/[^/\s]+/with/key|chat\.googleapis\.com/v1/spaces)/)[A-Za-z0-9_/@.%=?&-]+",
    ),
    (("/hooks/",), r"(?P<mattermost>/hooks/)[a-z0-9]{26}(?![A-Za-z0-9])"),
)
_CONTEXT_SHAPES = "|".join(pattern for _, pattern in _CONTEXT_ALTERNATIVES)
# Tokens recognisable by their shape alone. Each starts where no word goes on before it; every one is a run of
# 16 token characters or more, or holds a fixed text of _HINTS.
_TOKEN_BODY = (
    r"(?:"
    r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"  # AWS access key id
    r"|hf_(?=[A-Za-z0-9]*[A-Z])[A-Za-z0-9]{30,}"  # Hugging Face; the capital spares `hf_` identifiers
    r"|gh[pousr]_[A-Za-z0-9]{36,}"  # GitHub classic tokens
    r"|github_pat_[A-Za-z0-9_]{40,}"  # GitHub fine-grained tokens
    r"|sk-(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic (not sk-learn)
    r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|xox[abeoprs]-[0-9][A-Za-z0-9-]{8,}"  # Slack tokens
    r"|(?P<hook>hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/-]+"  # Slack webhooks
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*){0,2}"  # JWT, JWE (five parts)
    r"|AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"  # Google API key
    r"|npm_[A-Za-z0-9]{36,}"  # npm
    r"|gl(?:pat|oas|dt|rt|cbt|ptt|ft|imt|agent|soat)-[A-Za-z0-9_-]{20,}"  # GitLab's token prefixes
    r"|pypi-Ag[A-Za-z0-9_-]{50,}"  # PyPI (a macaroon: its base64 starts alike)
    r"|SG\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{40,}"  # SendGrid
    r"|GOCSPX-[A-Za-z0-9_-]{24,}"  # Google OAuth client secret
    r"|ya29\.[A-Za-z0-9_-]{20,}"  # Google OAuth access token
    r"|(?P<bearer>(?i:bearer)[ \t]+)(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{16,}=*"  # not "the bearer of"
    r"|sk-[0-9a-f]{32,}(?![A-Za-z0-9])"  # lower-case hex keys of OpenAI-style APIs (DeepSeek and others)
    r"|xapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]+|xoxe\.xox[bp]-[0-9]-[A-Za-z0-9]{100,}"  # Slack app, refresh
    r"|whsec_[A-Za-z0-9+/=]{24,}"  # Stripe webhook signing secret
    r"|ATATT3[A-Za-z0-9_=-]{100,}"  # Atlassian API token
    r"|dapi[0-9a-f]{32}(?:-[0-9])?(?![A-Za-z0-9])"  # Databricks
    r"|do[opr]_v1_[0-9a-f]{64}"  # DigitalOcean
    r"|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"  # Doppler
    r"|sl\.[A-Za-z0-9_-]{130,}"  # Dropbox
    r"|figd_[A-Za-z0-9_-]{40,}"  # Figma
    r"|gl(?:c|sa)_[A-Za-z0-9+/_]{32,}={0,2}"  # Grafana
    r"|hv[sb]\.[A-Za-z0-9_-]{24,}"  # HashiCorp Vault
    r"|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}"  # Terraform Cloud
    r"|lin_(?:api|oauth)_[A-Za-z0-9]{40}"  # Linear
    r"|[0-9a-f]{32}-us[0-9]{1,2}(?![0-9])"  # Mailchimp
    r"|key-[0-9a-f]{32}(?![A-Za-z0-9])"  # Mailgun
    r"|NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_-]{32}"  # New Relic
    r"|(?:secret_|ntn_)[A-Za-z0-9]{43,46}(?![A-Za-z0-9])"  # Notion
    r"|PMAK-[0-9a-f]{24}-[0-9a-f]{34}"  # Postman
    r"|pul-[0-9a-f]{40}"  # Pulumi
    r"|r8_[A-Za-z0-9]{37}(?![A-Za-z0-9])"  # Replicate
    r"|sntry[su]_[A-Za-z0-9+/=_]{40,}"  # Sentry
    r"|shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}"  # Shopify
    r"|sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}|EAAA[A-Za-z0-9_-]{60}"  # Square
    r"|SK[0-9a-f]{32}(?![A-Za-z0-9])"  # Twilio API key
    r"|[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])"  # Telegram bot
    r"|[MN][A-Za-z0-9]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}"  # Discord bot
    r"|gsk_[A-Za-z0-9]{48,}"  # Groq
    r"|xai-[A-Za-z0-9]{60,}"  # xAI
    r"|pplx-[A-Za-z0-9]{40,}"  # Perplexity
    r"|fw_[A-Za-z0-9]{20,}"  # Fireworks
    r"|api_org_[A-Za-z]{30,}"  # Hugging Face organisation tokens
    r"|AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"  # age
    r"|HRKU-[A-Za-z0-9_-]{40,}"  # Heroku
    r"|fo1_[A-Za-z0-9_-]{40,}|fm[12]_[A-Za-z0-9+/=_-]{40,}"  # Fly.io
    r"|nf[pc]_[A-Za-z0-9]{36,}"  # Netlify
    r"|rubygems_[0-9a-f]{48}"  # RubyGems
    r"|oy2[a-z0-9]{43}"  # NuGet
    r"|cio[A-Za-z0-9]{32}(?![A-Za-z0-9])"  # crates.io
    r"|dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}"  # Docker Hub
    r"|ATBB[A-Za-z0-9_=.-]{32,}"  # Bitbucket app password
    r"|[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}"  # Microsoft Entra client secret
    r"|eyJhdXRocyI6[A-Za-z0-9+/=]{16,}"  # base64 of {"auths": a Kubernetes .dockerconfigjson
    r"|ewoJImF1dGhzIjog[A-Za-z0-9+/=]{16,}|ewogICJhdXRocyI6[A-Za-z0-9+/=]{16,}"  # the same, indented
    r")"
)
_TOKEN_SHAPES = rf"(?:(?<![A-Za-z0-9_-])|(?<=\\[nrt])){_TOKEN_BODY}"
_SHAPES = f"{_CONTEXT_SHAPES}|{_TOKEN_SHAPES}"


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """A pattern that few texts need (a private key, an HTTP auth header), compiled when one first does rather than
    at import by every command that masks."""
    return re.compile(pattern)


@functools.cache
def shapes() -> re.Pattern[str]:
    """_SHAPES compiled, when a text first needs it: that takes 0.02 to 0.03 s, and `kb record -- true` never does."""
    return re.compile(_SHAPES)


# What every match of _TOKEN_SHAPES that is not a run of 16 token characters or more holds (_run_lines finds the
# lines of those), compared in lower case, beside the context shapes' own (_CONTEXT_ALTERNATIVES): a line holding
# none is not searched, since the shapes cost 1 to 10 microseconds a character and most lines of a log hold none; a
# line holding only a run is searched for tokens where one can start; a line holding a context shape's text is
# searched for that shape and the tokens only (one pattern of all shapes costs ten times more a character). A shape
# added needs its text here (tests/test_redact_hints.py checks each against samples of its shape). Discord's bot
# tokens have no fixed text: _SHAPELESS finds their middle part.
_TOKEN_HINTS = ("hooks.slack.com/", "eyj", "xox", "xapp-", "q~", "sk", "-us")
_HINTS = (*dict.fromkeys(hint for hints, _ in _CONTEXT_ALTERNATIVES for hint in hints), *_TOKEN_HINTS)
# hint -> the context shapes (their indices in _CONTEXT_ALTERNATIVES) a line holding it is searched for
_HINTED_SHAPES = {
    hint: frozenset(at for at, (hints, _) in enumerate(_CONTEXT_ALTERNATIVES) if hint in hints) for hint in _HINTS
}
_SHAPELESS = re.compile(r"\.[A-Za-z0-9_-]{6}\.")
# The letters that a case-insensitive pattern matches and lower() does not make: the long s is s, the dotless i
# and the dotted capital I are i (which lowers to two characters). The Kelvin sign lowers to k.
_FOLDS = str.maketrans({"\u017f": "s", "\u0131": "i", "\u0130": "i"})

# `name=value`, `name: value`, `"name": "value"`, `--name value`, `env["NAME"] = value` where the name
# may be secret: the match is only a candidate, `is_secret_name` and the value decide. The value is a
# quoted string (also with escaped quotes, as JSON inside a JSON string has them: `\"auth\": \"...\"`),
# an earlier mask (so masking twice changes nothing) or a bare word; an HTTP auth scheme in front of it
# is kept. A Cookie header is masked to the end of its line (it is all secrets), or of the JSON string
# it is in.
_NAME = r"[A-Za-z_][A-Za-z0-9_.-]{0,63}"
_ASSIGNMENT = re.compile(
    rf"""
    (?:(?<![A-Za-z0-9_.\\-])|(?<=\\[nrt]))(?=[A-Za-z_-])  # a word's start, also after an escaped line break
    (?=-{{0,2}}[A-Za-z0-9_.-]{{0,64}}?(?=[{_STEM_STARTS}])(?i:{"|".join(_STEMS)}))
    (?:
        (?P<authz>(?i:(?:proxy-)?authorization)\\?["']?[ \t]*:[ \t]*)(?P<authz_value>[^\r\n]+)
      | (?P<cookie>(?i:(?:set-)?cookie)["']?[ \t]*:[ \t]*)
        (?P<cookie_value>(?:[^"\\\s]|\\.)(?:(?:[^"\\\r\n]|\\.)*(?:[^"\\\s]|\\.))?)
      | (?:
            --?(?P<listed>{_NAME})["'][ \t]*,[ \t]*(?=["'])  # a flag and its value listed: ["--token", "..."]
          | --?(?P<flag>{_NAME})[ \t]+(?!-)
          | -{{0,2}}(?P<name>{_NAME})\\?["']?\]?[ \t]*(?:=(?!=)|:(?!:))[ \t]*
        )
        (?:(?i:bearer|basic|token|digest|negotiate)[ \t]+)?
        (?:
            "(?P<dq>(?:[^"\\\r\n]|\\.)+)"
          | '(?P<sq>(?:[^'\\\r\n]|\\.)+)'
          | \\"(?P<escaped>(?:[^"\\\r\n]|\\[^"\r\n])+)\\"
          | (?P<bare>{re.escape(MASK)}|(?:[^\s"'`,;&<>()\[\]{{}}\\]|\\(?![nrt"]))+)  # to an escaped break or quote
        )
    )
    """,
    re.X,
)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of an environment with secret-named values masked and secrets inside other values masked."""
    return {
        name: MASK if is_secret_name(name) and not harmless_value(name, value) else redact_text(value)
        for name, value in env.items()
    }


_FLAG = re.compile(r"--?[A-Za-z][A-Za-z0-9_.-]{0,63}")


def redact_args(argv: list[str]) -> list[str]:
    """Mask credentials in a command's arguments, including the value after a flag such as --api-key."""
    out = []
    for index, arg in enumerate(argv):
        previous = argv[index - 1] if index else ""
        flag = previous.lstrip("-")
        if _FLAG.fullmatch(previous) and is_secret_name(flag) and not harmless_value(flag, arg):
            out.append(MASK)
        else:
            out.append(redact_text(arg))
    return out


def redact_fields(value: Any, name: str | None = None) -> Any:
    """Front matter with every credential masked: text anywhere in it, and the text value of any field whose
    name says it holds a secret (`settings.hf_token`, `environment.PGPASSWORD`). A command's arguments are
    masked as arguments, and the line shown for them is made from them, so the two always agree."""
    if isinstance(value, str):
        secret = name is not None and is_secret_name(name) and not harmless_value(name, value)
        return MASK if secret else redact_text(value)
    if isinstance(value, list):
        return [redact_fields(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {_masked_key(key): redact_fields(item, key if isinstance(key, str) else None) for key, item in value.items()}
    argv = value.get("argv")
    if isinstance(argv, list) and all(isinstance(arg, str) for arg in argv) and "line" in value:
        out["argv"] = redact_args(argv)
        out["line"] = shlex.join(out["argv"])
    return out


def _masked_key(key: Any) -> Any:
    """A field name with a credential in it (a metric named by a token): masked in a form names may take."""
    return redact_name(key) if isinstance(key, str) else key


def redact_name(name: str) -> str:
    """A name (a title an id is made from, a file, a tag, a key) with every credential masked as `redacted`: names
    allow no brackets. A token glued to a word in front of it (`metric-<token>.txt`, `ckpt_<token>`) is looked for
    after each separator too, where the name holds a run long enough to be one."""
    masked = redact_text(name)
    if _RUN_NEEDLE in masked.translate(_RUN_MAP):
        for separator in _NAME_SEPARATOR.finditer(masked):
            rest = masked[separator.end() :]
            if _RUN_NEEDLE not in rest.translate(_RUN_MAP):
                break
            rest_masked = redact_text(rest)
            if rest_masked != rest:
                masked = masked[: separator.end()] + rest_masked
    return masked.replace(MASK, NAME_MASK)


_NAME_SEPARATOR = re.compile(r"[-_.]")


def redact_text(text: str) -> str:
    """The text with every credential it contains replaced by MASK; the rest is unchanged.

    Private key blocks are masked whole when the text holds the whole block, so pass a log in pieces
    of many lines rather than line by line.
    """
    if "PRIVATE KEY" in text or "Private-" in text:
        text = _compiled(_PEM).sub(MASK, text)
    if len(text) > _BLANK_RUN and _LONG_BLANK.search(text):
        # The shapes cost about a microsecond a character, blank or not: a run of blanks this long is no part of
        # a credential, so the text between such runs is masked piece by piece (32 MiB of padding: 40 s -> 1 s).
        pieces = _LONG_BLANK.split(text)  # the runs are captured: odd pieces
        text = "".join(piece if odd else mask_found(_mask_shapes(piece)) for odd, piece in zip(cycle((0, 1)), pieces))
    else:
        text = mask_found(_mask_shapes(text))
    return _mask_known(text) if MASK_KNOWN.get() else text


# Whether this machine's own credentials are masked too (kb.secrets.known): not where a finding is remembered.
MASK_KNOWN: contextvars.ContextVar[bool] = contextvars.ContextVar("MASK_KNOWN", default=True)


def _mask_known(text: str) -> str:
    """This machine's own credentials (kb.secrets.known), masked wherever they are, whatever their shape."""
    from kb.secrets.known import values

    for value in values():
        if value in text and value.lower() not in NOT_SECRET_VALUES:
            text = text.replace(value, MASK)
    return text


# Every credential that no context names is a run of 16 token characters or more. Such runs are found by a
# translation and a plain search (a few nanoseconds a character), and only their lines are searched for the rules'
# keywords and for tokens: most lines of a log hold none.
_RUN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=-"
_RUN_MAP = str.maketrans({chr(c): "a" if chr(c) in _RUN_CHARS else " " for c in range(128)})
_RUN_NEEDLE = "a" * 16
# Shapes that are long runs themselves: PASETO tokens; the private members of a JSON Web Key (`"d"` of RSA and EC
# keys, `"k"` of a symmetric one).
_LONG_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_-])(?P<secret>v[1-4]\.(?:local|public)\.[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)?)"
    r'|\\?"(?:d|p|q|dp|dq|qi|k)\\?"[ \t]*:[ \t]*\\?"(?P<jwk>[A-Za-z0-9_-]{40,})\\?"'  # also inside a JSON string
)


def mask_found(text: str) -> str:
    """What no context names: the vendored rules' shapes and prefixed high-entropy tokens."""
    spans: list[tuple[int, int]] = []
    for start, end in _line_runs(_run_lines(text)):
        piece = text[start:end]
        found = [(a, b) for a, b, _ in _gitleaks().find(piece)] + tokens(piece) + _after_hyphens(piece)
        if '"' in piece or ".local." in piece or ".public." in piece:  # what every match of _LONG_SHAPES holds
            found += [match.span(match.lastgroup or 0) for match in _LONG_SHAPES.finditer(piece)]
        spans += [(start + a, start + b) for a, b in found]
    if not spans:
        return text
    out: list[str] = []
    done = 0
    for start, end in sorted(spans):
        if end <= done:
            continue
        out += (text[done : max(start, done)], MASK)
        done = end
    out.append(text[done:])
    return "".join(out)


@functools.cache
def _token_body() -> re.Pattern[str]:
    return re.compile(_TOKEN_BODY)


_HYPHEN_START = re.compile(r"-[A-Za-z0-9]")  # a literal first: searched for as fast as str.find
_HYPHEN_WINDOW = 512  # a token after a hyphen is looked for this far first: a long run of hyphens stays linear


def _after_hyphens(text: str) -> list[tuple[int, int]]:
    """Spans of kb's token shapes that start after a hyphen, inside a name (`run-7-ghp_...`, `job-sk-ant-...`)."""
    found: list[tuple[int, int]] = []
    done = 0
    for start in _HYPHEN_START.finditer(text):
        at = start.start() + 1
        if at < done:
            continue
        window = min(at + _HYPHEN_WINDOW, len(text))
        match = _token_body().match(text, at, window)
        if match and match.end() == window:  # a token as long as the window (a JWT): the whole of it
            match = _token_body().match(text, at)
        if match:
            kept = match["hook"] or match["bearer"] or ""
            found.append((at + len(kept), match.end()))
            done = match.end()
    return found


def _gitleaks():
    from kb.secrets import gitleaks

    return gitleaks


# A run of token characters long enough to be a prefixed token (`<word>_` or `<word>-` and 20 more) or a URL's
# secret path part.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{20,}")
# The names of digests in front of their value (`sha256-...`, `md5_...`): what follows is a hash.
_DIGEST_NAMES = frozenset({"sha", "sha1", "sha224", "sha256", "sha384", "sha512", "md5", "blake2b", "blake2s",
                           "blake3", "xxh64", "xxh3", "crc32", "git"})  # fmt: skip
_HEX_OR_UUID = re.compile(r"[0-9a-fA-F_-]+")
# A name of four or more lower-case parts joined by `_` is code, not a token: a CUDA kernel
# (`sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_...`), a Triton or Inductor kernel.
_SNAKE_NAME = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+){3,}")


def tokens(text: str) -> list[tuple[int, int]]:
    """Spans of machine-made tokens that no rule knows: a word and `-` or `_` in front of 20 or more characters of
    high entropy (`napi_...`, `tskey-auth-...`), hex after a short prefix and `_` (`sbp_<hex>`), and a long random
    part of a URL's path (`/bot/<token>/send`). Kept as evidence: hashes and UUIDs (hex after a word or `-`), parts
    made of words and numbers (`triton_poi_fused_add_0`, `run-20260101_120000-3kx9q2ab`), digests named as such
    (`sha256-...`)."""
    found = []
    for match in _TOKEN_RUN.finditer(text):
        word = match[0]
        prefix, _, rest = word.replace("-", "_").partition("_")
        prefixed = (
            len(rest) >= 20 and 1 <= len(prefix) <= 16 and prefix[0].isalpha() and prefix.lower() not in _DIGEST_NAMES
        )
        if prefixed and (
            (not _SNAKE_NAME.fullmatch(rest) and _random_part(rest, 16, 3.5)) or _short_prefix_hex(word, prefix, rest)
        ):
            found.append(match.span())
            continue
        start = match.start()
        if start and text[start - 1] == "/" and _in_url(text, start) and _random_segment(word):
            found.append(match.span())
    return found


# Words that name what a hex value after them is a hash of, in names evidence keeps (`run_<hex>`, `ckpt_<sha>`).
_HASH_OWNERS = frozenset({"run", "job", "id", "ids", "hash", "ckpt", "step", "node", "rank", "task", "seed",
                          "uuid", "cache", "image", "build", "model", "trace", "graph", "file", "blob",
                          "tree"})  # fmt: skip


def _short_prefix_hex(word: str, prefix: str, rest: str) -> bool:
    """Hex after a short prefix of letters and `_` (`sbp_<40 hex>`, `sk_<48 hex>`): how vendors mark a token; a
    hash is named by a longer word or joined by `-` (`docker-<id>.scope`, `commit_<sha>`, `run-<hex>`)."""
    return (
        word[len(prefix)] == "_"
        and 2 <= len(prefix) <= 5
        and prefix.isalpha()
        and prefix.lower() not in _HASH_OWNERS
        and re.fullmatch(r"[0-9a-f]{32,}|[0-9A-F]{32,}", rest) is not None
        and shannon(rest) >= 3.0
    )


def _random_segment(segment: str) -> bool:
    """Whether a URL path segment is random base64url: its `-` and `_` are characters of the token, not joins
    between words (`1RKQGzG-1ev_I8_TI8O-...`, unlike `models--meta-llama--Llama-3-8B`)."""
    parts = re.split(r"[-_]", segment)
    if _random_part(segment, 24, 4.0, mixed_case=True):
        return True
    if all(part.isalpha() or part.isdigit() or len(part) <= 3 for part in parts):
        return False
    joined = "".join(parts)
    return (
        len(joined) >= 24
        and not joined.islower()
        and not joined.isupper()
        and any(c.isdigit() for c in joined)
        and shannon(joined) >= 4.0
    )


def _random_part(text: str, length: int, entropy: float, mixed_case: bool = False) -> bool:
    """Whether `text` has a part (between `-` and `_`) of `length` or more letters and digits, not hex, as varied
    as random text of that length is."""
    if _HEX_OR_UUID.fullmatch(text):
        return False
    longest = max(re.split(r"[-_]", text), key=len)
    if len(longest) < length or longest.isalpha() or longest.isdigit():
        return False
    if mixed_case and (longest.islower() or longest.isupper()):
        return False
    return shannon(longest) >= entropy


def _in_url(text: str, at: int) -> bool:
    """Whether `at` is in a URL's path: `://` before it on its line, with no blank between."""
    line_start = text.rfind("\n", 0, at) + 1
    scheme = text.rfind("://", line_start, at)
    return scheme >= 0 and not any(char.isspace() for char in text[scheme:at])


def _mask_shapes(text: str) -> str:
    """What _mask_everywhere gives, searching only where a match can be: the shapes on the lines holding a hint,
    the assignments where a stem is (no match of either crosses a line)."""
    lowered = _lowered(text)
    if lowered is None:
        return _mask_everywhere(text)
    hinted = _hinted_lines(text, lowered)
    runs = {start: end for start, end in _run_lines(text).items() if start not in hinted}
    marked = {start: (end, _mask_tokens_on_line) for start, end in runs.items()}
    masked = _on_lines(text, marked | {start: (end, _shapes_masker(shown)) for start, (end, shown) in hinted.items()})
    # The masks are ASCII and each character lowers to one: the masked text's lower case lines up with it too.
    return _mask_assignments(masked, _starts(masked, masked.translate(_FOLDS).lower()))


def _mask_everywhere(text: str) -> str:
    """Every shape, then every assignment, searched for at every place in the text."""
    text = shapes().sub(_mask_shape, text)
    return _mask_assignments(text, _search_starts(text))


def _search_starts(text: str) -> Iterator[int]:
    """Where a search from left to right finds an assignment, and again from the place after each."""
    at = 0
    while match := _ASSIGNMENT.search(text, at):
        yield match.start()
        at = match.start() + 1


def _lowered(text: str) -> str | None:
    """The text in lower case, each character where it was; None where that cannot be (once folded, no character
    lowers to two in the Unicode of Python 3.11; a later one might)."""
    lowered = text.translate(_FOLDS).lower()
    return lowered if len(lowered) == len(text) else None


@functools.cache
def _shapes_masker(context: frozenset[int]) -> Callable[[str], str]:
    """What masks a line with the context shapes `context` (indices in _CONTEXT_ALTERNATIVES) and every token shape,
    in the order _SHAPES has them, so that a line gets what _SHAPES would give it."""
    pattern = re.compile("|".join([*(_CONTEXT_ALTERNATIVES[at][1] for at in sorted(context)), _TOKEN_SHAPES]))
    return functools.partial(pattern.sub, _mask_shape)


# Where a token of _TOKEN_SHAPES can start: a letter or digit with no word character before it (the start of a run
# of word characters), or after an escaped line break. Runs are found whole: a lookbehind tried at every character
# costs ten times more.
_WORD_RUN = re.compile(r"[A-Za-z0-9_-]+")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _token_starts(line: str) -> Iterator[int]:
    for run in _WORD_RUN.finditer(line):
        at = run.start()
        if line[at] in _ALNUM:
            yield at
        if at and line[at - 1] == "\\" and line[at] in "nrt" and at + 1 < run.end() and line[at + 1] in _ALNUM:
            yield at + 1


def _mask_tokens_on_line(line: str) -> str:
    """What _shapes_masker gives on a line holding no hint (only the token shapes can match there), trying
    them only where a token can start: a line of one long run is tried once, not at each of its characters. At each
    such start _TOKEN_SHAPES' look-behind holds, so the body alone is matched: the one pattern _after_hyphens
    compiles too (compiling it is most of a short recording's masking)."""
    out: list[str] = []
    done = 0
    for start in _token_starts(line):
        if start < done:
            continue
        match = _token_body().match(line, start)
        if match:
            kept = match["hook"] or match["bearer"] or ""
            out += (line[done : match.start()], kept + MASK)
            done = match.end()
    out.append(line[done:])
    return "".join(out)


def _hinted_lines(text: str, lowered: str) -> dict[int, tuple[int, frozenset[int]]]:
    """start -> (end after its newline, the context shapes its hints call for) of each line holding one of _HINTS or
    what _SHAPELESS finds."""
    lines: dict[int, tuple[int, frozenset[int]]] = {}
    for hint in _HINTS:
        at = lowered.find(hint)
        while at >= 0:
            start, end = _line_around(text, at, at + len(hint))
            known = lines.get(start)
            lines[start] = (end, known[1] | _HINTED_SHAPES[hint] if known else _HINTED_SHAPES[hint])
            at = lowered.find(hint, end)
    found = _SHAPELESS.search(text)
    while found:  # once a line (every match on a long line looking for its ends would be quadratic)
        start, end = _line_around(text, found.start(), found.end())
        lines.setdefault(start, (end, frozenset()))
        found = _SHAPELESS.search(text, end)
    return lines


def _run_lines(text: str) -> dict[int, int]:
    """start -> end of each line holding a run of 16 token characters or more: every token a vendor issues is
    one, so a shape with no fixed text of its own to hint at is still searched for there."""
    mapped = text.translate(_RUN_MAP)
    lines: dict[int, int] = {}
    at = mapped.find(_RUN_NEEDLE)
    while at >= 0:
        start, end = _line_around(text, at, at + len(_RUN_NEEDLE))
        lines[start] = end
        at = mapped.find(_RUN_NEEDLE, end)
    return lines


def _line_around(text: str, start: int, end: int) -> tuple[int, int]:
    after = text.find("\n", end)
    return text.rfind("\n", 0, start) + 1, len(text) if after < 0 else after + 1


def _line_runs(lines: dict[int, int]) -> list[list[int]]:
    """[start, end] of each run of lines that follow each other."""
    runs: list[list[int]] = []
    for start in sorted(lines):
        if runs and runs[-1][1] == start:
            runs[-1][1] = lines[start]
        else:
            runs.append([start, lines[start]])
    return runs


def _on_lines(text: str, lines: dict[int, tuple[int, Callable[[str], str]]]) -> str:
    """Each line's mask applied to it (one call for lines that follow each other and share a mask), the rest of
    the text as it is. `lines`: start -> (end after the newline, mask)."""
    runs: list[list] = []
    for start in sorted(lines):
        end, mask = lines[start]
        if runs and runs[-1][1] == start and runs[-1][2] is mask:
            runs[-1][1] = end
        else:
            runs.append([start, end, mask])
    out: list[str] = []
    done = 0
    for start, end, mask in runs:
        out += (text[done:start], mask(text[start:end]))
        done = end
    out.append(text[done:])
    return "".join(out)


def token_like(text: str) -> bool:
    """Whether a user name or a word looks made by a machine: 16 characters or more, letters and digits, not only
    words and numbers joined by punctuation (`svc_perf_bot_20260101`), and as varied as random text is."""
    if len(text) < 16 or not any(c.isdigit() for c in text) or not any(c.isalpha() for c in text):
        return False
    if all(part.isalpha() or part.isdigit() or len(part) <= 8 for part in re.split(r"[-_.]", text)):
        return False
    return shannon(text) >= 3.0


def shannon(text: str) -> float:
    """Bits a character of the text's own alphabet: about 4 to 6 for a random token, less for words and numbers."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


_BLANK_RUN = 4096
_LONG_BLANK = re.compile(rf"(\s{{{_BLANK_RUN},}})")


# The groups of _SHAPES that are context, kept in front of the mask.
_KEPT = ("hook", "bearer", "userinfo", "cli", "cli_login", "cli_upper", "cli_w", "cli_a", "cli_smb", "cli_user",
         "cli_pass", "wandb", "netrc", "netrc_line", "path_hook", "mattermost", "oracle", "after_id",
         "token_arg")  # fmt: skip


def _mask_shape(match: re.Match[str]) -> str:
    groups = match.groupdict()  # a line's pattern holds only the shapes its hints call for
    if groups.get("url"):  # the user name can be a token too: `https://<token>:x-oauth-basic@github.com`
        user = groups["url"][3:-1]
        return f"://{MASK}:{MASK}" if token_like(user) else shapes().sub(_mask_shape, groups["url"]) + MASK
    if groups.get("userinfo") and not token_like(match[0][3:]):
        return match[0]  # a long user name of words and numbers: `jenkins_build_agent_2026`
    kept = next((group for group in _KEPT if groups.get(group)), None)
    return (groups[kept] if kept else "") + MASK


def _mask_assignments(text: str, starts: Iterable[int]) -> str:
    """The assignments in the text, tried at `starts` (every place one can start, in order; a place given again is
    skipped), as a search from left to right finds them."""
    out: list[str] = []
    done = start = 0
    for at in starts:
        if at < start:
            continue
        match = _ASSIGNMENT.match(text, at)
        start = at + 1
        if match is None:
            continue
        masked = _mask_authorization(match) if match["authz"] else _mask_assignment(match)
        if masked is None:  # not a secret after all; a secret may still start inside the candidate
            continue
        out += (text[done : match.start()], masked[0])
        done = start = masked[1]
    out.append(text[done:])
    return "".join(out)


_NAME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
_STEM_REACH = 66  # _ASSIGNMENT looks for a stem at most this far from where a name starts


def _starts(text: str, lowered: str) -> Iterator[int]:
    """Where _ASSIGNMENT can match, in order (`lowered` as _lowered gives it): the start of each run of name
    characters that holds a stem within _STEM_REACH of it, and the place after an escaped line break that begins
    the run."""
    for stem_at in sorted(at for stem in _STEMS for at in _occurrences(lowered, stem)):
        before = text[max(stem_at - _STEM_REACH - 1, 0) : stem_at]
        run = len(before) - len(before.rstrip(_NAME_CHARS))
        if run == len(before) and stem_at > len(before):  # the run goes on further back than a stem can be
            continue
        first = stem_at - run
        yield first
        if first and text[first - 1] == "\\" and text[first] in "nrt":
            yield first + 1


def _occurrences(text: str, part: str) -> Iterator[int]:
    at = text.find(part)
    while at >= 0:
        yield at
        at = text.find(part, at + 1)


def _mask_authorization(match: re.Match[str]) -> tuple[str, int] | None:
    """An `Authorization:` header of any scheme (`SSWS`, `Splunk`, `Token token="..."`, `AWS4-HMAC-SHA256 ...`): all
    its credentials masked, the scheme kept. They end with the line, with the quoted string they are in, or with the
    string that holds the whole header (`-H 'Authorization: ...'`, `"Authorization: ..."` in JSON)."""
    text, begin = match.string, match.start("authz_value")
    line_end = match.end("authz_value")
    quote = text[match.start() - 1] if match.start() and text[match.start() - 1] in "\"'" else ""
    end = line_end
    opening = re.match(r'\\"|"|\'', text[begin:line_end])
    if opening:  # a quoted value: to its closing quote
        closing = re.compile(r'\\"' if opening[0] == '\\"' else r"(?<!\\)" + opening[0])
        found = closing.search(text, begin + len(opening[0]), line_end)
        begin += len(opening[0])
        end = found.start() if found else line_end
    elif quote:  # the header is inside a quoted string: to where that string closes (`\"` inside JSON: to `\"`)
        escaped = text[match.start() - 2 : match.start()] == "\\" + quote
        closing = re.compile(re.escape("\\" + quote) if escaped else r"(?<!\\)" + quote)
        found = closing.search(text, begin, line_end)
        end = found.start() if found else line_end
    value = text[begin:end].rstrip()
    end = begin + len(value)
    if not value or value.lower() in NOT_SECRET_VALUES:
        return None
    scheme = re.match(r"[A-Za-z][A-Za-z0-9_-]*[ \t]+(?=\S)", value)
    kept = scheme[0] if scheme and scheme[0].strip().lower() != MASK.lower() else ""
    credentials = _compiled(_AUTH_CREDENTIALS).match(value, len(kept))
    if not opening and not quote and credentials and credentials.end() > len(kept):
        after = value[credentials.end() : credentials.end() + 1]
        if not after or after.isspace() or after in "'\"`)]}>,;|\\":  # several headers on a line: this one's end
            end = begin + credentials.end()
    return text[match.start() : begin] + kept + MASK, end


# What follows an HTTP auth scheme: a list of parameters (`username="u", response="..."`) or one token (RFC 9110).
_AUTH_PARAM = r'[\w-]+[ \t]*=[ \t]*(?:"(?:[^"\\\r\n]|\\.)*"|\\"(?:[^"\\\r\n]|\\[^"\r\n])*\\"|[^\s,"\\]*)'
_AUTH_CREDENTIALS = rf"{_AUTH_PARAM}(?:[ \t]*,[ \t]*{_AUTH_PARAM})*|{re.escape(MASK)}|[A-Za-z0-9._~+/-]+=*"


def _mask_assignment(match: re.Match[str]) -> tuple[str, int] | None:
    value = match.lastgroup  # the value's group: it is the last one to close
    assert value is not None
    name = match["listed"] or match["flag"] or match["name"]
    if value != "cookie_value" and (
        not is_secret_name(name)
        or harmless_value(name, match[value])
        or (name.lower() == "key" and _CACHE_KEY.fullmatch(match[value]))
    ):
        return None
    text = match.string
    return text[match.start() : match.start(value)] + MASK + text[match.end(value) : match.end()], match.end()


_PEM_OPEN = rf"{_PEM_BEGIN}|Private-Lines: "
_PEM_CLOSE = rf"{_PEM_END}|Private-MAC: [0-9a-fA-F]+\r?\n"
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
    keyed = "PRIVATE KEY" in text or "Private-" in text
    for begin_match in _compiled(_PEM_OPEN).finditer(text, max(len(text) - HOLD_MAX, 0)) if keyed else ():
        begin = begin_match.start()
    cut = text.rfind("\n") + 1
    if begin is not None and begin < len(text):
        close = _compiled(_PEM_CLOSE).search(text, begin)
        if close is None or close.end() > cut:  # the block is not whole before the cut: hold it, line end too
            return begin if len(text) - begin < HOLD_MAX else len(text)  # past the bound: masked from its start
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
    for match in shapes().finditer(text):
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
