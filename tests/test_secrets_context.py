"""Masking by context: a value is masked for where it stands (after a credential-named option, key, header,
variable or URL part, in a password position of a database or cloud command line), whatever its shape; and
machine-made tokens no rule names are masked by their shape and entropy, while evidence that looks like them
stays. The values are made up here, not taken from either corpus."""

from __future__ import annotations

import json

import pytest

from kb.secrets.redact import MASK, redact_args, redact_text

SECRET = "Qm7" + "xT2vLp9Rw4Zk8Yb"  # shapeless: no vendor prefix, no rule knows it
HEX = "9c1f" + "0a7be3d24f6a8b5c1d2e3f4a5b6c7d8e9f0a1b2c"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # every Authorization scheme, in a header, in curl's -H, in JSON
        (f"Authorization: SSWS {SECRET}", "Authorization: SSWS "),
        (f"authorization: Splunk {SECRET}", "authorization: Splunk "),
        (f"curl -H 'Authorization: ApiKey {SECRET}' -H 'Accept: json'", "' -H 'Accept: json'"),
        (f'Authorization: Token token="{SECRET}"', "Authorization: Token "),
        (f'Authorization: Digest username="u", response="{SECRET}"', "Authorization: Digest "),
        (f"Proxy-Authorization: Basic {SECRET}", "Proxy-Authorization: Basic "),
        (f'{{"Authorization": "GenieKey {SECRET}", "Accept": "json"}}', '", "Accept": "json"}'),
        (f"authorization: AWS4-HMAC-SHA256 Credential=AKID/x, Signature={SECRET}", "AWS4-HMAC-SHA256 "),
        # positional passwords of database and cloud command lines; quoted ones masked whole
        (f'mysql -uroot -p"{SECRET}" bench', " bench"),
        (f'mysql -p="{SECRET}" bench', " bench"),
        (f"mysqldump -u r -p'{SECRET}' db", " db"),
        (f"sqlplus scott/{SECRET}@//db:1521/ORCL", "sqlplus scott/"),
        (f"impdp system/{SECRET}@ORCL full=y", "@ORCL full=y"),
        (f"b2 authorize-account 0051a2b3 {SECRET}", "0051a2b3"),
        (f"mc alias set s3 https://s3.example ACCESSID {SECRET}", "ACCESSID"),
        (f"htpasswd -b .htpasswd bench {SECRET}", "bench"),
        (f"ngrok authtoken {SECRET}", "ngrok authtoken "),
        (f"vault login {SECRET}", "vault login "),
        (f"aws configure set aws_secret_access_key {SECRET}", "aws_secret_access_key "),
        # URL user-info: a token as the user name, a password after it
        (f"git clone https://{HEX}:x-oauth-basic@github.com/a/b.git", "@github.com/a/b.git"),
        (f"https://api.example.org/v1/run/{SECRET}XyZ8aQ1/status", "/status"),
        # names that mean a credential
        (f"DATABASE_DSN=clickhouse://u:{SECRET}@ch/r", "DATABASE_DSN="),
        (f"ALERT_WEBHOOK={SECRET}", "ALERT_WEBHOOK="),
        (f"HONEYCOMB_WRITEKEY={SECRET}", "HONEYCOMB_WRITEKEY="),
        (f"tailscale up --authkey={SECRET}", "--authkey="),
        (f'"private_key_id": "{HEX}"', '"private_key_id": '),
        (f"--private-key-id {SECRET}", "--private-key-id "),
        # JWE (five parts, the key part empty), PASETO, a JSON Web Key's private member
        ("eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0.." + SECRET + "." + SECRET + "." + SECRET, ""),
        (f"v4.local.{SECRET}{SECRET}", ""),
        (f'{{"kty":"RSA","d":"{SECRET * 3}","e":"AQAB"}}', '"e":"AQAB"'),
        # a prefixed high-entropy token of a vendor no rule knows
        (f"with napi_{SECRET.lower()}x9q2w8e7r6", "with "),
        (f"key is zz-{SECRET}Ab3 today", " today"),
    ],
)
def test_a_value_is_masked_for_where_it_stands(text: str, kept: str) -> None:
    masked = redact_text(text)
    assert SECRET not in masked and SECRET.lower() not in masked and HEX not in masked, masked
    assert kept in masked and MASK in masked
    assert redact_text(masked) == masked  # masking twice changes nothing


def test_the_two_masks_that_kept_their_value_now_hide_it() -> None:
    assert redact_text(f'Authorization: Token token="{SECRET}"') == f"Authorization: Token {MASK}"
    assert redact_text(f'mysql -p"{SECRET}" db') == f"mysql -p{MASK} db"


def test_inside_json_escapes_the_masks_hide_the_value_and_keep_the_rest() -> None:
    text = json.dumps({"note": f'mysql -p"{SECRET}" db\nAuthorization: SSWS {SECRET}\nnext line'})
    masked = redact_text(text)
    assert json.loads(masked)["note"] == f"mysql -p{MASK} db\nAuthorization: SSWS {MASK}\nnext line"


def test_a_private_key_passed_as_one_argument_is_masked_whole() -> None:
    key = "\n".join(["-----BEGIN EC PRIVATE KEY-----", SECRET * 4, SECRET * 2, "-----END EC PRIVATE KEY-----"])
    assert SECRET not in " ".join(redact_args(["serve", "--tls-key", key, "--port", "8443"]))


@pytest.mark.parametrize(
    "text",
    [
        "stop_token=128009",
        "missing key: base_model.model.model.layers.3.self_attn.v_proj.lora_B.default.weight",
        "key: decoder.layers.11.self_attention.linear_qkv.layer_norm_weight",
        "kernel triton_per_fused__log_softmax_nll_loss_forward_12 took 0.1 ms",
        "model.safetensors sha256-" + "Zq3Vb7Nk2Lp9Xw4Mz6Rc1Ty8Ud5Se0Fa3Gb7Hc2Jd4",
        "wandb: run-20261205_101010-9zq8x7w6 synced",
        "ssh://svc_nightly_perf_runner_20261205@bench-7:22/srv",
        "git-" + HEX,
        "https://huggingface.co/meta-llama/Llama-3.2-11B-Vision-Instruct/resolve/" + HEX[:40] + "/config.json",
        "run_id=" + "6f1c2d3e-4a5b-4c6d-8e7f-0a1b2c3d4e5f",
        "private=False",
        json.dumps({"num_key_value_heads": 8, "rope_scaling": {"rope_type": "llama3"}}),
    ],
)
def test_evidence_that_looks_like_a_credential_is_kept(text: str) -> None:
    assert redact_text(text) == text
