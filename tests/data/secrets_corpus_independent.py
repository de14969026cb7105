"""An independent secrets corpus: kinds and vendors kb's own patterns were not written from, split in two halves.

tests/data/secrets_corpus.py grew with kb's patterns, so a figure measured on it is in-sample. This corpus was
written from the kinds of credential a training or benchmarking run can print (newer vendor prefixes, HTTP
authorization schemes, tokens inside URLs, positional passwords of database and cloud command lines, JWE and
PASETO tokens, service-account JSON, private keys passed as one argument, credentials behind a secret-named
option or variable) and the evidence that looks like them (state-dict keys, token ids, base64 tensors, module
paths, hashes, model and checkpoint ids, long user names).

Every value is synthetic: random characters of the vendor's documented alphabet and length behind its documented
prefix, drawn from a generator seeded by the entry's id, so the corpus is the same on every machine and no value
is anyone's credential. Pieces are joined at run time so that no scanner flags this file.

The whole corpus is now tuning data: its held-out half was looked at once its leaks were known, so it can no
longer stand for credentials kb has never seen. The held-out figure is measured on a fresh corpus
(tests/data/secrets_corpus_fresh.py).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import struct
from dataclasses import replace

from data.secrets_corpus import LookAlike, Secret

_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
ALNUM = _UPPER + _LOWER + _DIGITS
LOWER_ALNUM = _LOWER + _DIGITS
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"


def rand(seed: str, length: int, alphabet: str = ALNUM) -> str:
    """`length` characters of `alphabet`, fixed by `seed`, with at least one letter and one digit where the
    alphabet has both (a real token of that length almost always has)."""
    rng = random.Random(hashlib.sha256(seed.encode()).digest())
    while True:
        out = "".join(rng.choice(alphabet) for _ in range(length))
        letters, digits = any(c.isalpha() for c in out), any(c.isdigit() for c in out)
        if (letters or not any(c.isalpha() for c in alphabet)) and (digits or not any(c.isdigit() for c in alphabet)):
            return out


def uuid(seed: str) -> str:
    h = rand(seed, 32, HEX)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def b64url(seed: str, length: int) -> str:
    return rand(seed, length, B64URL)


def _jose(header: dict, seed: str, parts: list[int]) -> str:
    head = base64.urlsafe_b64encode(json.dumps(header).encode()).decode().rstrip("=")
    return ".".join([head, *(b64url(f"{seed}/{n}", size) if size else "" for n, size in enumerate(parts))])


def _pem_body(seed: str, lines: int) -> list[str]:
    return [rand(f"{seed}/{n}", 64, B64) for n in range(lines)]


BEGIN, END = "-----" + "BEGIN ", "-----" + "END "


def pem(kind: str, seed: str, lines: int = 4, sep: str = "\n") -> str:
    return sep.join([f"{BEGIN}{kind}-----", *_pem_body(seed, lines), f"{END}{kind}-----"])


def _service_account(seed: str) -> tuple[str, str]:
    key_id = rand(seed + "/id", 40, HEX)
    key = pem("PRIVATE " + "KEY", seed, 3, "\n") + "\n"
    return key_id, key


_SA_KEY_ID, _SA_KEY = _service_account("sa")
_SA2_KEY_ID, _SA2_KEY = _service_account("sa2")

# (kind, Secret): what kind of credential each is.
_SECRETS: list[tuple[str, Secret]] = [
    # -- newer vendor prefixes ------------------------------------------------------------------------------
    (
        "vendor",
        Secret("openrouter", "sk-" + "or-v1-" + rand("openrouter", 64, HEX), "router: using key {}", "ROUTER_K"),
    ),
    (
        "vendor",
        Secret("pinecone", "pcsk" + "_" + rand("pc1", 6) + "_" + rand("pc2", 63), "index client {} ready", "VDB_CRED"),
    ),
    (
        "vendor",
        Secret(
            "langsmith",
            "lsv2" + "_pt_" + rand("ls", 32, HEX) + "_" + rand("ls2", 10, HEX),
            "tracing to project with {}",
            "TRACE_K",
        ),
    ),
    (
        "vendor",
        Secret(
            "tailscale",
            "tskey" + "-auth-" + rand("ts1", 12) + "-" + rand("ts2", 33),
            "tailscale up --authkey={}",
            "TS_K",
        ),
    ),
    ("vendor", Secret("render", "rnd" + "_" + rand("render", 32), "deploy hook used {}", "HOSTING_K")),
    ("vendor", Secret("supabase", "sbp" + "_" + rand("supabase", 40, HEX), "supabase login {}", "SB_K")),
    ("vendor", Secret("langfuse", "sk-" + "lf-" + uuid("langfuse"), "langfuse client {} connected", "LF_K")),
    ("vendor", Secret("modal", "as" + "-" + rand("modal", 22), "modal profile: {}", "MODAL_K")),
    ("vendor", Secret("neon", "napi" + "_" + rand("neon", 64, LOWER_ALNUM), "neonctl with {}", "NEON_K")),
    ("vendor", Secret("planetscale", "pscale" + "_tkn_" + rand("pscale", 43), "pscale connect {}", "PSCALE_K")),
    ("vendor", Secret("onepassword", "ops" + "_eyJ" + rand("ops", 120, B64URL), "op run with {}", "OP_K")),
    ("vendor", Secret("elevenlabs", "sk" + "_" + rand("eleven", 48, HEX), "tts voice key {}", "VOICE_K")),
    ("vendor", Secret("cerebras", "csk" + "-" + rand("cerebras", 48, LOWER_ALNUM), "inference with {}", "CS_K")),
    ("vendor", Secret("axiom", "xaat" + "-" + uuid("axiom"), "axiom ingest {}", "AX_K")),
    ("vendor", Secret("buildkite", "bkua" + "_" + rand("buildkite", 40, HEX), "agent token {}", "BK_K")),
    (
        "vendor",
        Secret("honeycomb", "hcaik" + "_" + rand("honeycomb", 58, LOWER_ALNUM), "otel exporter key {}", "HNY_K"),
    ),
    (
        "vendor",
        Secret(
            "airtable", "pat" + rand("airtable", 14) + "." + rand("airtable2", 64, HEX), "airtable base sync {}", "AT_K"
        ),
    ),
    ("vendor", Secret("scaleway", "SCW" + rand("scw", 17, _UPPER + _DIGITS), "scw access {}", "SCW_A")),
    ("vendor", Secret("jfrog", "cmVmdGtuOjAxOj" + rand("jfrog", 50), "artifactory identity {}", "JF_K")),
    (
        "vendor",
        Secret(
            "circleci", "CCIPAT" + "_" + rand("circle1", 22) + "_" + rand("circle2", 40, HEX), "circleci api {}", "CC_K"
        ),
    ),
    # -- HTTP authorization schemes ------------------------------------------------------------------------
    (
        "scheme",
        Secret(
            "okta-ssws", "00" + rand("okta", 40, B64URL), 'curl -H "Authorization: SSWS {}" https://o.okta.com', "HDR1"
        ),
    ),
    ("scheme", Secret("splunk-hec", uuid("splunk"), "Authorization: Splunk {}", "HDR2")),
    ("scheme", Secret("elastic-apikey", rand("elastic", 60, B64), "Authorization: ApiKey {}", "HDR3")),
    ("scheme", Secret("drf-token", rand("drf", 40, HEX), "-H 'Authorization: Token {}'", "HDR4")),
    ("scheme", Secret("opsgenie", uuid("genie"), "Authorization: GenieKey {}", "HDR5")),
    ("scheme", Secret("proxy-basic", rand("proxy", 32, B64) + "==", "Proxy-Authorization: Basic {}", "HDR6")),
    (
        "scheme",
        Secret(
            "aws-sigv4",
            rand("sigv4", 64, HEX),
            "authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature={}",
            "HDR7",
        ),
    ),
    (
        "scheme",
        Secret(
            "digest",
            rand("digest", 32, HEX),
            'Authorization: Digest username="bench", realm="r", nonce="n1", uri="/", response="{}"',
            "HDR8",
        ),
    ),
    ("scheme", Secret("custom-header", rand("xhdr", 36), "x-goog-api-client-key: {}", "HDR9")),
    (
        "scheme",
        Secret(
            "cookie-session",
            rand("cookie", 48, B64URL),
            "requests.get(url, cookies={{'sessionid': '{}'}})".replace("{{", "{").replace("}}", "}"),
            "HDR10",
        ),
    ),
    # -- tokens inside URLs --------------------------------------------------------------------------------
    (
        "url",
        Secret(
            "github-oauth-basic",
            rand("ghoauth", 40, HEX),
            "git clone https://{}:x-oauth-basic@github.com/acme/bench.git",
            "URL1",
        ),
    ),
    (
        "url",
        Secret(
            "bot-path", rand("botpath", 46, B64URL), "POST https://api.chat-bots.example/bot/{}/sendMessage", "URL2"
        ),
    ),
    (
        "url",
        Secret(
            "s3-presigned",
            rand("s3sig", 64, HEX),
            "GET https://b.s3.amazonaws.com/ckpt.pt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600"
            "&X-Amz-Signature={}",
            "URL3",
        ),
    ),
    (
        "url",
        Secret(
            "gcs-signed",
            rand("gcssig", 128, HEX),
            "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature={}",
            "URL4",
        ),
    ),
    (
        "url",
        Secret(
            "access-token-query", rand("atq", 40, B64URL), "https://api.example.org/v1/jobs?access_token={}", "URL5"
        ),
    ),
    (
        "url",
        Secret("apikey-query", rand("akq", 32, HEX), "fetching https://maps.example.com/geo?q=x&apikey={}&n=1", "URL6"),
    ),
    ("url", Secret("sentry-dsn", rand("dsn", 32, HEX), "SENTRY_DSN=https://{}@o12345.ingest.sentry.io/678", "URL7")),
    (
        "url",
        Secret("oauth2-user", rand("oauth2", 40, B64URL), "https://oauth2:{}@git.example.com/ml/bench.git", "URL8"),
    ),
    (
        "url",
        Secret(
            "cloudfront-sig",
            rand("cfsig", 120, B64URL),
            "https://d1.cloudfront.net/data.tar?Expires=1767225600&Signature={}&Key-Pair-Id=K2JCJMDEHXQW5F",
            "URL9",
        ),
    ),
    ("url", Secret("webhook-path", rand("whpath", 48, B64URL), "notify https://hooks.ops.example/t/{}", "URL10")),
    # -- positional passwords of database and cloud command lines ------------------------------------------
    ("positional", Secret("sqlplus", rand("sqlplus", 16), "sqlplus scott/{}@//db.example:1521/ORCLPDB1", "POS1")),
    ("positional", Secret("mysql-quoted", rand("mysqlq", 18), 'mysql -uroot -p"{}" bench', "POS2")),
    ("positional", Secret("mysql-bare", rand("mysqlb", 18), "mysql -h db -u bench -p{} results", "POS3")),
    ("positional", Secret("expdp", rand("expdp", 16), "expdp system/{}@ORCL schemas=bench", "POS4")),
    ("positional", Secret("b2-authorize", "K005" + rand("b2", 27), "b2 authorize-account 0051a2b3c4d5e6f {}", "POS5")),
    (
        "positional",
        Secret("mc-alias", rand("mc", 40), "mc alias set store https://s3.example AKIAEXAMPLEID {}", "POS6"),
    ),
    (
        "positional",
        Secret("aws-configure", rand("awscfg", 40, B64), "aws configure set aws_secret_access_key {}", "POS7"),
    ),
    (
        "positional",
        Secret("ngrok", rand("ngrok", 27) + "_" + rand("ngrok2", 21), "ngrok config add-authtoken {}", "POS8"),
    ),
    ("positional", Secret("htpasswd", rand("htpasswd", 16), "htpasswd -b .htpasswd bench {}", "POS9")),
    ("positional", Secret("vault-login", "hvs" + "." + rand("vault", 24), "vault login {}", "POS10")),
    (
        "positional",
        Secret("psql-conninfo", rand("psql", 18), "psql 'host=db user=bench password={} dbname=r'", "POS11"),
    ),
    (
        "positional",
        Secret("twilio-pair", rand("twilio", 32, HEX), "twilio login AC" + rand("twsid", 32, HEX) + " {}", "POS12"),
    ),
    # -- JWE and PASETO -----------------------------------------------------------------------------------
    (
        "jose",
        Secret(
            "jwe-dir", _jose({"alg": "dir", "enc": "A256GCM"}, "jwe1", [0, 22, 180, 22]), "session blob {}", "JOSE1"
        ),
    ),
    (
        "jose",
        Secret(
            "jwe-rsa", _jose({"alg": "RSA-OAEP", "enc": "A128GCM"}, "jwe2", [342, 22, 96, 22]), "encrypted: {}", "JOSE2"
        ),
    ),
    ("jose", Secret("paseto-local", "v4" + ".local." + b64url("paseto1", 120), "token={}", "JOSE3")),
    ("jose", Secret("paseto-public", "v2" + ".public." + b64url("paseto2", 140), "issued {}", "JOSE4")),
    # -- service-account JSON ------------------------------------------------------------------------------
    (
        "service-account",
        Secret(
            "sa-key-id",
            _SA_KEY_ID,
            json.dumps({"type": "service_account", "project_id": "bench", "private_key_id": "{}"}),
            "SA1",
        ),
    ),
    (
        "service-account",
        Secret(
            "sa-private-key",
            _SA_KEY.splitlines()[2][8:40],
            json.dumps({"private_key_id": "0" * 8, "private_key": _SA_KEY}),
            "SA2",
        ),
    ),
    ("service-account", Secret("sa2-key-id", _SA2_KEY_ID, '  "private_key_id": "{}",', "SA3")),
    (
        "service-account",
        Secret(
            "sa2-private-key",
            _SA2_KEY.splitlines()[1][8:40],
            "credentials: " + json.dumps({"private_key": _SA2_KEY, "client_email": "x@y.iam"}),
            "SA4",
        ),
    ),
    ("service-account", Secret("jwk-d", b64url("jwkd", 342), '{"kty":"RSA","kid":"k1","d":"{}","e":"AQAB"}', "SA5")),
    # -- multi-line key blocks, one argument or many lines --------------------------------------------------
    (
        "pem",
        Secret("ec-argument", _pem_body("ec", 3)[1][8:40], "--tls-key " + pem("EC PRIVATE " + "KEY", "ec", 3), "PEM1"),
    ),
    ("pem", Secret("pem-spaces", _pem_body("sp", 3)[1][8:40], pem("PRIVATE " + "KEY", "sp", 3, " "), "PEM2")),
    ("pem", Secret("pem-crlf", _pem_body("crlf", 3)[1][8:40], pem("RSA PRIVATE " + "KEY", "crlf", 3, "\r\n"), "PEM3")),
    (
        "pem",
        Secret(
            "pem-escaped",
            _pem_body("esc", 3)[1][8:40],
            "key=" + pem("OPENSSH PRIVATE " + "KEY", "esc", 3, "\\n"),
            "PEM4",
        ),
    ),
    # -- any value behind a secret-named option, key, header or variable -------------------------------------
    ("context", Secret("dsn-var", rand("dsnvar", 24), "DATABASE_DSN=clickhouse://bench:{}@ch:9000/r", "CTX1")),
    ("context", Secret("webhook-var", rand("whvar", 32, B64URL), "ALERT_WEBHOOK={}", "CTX2")),
    ("context", Secret("writekey", rand("writekey", 32, HEX), "HONEYCOMB_WRITEKEY={}", "CTX3")),
    ("context", Secret("signing-secret", rand("signing", 32, HEX), "--slack-signing-secret {}", "CTX4")),
    ("context", Secret("credential-flag", rand("credflag", 30), "--credential={}", "CTX5")),
    ("context", Secret("private-key-id-flag", rand("pkid", 40, HEX), "--private-key-id {}", "CTX6")),
    ("context", Secret("session-yaml", rand("sessyaml", 44, B64URL), "session: {}", "CTX7")),
    ("context", Secret("cookie-var", rand("cookievar", 40, B64URL), "JUPYTER_COOKIE={}", "CTX8")),
    ("context", Secret("passphrase-flag", rand("pass", 20), "--key-passphrase {}", "CTX9")),
    ("context", Secret("auth-header-var", rand("authhdr", 40, B64URL), "x-auth: {}", "CTX10")),
    ("context", Secret("sig-param", rand("sigp", 43, B64URL), "&sig={}&se=2026-12-31", "CTX11")),
    ("context", Secret("mlflow-pass", rand("mlpw", 20), "MLFLOW_TRACKING_PWD={}", "CTX12")),
    ("context", Secret("pwd-in-json", rand("pwdjson", 20), '{"db": {"user": "r", "passwd": "{}"}}', "CTX13")),
    ("context", Secret("api-key-value-short", rand("shortkey", 12), "--api-key {}", "CTX14")),
]

_LOOK_ALIKES: list[tuple[str, LookAlike]] = [
    (
        "state-dict",
        LookAlike("lora-key", "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight", "SD1"),
    ),
    ("state-dict", LookAlike("lora-b", "missing key: base_model.model.lm_head.lora_B.default.weight", "SD2")),
    ("state-dict", LookAlike("fsdp-flat", "_fsdp_wrapped_module._flat_param torch.Size([131072000])", "SD3")),
    ("state-dict", LookAlike("fsdp-ckpt", "_checkpoint_wrapped_module.model.layers.31.mlp.down_proj.weight", "SD4")),
    ("state-dict", LookAlike("megatron-qkv", "decoder.layers.11.self_attention.linear_qkv.layer_norm_weight", "SD5")),
    (
        "state-dict",
        LookAlike(
            "megatron-legacy", "model.language_model.encoder.layers.0.self_attention.query_key_value.weight", "SD6"
        ),
    ),
    ("state-dict", LookAlike("key-value-heads", "num_key_value_heads=8 kv_channels=128", "SD7")),
    ("state-dict", LookAlike("optimizer-key", "optimizer.state.exp_avg_sq key_states value_states", "SD8")),
    ("token-id", LookAlike("stop-token", "stop_token=128009", "TK1")),
    ("token-id", LookAlike("eos-list", "eos_token_id: [128001, 128008, 128009]", "TK2")),
    ("token-id", LookAlike("pad-token-id", '"pad_token_id": 151643', "TK3")),
    ("token-id", LookAlike("bos-token", "bos_token=<|begin_of_text|>", "TK4")),
    ("token-id", LookAlike("max-new-tokens", "max_new_tokens=2048 token_budget=32768", "TK5")),
    ("token-id", LookAlike("tokens-per-s", "tokens_per_s=18234.5 time_per_output_token_ms=11.2", "TK6")),
    (
        "tensor",
        LookAlike(
            "b64-int32",
            '{"dtype": "int32", "shape": [16], "data": "'
            + base64.b64encode(struct.pack("<16i", *range(16))).decode()
            + '"}',
            "TN1",
        ),
    ),
    (
        "tensor",
        LookAlike(
            "b64-positions",
            "position_ids=" + base64.b64encode(struct.pack("<12i", *range(0, 1200, 100))).decode(),
            "TN2",
        ),
    ),
    ("module", LookAlike("inductor-module", "torch._inductor.codegen.triton.TritonKernel.codegen_kernel", "MD1")),
    ("module", LookAlike("xla-module", "torch_xla.distributed.fsdp.xla_fully_sharded_data_parallel", "MD2")),
    ("module", LookAlike("hf-module", "transformers.models.llama.modeling_llama.LlamaAttention.forward", "MD3")),
    ("module", LookAlike("triton-kernel", "triton_red_fused__softmax_backward_data_17 0.412ms", "MD4")),
    ("module", LookAlike("triton-poi", "kernel triton_poi_fused_add_mul_native_layer_norm_0 launched", "MD5")),
    ("module", LookAlike("cutlass", "cutlass_gemm_bf16_128x128x64_warpspecialized_cooperative", "MD6")),
    ("module", LookAlike("neuron-module", "MODULE_10344927339446294134+e30acd3a compiled", "MD7")),
    ("hash", LookAlike("git-sha", "HEAD is now at 9fceb02d0ae598e95dc970b74767f19372d61af8 fix loss", "HS1")),
    ("hash", LookAlike("torch-git", "torch 2.13.0.dev20260101+git7d7a4e1", "HS2")),
    ("hash", LookAlike("sha256", "sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "HS3")),
    (
        "hash",
        LookAlike(
            "wheel-hash", "--hash=sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "HS4"
        ),
    ),
    ("hash", LookAlike("md5", "checkpoint md5 9e107d9d372bb6826bd81d3542a419d6 ok", "HS5")),
    ("uuid", LookAlike("uuid-run", "run_id=4f0c8e1a-6b3d-4c2e-9f7a-1d2e3f4a5b6c", "UU1")),
    ("uuid", LookAlike("mlflow-run", "mlflow run 8c7f2a9b1e3d4c5f6a7b8c9d0e1f2a3b finished", "UU2")),
    ("uuid", LookAlike("trace-id", "trace_id=0af7651916cd43dd8448eb211c80319c span_id=b7ad6b7169203331", "UU3")),
    ("uuid", LookAlike("wandb-run", "wandb: run-20260101_120000-3kx9q2ab synced", "UU4")),
    ("model", LookAlike("llama-id", "meta-llama/Llama-3.1-8B-Instruct", "MO1")),
    ("model", LookAlike("qwen-id", "Qwen/Qwen3-32B-Instruct-2507", "MO2")),
    ("model", LookAlike("mixtral-id", "mistralai/Mixtral-8x7B-Instruct-v0.1", "MO3")),
    ("model", LookAlike("shard-name", "model-00003-of-00030.safetensors", "MO4")),
    ("model", LookAlike("deepspeed-ckpt", "checkpoints/global_step4500/mp_rank_00_model_states.pt", "MO5")),
    ("model", LookAlike("ckpt-step", "saved ckpt_step_000120000.pt", "MO6")),
    ("model", LookAlike("hf-dataset", "hf://datasets/HuggingFaceFW/fineweb-edu/sample-10BT", "MO7")),
    ("model", LookAlike("docker-tag", "rocm/pytorch:rocm6.4_ubuntu24.04_py3.12_pytorch_release_2.7.1", "MO8")),
    ("user", LookAlike("ssh-user", "ssh ml-infra-benchmark-runner-0042@trn2-node-17.cluster.internal", "US1")),
    ("user", LookAlike("ssh-url-user", "ssh://jenkins_build_agent_20260101@ci.example.com:2222/srv", "US2")),
    ("user", LookAlike("scp-user", "scp results.tgz svc_perf_regression_bot01@bench-h100-03:/data/", "US3")),
    ("user", LookAlike("git-ssh", "git@github.com:pytorch-benchmarks/neuron_inference_20260101.git", "US4")),
    ("config", LookAlike("auth-disabled", "auth: disabled", "CF1")),
    ("config", LookAlike("use-auth-token", "use_auth_token=True", "CF2")),
    ("config", LookAlike("key-size", "key_size=2048", "CF3")),
    ("config", LookAlike("token-env-name", "token_env_var=HF_TOKEN", "CF4")),
    ("config", LookAlike("dispatch-key", "DispatchKey.PrivateUse1 dispatch_key=AutogradPrivateUse1", "CF5")),
    ("config", LookAlike("bearer-word", "the bearer of this report", "CF6")),
]

# Where a run keeps a credential: a variable (and a flag) named for it. The names written above are placeholders.
_SECRETS = [(kind, replace(s, variable=f"{s.id.upper().replace('-', '_')}_SECRET")) for kind, s in _SECRETS]

SECRETS = [secret for _, secret in _SECRETS]
LOOK_ALIKES = [alike for _, alike in _LOOK_ALIKES]
