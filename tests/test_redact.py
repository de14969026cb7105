"""kb.secrets.redact: credentials are masked wherever they appear, harmless look-alikes come back unchanged.

Every secret below is fake and assembled from pieces, so that no secret scanner flags this file.
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kb.secrets.redact import MASK, is_secret_name, redact_env, redact_text

AWS_KEY_ID = "AKIA" + "Q3Z7" + "X9W2" * 3
AWS_TEMP_KEY_ID = "ASIA" + "7K2M" * 4
AWS_SECRET = ("Xq9/" + "Lm3+") * 5
HF = "hf_" + "AbCdEfGh1234" * 3
GHP = "ghp_" + "A1b2C3d4" * 4 + "E5f6"
GHO = "gho_" + "Zz9Yy8Xx" * 5
GHS = "ghs_" + "Q1w2E3r4" * 4 + "T5y6"
GITHUB_PAT = "github_pat_" + "11AB2CD3EF4GH5IJ6KL7MN" + "_" + "aB3dE6gH9j" * 6
OPENAI = "sk-" + "T3Blbk" + "aB1cD2eF3g" * 4
OPENAI_PROJECT = "sk-" + "proj-" + "Ab1_Cd2-Ef3" * 10
ANTHROPIC = "sk-" + "ant-api03-" + "Xy7_Zw8-Uv9" * 8 + "AA"
SLACK_BOT = "xox" + "b-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_USER = "xox" + "p-" + "2109876543-2109876543-987654321098-" + "a1b2c3d4" * 4
SLACK_HOOK_PATH = "T0ABCDEF1/B0GHIJKL2/" + "Qw3Er4Ty5Ui6" * 2
JWT = (
    "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    "." + "eyJ" + "zdWIiOiJiZW5jaC1ib3QiLCJpYXQiOjE3MDAwMDAwMDB9"
    "." + "Sfl" + "KxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
GOOGLE = "AIza" + "SyD" + "x1Y2z3W4v5" * 3 + "QR"
STRIPE = "sk_" + "live_" + "51Hx" + "Pq8Rs7Tu6Vw5" * 2
STRIPE_RESTRICTED = "rk_" + "live_" + "51Hx" + "Ab3Cd4Ef5Gh6" * 2
NPM = "npm_" + "a1B2c3D4e5F6" * 3
GITLAB = "glpat-" + "xY1zW2-vU3tS4rQ5pO6n"
BASIC = "YmVuY2g6" + "aHVudGVyMg=="
PEM_BODY = ["MIIEowIBAAKCAQEA" + "q8Z3" * 12, "Zm9vYmFy" * 8, "QmVuY2hL" * 8, "c2VjcmV0" * 4 + "=="]
OPAQUE = "op4que" + "Tok3n" * 4


def pem(kind: str, body: list[str] = PEM_BODY) -> str:
    return "-----BEGIN " + kind + "-----\n" + "\n".join(body) + "\n-----END " + kind + "-----"


# (id, text, the secret that must go, words around it that must stay)
# fmt: off
SECRETS = [
    ("aws-key-id-log", f"botocore.credentials INFO Found credentials: {AWS_KEY_ID} in env", AWS_KEY_ID,
     ["botocore.credentials", "Found credentials:", "in env"]),
    ("aws-temp-key-id", f"assumed role, access key {AWS_TEMP_KEY_ID} expires 12:00", AWS_TEMP_KEY_ID,
     ["assumed role", "expires 12:00"]),
    ("aws-secret-credentials-file", f"[default]\naws_secret_access_key = {AWS_SECRET}\nregion = us-east-1", AWS_SECRET,
     ["[default]", "aws_secret_access_key = ", "region = us-east-1"]),
    ("aws-secret-export", f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET} && python train.py", AWS_SECRET,
     ["export AWS_SECRET_ACCESS_KEY=", "&& python train.py"]),
    ("hf-login-command", f"$ huggingface-cli login --token {HF} --add-to-git-credential", HF,
     ["huggingface-cli login --token", "--add-to-git-credential"]),
    ("hf-in-notes", f"Used {HF} to pull the gated Llama weights.", HF, ["Used", "to pull the gated Llama weights."]),
    ("ghp-as-url-user", f"git clone https://{GHP}@github.com/acme/bench.git", GHP,
     ["git clone https://", "@github.com/acme/bench.git"]),
    ("gho-json", f'{{"oauth": "{GHO}", "scope": "repo"}}', GHO, ['"scope": "repo"']),
    ("token-as-url-user", f"pip install git+https://{GHO}:x-oauth-basic@github.com/acme/ops.git", GHO,
     ["pip install git+https://", ":", "@github.com/acme/ops.git"]),
    ("ghs-url-password", f"remote: https://x-access-token:{GHS}@github.com/acme/kb", GHS,
     ["https://x-access-token:", "@github.com/acme/kb"]),
    ("github-pat-env", f"GH_PAT={GITHUB_PAT}", GITHUB_PAT, ["GH_PAT="]),
    ("github-authorization-token", f"curl -H 'Authorization: token {GHP}' https://api.github.com/user", GHP,
     ["curl -H 'Authorization: token ", "' https://api.github.com/user"]),
    ("openai-traceback", f"openai.AuthenticationError: Incorrect API key provided: {OPENAI}.", OPENAI,
     ["openai.AuthenticationError: Incorrect API key provided:"]),
    ("openai-project-export", f"export OPENAI_API_KEY='{OPENAI_PROJECT}'", OPENAI_PROJECT, ["export OPENAI_API_KEY='"]),
    ("anthropic-header", f'curl -H "x-api-key: {ANTHROPIC}" -H "anthropic-version: 2023-06-01"', ANTHROPIC,
     ['curl -H "x-api-key: ', '-H "anthropic-version: 2023-06-01"']),
    ("slack-bot-log", f"notifier: posting with {SLACK_BOT} to #bench-results", SLACK_BOT,
     ["notifier: posting with", "to #bench-results"]),
    ("slack-user-json", f'  "slack_user": "{SLACK_USER}",', SLACK_USER, ['"slack_user": "']),
    ("slack-webhook", f"curl -X POST https://hooks.slack.com/services/{SLACK_HOOK_PATH} -d @msg.json",
     SLACK_HOOK_PATH, ["curl -X POST https://hooks.slack.com/services/", "-d @msg.json"]),
    ("jwt-log", f"oidc: refreshed id {JWT} (expires in 3600s)", JWT, ["refreshed id", "(expires in 3600s)"]),
    ("jwt-bearer-header", f"> Authorization: Bearer {JWT}\n> Accept: */*", JWT,
     ["> Authorization: Bearer ", "\n> Accept: */*"]),
    ("bearer-in-prose", f"requests sent with Bearer {OPAQUE} were rejected", OPAQUE,
     ["requests sent with Bearer ", "were rejected"]),
    ("basic-auth-header", f"Authorization: Basic {BASIC}\r\nHost: registry.internal", BASIC,
     ["Authorization: Basic ", "\r\nHost: registry.internal"]),
    ("pem-rsa-block", f"key material:\n{pem('RSA PRIVATE KEY')}\nstarting server", PEM_BODY[1],
     ["key material:\n", "\nstarting server"]),
    ("pem-openssh-block", f"$ cat ~/.ssh/id_ed25519\n{pem('OPENSSH PRIVATE KEY')}\n$ ls", PEM_BODY[2],
     ["$ cat ~/.ssh/id_ed25519\n", "\n$ ls"]),
    ("pem-json-escaped", '"private_key": "' + pem("PRIVATE KEY").replace("\n", "\\n") + '\\n", "type": "sa"',
     PEM_BODY[0], ['"private_key": "', '"type": "sa"']),
    ("pem-start-of-cut-log", "loading key\n" + pem("EC PRIVATE KEY").rsplit("\n", 2)[0], PEM_BODY[2],
     ["loading key\n"]),
    ("pem-end-of-cut-log", pem("PRIVATE KEY").split("\n", 2)[2] + "\nkey loaded", PEM_BODY[3], ["\nkey loaded"]),
    ("postgres-url", "DATABASE_URL=postgresql://bench:s3cr3tPass@db.internal:5432/results", "s3cr3tPass",
     ["postgresql://bench:", "@db.internal:5432/results"]),
    ("redis-url-no-user", "connecting to redis://:p4ssw0rd@cache:6379/0 ...", "p4ssw0rd",
     ["connecting to redis://:", "@cache:6379/0 ..."]),
    ("google-api-key", f"https://maps.googleapis.com/maps/api/geocode/json?address=x&key={GOOGLE}", GOOGLE,
     ["https://maps.googleapis.com/maps/api/geocode/json?address=x&key="]),
    ("stripe-secret", f"stripe.api_key = {STRIPE!r}  # billing", STRIPE, ["stripe.api_key = '", "'  # billing"]),
    ("stripe-restricted-notes", f"rotate {STRIPE_RESTRICTED} after the run", STRIPE_RESTRICTED,
     ["rotate", "after the run"]),
    ("npmrc", f"//registry.npmjs.org/:_authToken={NPM}", NPM, ["//registry.npmjs.org/:_authToken="]),
    ("gitlab", f"git push https://oauth2:{GITLAB}@gitlab.com/acme/kb.git", GITLAB,
     ["git push https://oauth2:", "@gitlab.com/acme/kb.git"]),
    ("flag-space", "python bench.py --model llama --api-key abc123def --steps 10", "abc123def",
     ["python bench.py --model llama --api-key ", " --steps 10"]),
    ("flag-equals", "run.sh --db-password=Tr0ub4dor&3 --verbose", "Tr0ub4dor", ["run.sh --db-password=", "--verbose"]),
    ("password-assignment", "mysql login password=hunter2 user=bench", "hunter2",
     ["mysql login password=", " user=bench"]),
    ("hf-token-env-any-shape", "HF_TOKEN=notarealformat123 HF_HUB_OFFLINE=1", "notarealformat123",
     ["HF_TOKEN=", " HF_HUB_OFFLINE=1"]),
    ("json-api-key", '{"model": "gpt-x", "api_key": "k-98765-zyx", "temperature": 0}', "k-98765-zyx",
     ['"model": "gpt-x"', '"api_key": "', '"temperature": 0']),
    ("yaml-db-password", "database:\n  host: db\n  DB_PASSWORD: 'c0rrect horse'\n", "c0rrect horse",
     ["database:\n  host: db\n  DB_PASSWORD: '"]),
    ("cookie-header", "Cookie: sessionid=8f3k2j; csrftoken=a9d8f7\nUser-Agent: curl/8.0", "a9d8f7",
     ["Cookie: ", "\nUser-Agent: curl/8.0"]),
    ("s3-presigned", f"GET https://b.s3.amazonaws.com/w.bin?X-Amz-Credential={AWS_KEY_ID}%2F20240501"
     "&X-Amz-Signature=" + "9f8e7d6c" * 8, "9f8e7d6c" * 8, ["GET https://b.s3.amazonaws.com/w.bin?X-Amz-Credential="]),
    ("python-kwarg", 'client = OpenAI(api_key="not-a-shape-42", timeout=30)', "not-a-shape-42",
     ["client = OpenAI(api_key=", "timeout=30)"]),
    ("environ-subscript", 'os.environ["HF_TOKEN"] = "plain-value-7"', "plain-value-7", ['os.environ["HF_TOKEN"] = "']),
    ("custom-header", "curl -H 'X-Auth-Token: 0a1b2c3d' https://bench.internal/api", "0a1b2c3d",
     ["curl -H 'X-Auth-Token: ", "' https://bench.internal/api"]),
    ("aws-session-token", "aws_session_token = FwoGZXIvYXdzEBYaD", "FwoGZXIvYXdzEBYaD", ["aws_session_token = "]),
    ("db-pwd-env", "DB_PWD=letmein PWD=/srv", "letmein", ["DB_PWD=", "PWD=/srv"]),
]
# fmt: on


@pytest.mark.parametrize(("text", "secret", "kept"), [case[1:] for case in SECRETS], ids=[case[0] for case in SECRETS])
def test_secret_is_masked_and_context_kept(text: str, secret: str, kept: list[str]) -> None:
    out = redact_text(text)
    assert secret not in out
    assert MASK in out
    for words in kept:
        assert words in out


HARMLESS = [
    ("git-commit", "commit 3f2a9c4d5e6f708192a3b4c5d6e7f80912345678 (HEAD -> main)"),
    ("sha256-digest", "sha256:9b2e4f7a1c3d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7"),
    ("uuid", "run_id=123e4567-e89b-12d3-a456-426614174000"),
    ("torch-version", "torch==2.13.0+cpu torchvision==0.28.0+cu128"),
    ("sklearn", "pip install scikit-learn sk-learn sk-video-2"),
    ("skeleton", "skeleton keys and skill-sets"),
    ("hf-hub-download", "from huggingface_hub import hf_hub_download, hf_transfer_enabled_for_large_models"),
    ("ghp-alone", "ghp is short for GitHub personal, ghp_ alone is not a token"),
    ("eyj-alone", "eyJ prefix; short base64 eyJhbGci and eyJhbGciOi.eyJzdWIi"),
    ("certificate", "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----"),
    ("url-without-password", "pip install --index-url https://download.pytorch.org/whl/cu128 torch"),
    ("url-with-user-only", "git clone https://jane@git.example.com/acme/kb.git"),
    ("key-size", "key_size=256 KEY_SIZE=4096"),
    ("tokens-per-s", "tokens_per_s=1234 num_tokens: 4096 max_new_tokens=128"),
    ("max-session-len", "max_session_len=2048 token_type: bearer"),
    ("author", "author: Jane Doe\nAUTHOR=jane"),
    ("tokenizers-parallelism", "TOKENIZERS_PARALLELISM=false"),
    ("slack-channel", "see #xox-team and #xoxb-alerts"),
    ("email", "contact jane.doe+bench@example.com"),
    ("bearer-prose", "the bearer of the news; Bearer tokens are defined in RFC 6750"),
    ("ssh-public-key-path", "IdentityFile /home/u/.ssh/id_rsa.pub"),
    ("cuda-alloc-conf", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
    ("shell-dirs", "PWD=/home/u/work OLDPWD=/tmp"),
    ("key-error", "KeyError: 'fc.weight'"),
    ("dispatch-key", "c10::DispatchKey::PrivateUse1 dispatch_key=PrivateUse1 PrivateUse1: registered at foo.cpp:12"),
    ("incompatible-keys", "_IncompatibleKeys(missing_keys=['fc.bias'], unexpected_keys=[])"),
    ("use-auth-token", "from_pretrained(name, use_auth_token=True, token=None)"),
    ("run-config-env", "CUDA_VISIBLE_DEVICES=0,1 MASTER_PORT=29500 NEURON_RT_NUM_CORES=2 HF_HUB_OFFLINE=1"),
    ("xla-flags", "XLA_FLAGS=--xla_dump_to=/tmp/xla --xla_gpu_enable_latency_hiding_scheduler=true"),
    ("test-output", "PASS: test_add\nFAIL: test_mul"),
    ("token-path", "HF_TOKEN_PATH=/home/u/.cache/huggingface/token"),
    ("ssh-public-key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGfK jane@laptop"),
    ("aten-schema", "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    ("metrics-line", "step=120 loss=2.3141 grad_norm=1.25 lr=3.0e-4"),
    ("keyboard", "KEYBOARD_LAYOUT=us KeyboardInterrupt"),
    ("comparison", 'if key == "weight":'),
    ("empty", ""),
]


@pytest.mark.parametrize("text", [case[1] for case in HARMLESS], ids=[case[0] for case in HARMLESS])
def test_harmless_text_is_unchanged(text: str) -> None:
    assert redact_text(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql://bench:pw@db/x", f"postgresql://bench:{MASK}@db/x"),
        ("Authorization: Bearer abc", f"Authorization: Bearer {MASK}"),
        ('"api_key": "x y"', f'"api_key": "{MASK}"'),
        ("--token t0k --steps 3", f"--token {MASK} --steps 3"),
        ("https://hooks.slack.com/workflows/T1/A2/B3", f"https://hooks.slack.com/workflows/{MASK}"),
        (f"a\n{pem('PRIVATE KEY')}\nb", f"a\n{MASK}\nb"),
        ("key_size: 1 api_key: k2", f"key_size: 1 api_key: {MASK}"),
    ],
    ids=["url", "bearer", "json", "flag", "webhook", "pem", "exempt-then-secret"],
)
def test_exact_output(text: str, expected: str) -> None:
    assert redact_text(text) == expected


SECRET_NAMES = [
    "HF_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN", "API_KEY",
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DB_PASSWORD", "MYSQL_PWD", "SMTP_PASSWD", "GPG_PASSPHRASE",
    "GOOGLE_APPLICATION_CREDENTIALS", "SLACK_BOT_TOKEN", "apiKey", "HFToken", "x-api-key", "Authorization",
    "Cookie", "SESSIONID", "sessionid", "client_secret", "X-Amz-Signature", "_authToken", "auth",
    "SecretAccessKey", "SessionToken", "API_KEY_V2", "PGPASSWORD", "REDIS_PASS", "pass", "SESSION_ID",
]  # fmt: skip
HARMLESS_NAMES = [
    "PATH", "OLDPWD_DIR", "AUTHOR", "KEYBOARD_LAYOUT", "TOKENIZERS_PARALLELISM", "HF_HUB_OFFLINE",
    "CUDA_VISIBLE_DEVICES", "MASTER_PORT", "NEURON_RT_NUM_CORES", "XLA_FLAGS", "MONKEY_PATH", "KEY_SIZE",
    "max_session_len", "num_tokens", "tokens_per_s", "token_type", "HF_TOKEN_PATH", "KeyError", "DispatchKey",
    "PrivateUse1", "PASS", "", "__", "PYTORCH_CUDA_ALLOC_CONF", "eos_token_id", "num_key_value_heads", "key_states",
    "dispatch_key_set", "pad_token", "time_to_first_token", "ms_per_token", "HF_HUB_DISABLE_IMPLICIT_TOKEN",
    "SESSION_MANAGER",
]  # fmt: skip


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", HARMLESS_NAMES)
def test_harmless_names(name: str) -> None:
    assert not is_secret_name(name)


def test_redact_env() -> None:
    env = {
        "HF_TOKEN": HF,
        "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        "OPENAI_API_KEY": "anything",
        "DB_PASSWORD": "",
        "TOKENIZERS_PARALLELISM": "false",
        "PATH": "/usr/local/cuda/bin:/usr/bin",
        "PWD": "/home/u/work",
        "AUTHOR": "jane",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "SOME_URL": "https://u:pw@host/x",
        "NOTE": f"pulled with {GHP}",
    }
    before = dict(env)
    out = redact_env(env)
    assert env == before  # a copy: the caller's environment is untouched
    assert out == {
        "HF_TOKEN": MASK,
        "AWS_SECRET_ACCESS_KEY": MASK,
        "OPENAI_API_KEY": MASK,
        "DB_PASSWORD": MASK,
        "TOKENIZERS_PARALLELISM": "false",
        "PATH": "/usr/local/cuda/bin:/usr/bin",
        "PWD": "/home/u/work",
        "AUTHOR": "jane",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "SOME_URL": f"https://u:{MASK}@host/x",
        "NOTE": f"pulled with {MASK}",
    }


@pytest.mark.parametrize(
    "text",
    [
        "a" * 200_000,
        "key" * 70_000,
        "key=" * 50_000,
        "--token " * 25_000,
        'token="' * 30_000,
        "://" * 70_000,
        "Bearer " * 30_000,
        "sk-" * 70_000,
        "eyJ" * 70_000 + ".",
        "-----BEGIN PRIVATE KEY-----\n" * 8_000,
        "AAAA\n" * 40_000 + "-----END PRIVATE KEY-----",
    ],
    ids=["letters", "keys", "key-eq", "flags", "quotes", "schemes", "bearers", "sk", "eyj", "pem-begins", "pem-lines"],
)
def test_no_catastrophic_backtracking(text: str) -> None:
    start = time.perf_counter()
    redact_text(text)
    assert time.perf_counter() - start < 5  # linear: well under a second; quadratic: minutes


# Pieces that the patterns care about, so that random joins hit the edges between them.
FRAGMENTS = [
    "token", "TOKEN", "api_key", "password", "key_size", "Authorization", "Cookie", "PWD", "=", ":", ": ", " ", "\n",
    '"', "'", "--", "-", "[", "]", "Bearer ", "Basic ", "true", "hf_", "AbC1", "AKIA", "://", "u:p@h", "@", MASK,
    "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "QUFB", "eyJ", "abcdefghij", ".", "sk-", "9Z",
    "hooks.slack.com/services/", "xoxb-1", "&", ",", "\\", "ghp_", "A1b2C3d4" * 5, "X-Api-Key", "Set-Cookie: ",
    "Proc-Type: 4,ENCRYPTED", "-----BEGIN RSA PRIVATE KEY-----\n", "\n-----END RSA PRIVATE KEY-----", "{", "\t", "::",
    "max_session_len", "DispatchKey", "null", "token ", "(", ";", "/", "_", "é",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join))
def test_idempotent_on_fragments(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


@settings(deadline=None)
@given(st.text())
def test_idempotent_and_total_on_any_text(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


def test_a_cookie_inside_json_is_masked_and_the_json_stays_valid() -> None:
    import json

    text = json.dumps({"args": {"header": "Cookie: session=abcdef123456; csrf=zzzzyyyyxxxx"}, "cookie": "s3cr3tv4lue"})
    masked = redact_text(text)
    assert json.loads(masked) == {"args": {"header": f"Cookie: {MASK}"}, "cookie": MASK}


def test_pieces_of_a_one_line_file_are_masked_as_the_whole() -> None:
    import io

    from kb.secrets.redact import redact_pieces

    events = ",".join(f'{{"name": "op{n}", "args": {{"token": "ghp_{n:04d}{"a" * 32}"}}}}' for n in range(400))
    text = f'{{"traceEvents": [{events}]}}'
    pieces = list(redact_pieces(io.StringIO(text), block=1000, longest=3000))
    assert len(pieces) > 10 and "".join(pieces) == redact_text(text) and "ghp_" not in "".join(pieces)


@pytest.mark.parametrize(
    "name",
    [
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off",
        "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_tn",
        "triton_red_fused__log_softmax_nll_loss_forward_2",
    ],
)
def test_kernel_names_of_a_profile_are_kept(name: str) -> None:
    assert redact_text(f"| `{name}` | 43.5 | 1528 |") == f"| `{name}` | 43.5 | 1528 |"


@pytest.mark.parametrize("token", [OPENAI, ANTHROPIC, SLACK_BOT, "xai-" + "Qw3Er4Ty5Ui6" * 6])
@pytest.mark.parametrize("name", ["run-7-{}", "job-{}-retry", "ckpt-step-{}.pt"])
def test_a_token_after_any_hyphenated_word_is_masked(name: str, token: str) -> None:
    masked = redact_text(f"saved {name.format(token)}")
    assert token[8:24] not in masked and MASK in masked


@pytest.mark.parametrize(
    "text",
    [
        "supabase login sbp_" + "9f3e1b7c2d4a6e8f0b1c3d5e7f9a2b4c6d8e0f1a",
        "key sk_" + "1f30de08383a3bf9abddb466658d944fcdd6307a9e977208",
        "POST https://api.chat.example/bot/" + "1RKQGzG-1ev_I8_TI8O-8bHdEYN4eTLF9SNv_13th6VNUr" + "/send",
    ],
    ids=["hex-after-prefix", "hex-after-sk", "dash-split-url-part"],
)
def test_hex_after_a_vendor_prefix_and_a_dash_split_url_part_are_masked(text: str) -> None:
    assert MASK in redact_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "docker-" + "3f" * 32 + ".scope",
        "loaded run_" + "8cde5ca8380496c9a6cc7ef3a8b46a0372a1d920",
        "at git_" + "8cde5ca8380496c9a6cc7ef3a8b46a0372a1d920",
        "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/resolve/main/model-00001-of-00004.safetensors",
    ],
)
def test_hashes_named_by_a_word_and_model_paths_are_kept(text: str) -> None:
    assert redact_text(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ('step 1\nAuthorization: Digest username="u", response="b5c67ab88393e0527ef134dc2d19375b"', "b5c67ab88393e"),
        ('{"kty":"RSA","d":"' + "yE1gH5frhctbPJXiRO0w" * 4 + '"}', "yE1gH5frhctbPJXiRO0w"),
        ("b2 authorize-account 0051a2b3 K005abcDEF12\nmc alias set s https://s3 AKIAID WBzSgBMbW8lefn2q", "WBzSgBMbW8"),
        ("aws configure set aws_secret_access_key Xq9Lm3\nngrok config add-authtoken 44PFmE7P0445ea9Tm", "44PFmE7P04"),
    ],
    ids=["digest-params", "jwk-member", "argument-then-mc", "argument-then-ngrok"],
)
def test_a_credential_inside_a_json_string_is_masked(text: str, secret: str) -> None:
    """JSON escapes the quotes and line breaks: a parameter's `\\"` and a value's end at `\\n` are the text's own."""
    inside = json.dumps({"message": text})
    assert secret not in redact_text(inside) and secret not in redact_text(text)
