"""Whether a name says its value is a credential, and whether a value next to such a name is evidence instead.

Shared by the masking (kb.secrets.redact) and by the reading of this machine's own credentials (kb.secrets.known).
"""

from __future__ import annotations

import re

MASK = "[REDACTED]"

# Word parts of a name that say it holds a secret. PRIVATE alone is not one: it names PyTorch's
# PrivateUse1 dispatch key, and private keys and tokens carry KEY or TOKEN anyway. TOKENS is not one
# either: `num_tokens` and `tokens_per_s` are metrics. PASS alone in capitals is not one: `PASS: test_x`
# is test output (but `REDIS_PASS` and YAML's `pass:` are passwords).
_SECRET_WORDS = frozenset(
    {
        "TOKEN", "ACCESSTOKEN", "AUTHTOKEN", "APITOKEN", "SESSIONTOKEN",
        "SECRET", "SECRETS", "CLIENTSECRET",
        "PASSWORD", "PASSWORDS", "PASSWD", "PWD", "PASSPHRASE", "PASS",
        "KEY", "KEYS", "APIKEY", "PRIVATEKEY", "SECRETKEY", "ACCESSKEY",
        "CREDENTIAL", "CREDENTIALS", "CREDS",
        "AUTH", "AUTHORIZATION", "AUTHENTICATION",
        "COOKIE", "COOKIES", "SESSION", "SESSIONID",
        "SIGNATURE", "SIG", "PAT", "SSHPASS", "DSN", "WEBHOOK", "WEBHOOKS", "PRIVATE", "BEARER",
    }
)  # fmt: skip
# A word part that ends in one of these holds a secret too: `PGPASSWORD`, `csrftoken`, `MYSQLPASSWD`, `WRITEKEY`,
# `authkey`; but not the words that merely end in KEY.
_SECRET_ENDINGS = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "KEY")
_NOT_KEYS = frozenset(
    {"MONKEY", "DONKEY", "TURKEY", "HOCKEY", "JOCKEY", "WHISKEY", "LACKEY", "HOTKEY", "SORTKEY", "DISPATCHKEY",
     "PRIMARYKEY", "FOREIGNKEY", "HASHKEY", "CACHEKEY", "PARTITIONKEY", "TURNKEY", "PUBKEY", "PUBLICKEY"}
)  # fmt: skip
# A last word part that describes a secret rather than holding it: `key_size`, `max_session_len`,
# `token_type`, `HF_TOKEN_PATH`, `KeyError`.
_DESCRIPTIVE_WORDS = frozenset(
    {"SIZE", "LEN", "LENGTH", "BITS", "COUNT", "TYPE", "NAME", "FILE", "PATH", "DIR", "URL", "ERROR", "EXCEPTION"}
)
# After the secret word, only these may follow for the name still to hold the secret (`API_KEY_V2`,
# `SECRET_KEY_BASE`, `DB_PASSWORD_PROD`); any other word makes it a name about something else:
# `eos_token_id`, `num_key_value_heads`, `key_states`, `dispatch_key_set`.
_QUALIFIERS = frozenset(
    {
        "V", "VALUE", "STR", "STRING", "B64", "BASE64", "RAW", "ENC", "ENCODED", "HEX", "DATA", "BASE", "PROD",
        "DEV", "TEST", "STAGING", "LIVE", "OLD", "NEW", "PRIMARY", "SECONDARY", "ENV", "CI", "LOCAL", "REMOTE",
        "ADMIN", "RO", "RW", "READ", "WRITE", "HEADER",
    }
)  # fmt: skip
# Model vocabulary: a TOKEN after one of these is a token of text, not a credential (`pad_token`,
# `time_to_first_token`, `ms_per_token`, `HF_HUB_DISABLE_IMPLICIT_TOKEN`).
_TEXT_TOKENS = frozenset(
    {
        "PAD", "EOS", "BOS", "UNK", "SEP", "CLS", "MASK", "FIRST", "LAST", "PER", "NEXT", "EACH", "OUTPUT", "INPUT",
        "PROMPT", "GENERATED", "START", "END", "SPECIAL", "IMAGE", "VISION", "AUDIO", "VIDEO", "ADDITIONAL",
        "IMPLICIT", "DECODER", "ENCODER", "EOT", "FIM", "MIDDLE", "PREFIX", "SUFFIX", "THINK", "TOOL", "CHAT",
        "SENTINEL", "MAX", "MIN", "NUM", "TOTAL", "BOI", "EOI", "BOA", "EOA", "UNUSED", "NEWLINE", "SPACE", "STOP",
    }
)  # fmt: skip
# Names whose secret word ends in ID yet hold (or point at) a secret: masking costs nothing.
_SECRET_PAIRS = frozenset({("SESSION", "ID"), ("ACCESS", "KEY", "ID"), ("PRIVATE", "KEY", "ID")})
# Words that are weak alone (`sort_key=step`, `key=len`, `sig=11`, `auth: disabled`) and strong with one of
# these in front (`api_key`, `signing_key`, `client_session`).
_WEAK_WORDS = frozenset({"KEY", "KEYS", "SIG", "SIGNATURE", "SESSION", "AUTH", "PRIVATE"})
_STRONG_PREFIXES = frozenset(
    {
        "API", "ACCESS", "SECRET", "PRIVATE", "CLIENT", "APP", "MASTER", "SERVICE", "ACCOUNT", "SHARED",
        "ENCRYPTION", "SIGNING", "LICENSE", "DEPLOY", "WEBHOOK", "AWS", "AZURE", "GCP", "GOOGLE", "OPENAI",
        "ANTHROPIC", "HF", "GITHUB", "STRIPE", "SSH", "GPG", "PGP", "TLS", "SSL", "JWT", "HMAC", "AES", "RSA",
        "X", "AMZ", "STORAGE", "SAS", "BASIC", "BEARER", "HTTP", "PROXY", "USER",
    }
)  # fmt: skip
# Whole names (word parts joined by `_`) that the rule above gets wrong: the dispatch key that PyTorch
# backend evidence is full of (`DispatchKey`, `dispatch_key=...`).
_HARMLESS_NAMES = frozenset({"DISPATCH_KEY"})

# Values that configure rather than authenticate: `use_auth_token=True`, `"api_key": null`, `auth: disabled`.
NOT_SECRET_VALUES = frozenset(
    {"true", "false", "none", "null", "disabled", "enabled", "on", "off", "yes", "no", "required", "optional",
     "auto", "default", "unset", "empty", MASK.lower()}
)  # fmt: skip
# A number with a point or an exponent (`ms_per_token=12.7`), or of at most four digits (`sig=11`,
# `HF_HUB_DISABLE_IMPLICIT_TOKEN=1`); a special token of a tokenizer (`<pad>`, `</s>`, `<|eot_id|>`, `[CLS]`).
_HARMLESS_VALUE = re.compile(
    r"[-+]?(?:[0-9]{1,4}|[0-9]*\.[0-9]+(?:[eE][-+]?[0-9]+)?|[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+)"
    r"|</?\|?[A-Za-z_][A-Za-z0-9_.:-]{0,30}\|?>|\[[A-Z]{2,10}\]"
)
# What a weak name (`sort_key`, `key`) may hold and still be code: a plain word (`len`, `step`, `x.size`),
# numbered only after a separator (`triton_mm_4`), or a dotted path of two dots or more (a state-dict key
# `model.layers.0.lora_B.weight`, a module `torch.nn.Linear`).
_IDENTIFIER = re.compile(r"[a-z_]+(?:[_.][a-z0-9]+)*|[A-Za-z_][A-Za-z0-9_]{0,40}(?:\.[A-Za-z0-9_]{1,40}){2,}")

# Camel case, digits and any punctuation separate word parts: `HFToken`, `api_key2`, `X-Api-Key`.
_WORD_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")


def is_secret_name(name: str) -> bool:
    """Whether a variable, key or flag name says its value is a secret.

    The name is split into word parts (on punctuation, digits and camel case); it is secret when a part is a
    secret word (`HF_TOKEN`, `X-Api-Key`, `db_pwd`, `PGPASSWORD`) followed by nothing but qualifiers
    (`API_KEY_V2`), unless the last part only describes the secret (`key_size`, `token_type`) or the name is
    model vocabulary (`pad_token`, `time_to_first_token`). `TOKENIZERS_PARALLELISM`, `AUTHOR` and
    `num_key_value_heads` are kept because no part is a secret word where the name ends.
    """
    parts = [part.upper() for part in _WORD_PART.findall(name)]
    if not parts or "_".join(parts) in _HARMLESS_NAMES or parts[-1] in _DESCRIPTIVE_WORDS:
        return False
    if any(tuple(parts[-len(pair) :]) == pair for pair in _SECRET_PAIRS):
        return True
    last = next((i for i in range(len(parts) - 1, -1, -1) if _is_secret_word(parts[i])), None)
    if last is None or any(part not in _QUALIFIERS for part in parts[last + 1 :]):
        return False
    if parts[last] == "PASS" and len(parts) == 1:
        return not name.isupper()  # `pass:` in YAML; `PASS` is a test's outcome
    return not (parts[last] == "TOKEN" and last and parts[last - 1] in _TEXT_TOKENS)


def _is_secret_word(part: str) -> bool:
    return part in _SECRET_WORDS or (
        part.endswith(_SECRET_ENDINGS) and part not in ("TOKEN", "SECRET", "KEY") and part not in _NOT_KEYS
    )


def _weak_name(name: str) -> bool:
    """A name whose secret word alone makes it secret, with nothing strong in front: `sort_key`, `key`, `sig`."""
    parts = [part.upper() for part in _WORD_PART.findall(name)]
    secret = [i for i, part in enumerate(parts) if _is_secret_word(part)]
    return bool(secret) and parts[secret[-1]] in _WEAK_WORDS and not _STRONG_PREFIXES & set(parts[: secret[-1]])


def harmless_value(name: str, value: str) -> bool:
    """Whether a value assigned to a secret-looking name is evidence, not a credential: `eos_token=2`,
    `"pad_token": "<pad>"`, `sort_key=step`, `PWD=/srv`, `token: null`."""
    if value.lower() in NOT_SECRET_VALUES or _HARMLESS_VALUE.fullmatch(value):
        return True
    if name.upper() in ("PWD", "OLDPWD"):
        return value.startswith(("/", "~", "."))  # the shell's working folder; ODBC's PWD= is a password
    return _weak_name(name) and bool(_IDENTIFIER.fullmatch(value))
