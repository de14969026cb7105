"""Credentials of every common shape, and harmless text that looks like them, for the end-to-end redaction test.

Every secret is fake and assembled from pieces, so that no secret scanner flags this file. Each secret is
planted as a line of text (how a log, a note or an argument shows it) and as an environment variable; each
look-alike as a line and as a variable too. `probe` is a distinctive middle part of a secret: finding it
anywhere means the secret leaked at least partly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Secret:
    id: str
    value: str  # the credential: no part of it may be stored
    line: str  # how a log or a note shows it; `{}` stands for the value
    variable: str  # the environment variable that would hold it
    env: str = "{}"  # the variable's value, when it holds more than the credential (a URL with a password)

    @property
    def text(self) -> str:
        return self.line.replace("{}", self.value)

    @property
    def env_value(self) -> str:
        return self.env.replace("{}", self.value)

    @property
    def probe(self) -> str:
        """Ten letters and digits from the middle of the value: enough to be unique, found even if re-escaped."""
        middle = len(self.value) // 2
        runs = [m for m in re.finditer(r"[A-Za-z0-9]{10,}", self.value)]
        run = min(runs, key=lambda m: abs((m.start() + m.end()) // 2 - middle))
        centre = min(max((run.start() + run.end()) // 2, run.start() + 5), run.end() - 5)
        return self.value[centre - 5 : centre + 5]


@dataclass(frozen=True)
class LookAlike:
    id: str
    text: str  # comes back unchanged wherever it was planted
    variable: str  # a harmless variable name to plant it under


def _pem(kind: str, lines: list[str]) -> str:
    return "\n".join([f"-----BEGIN {kind}-----", *lines, f"-----END {kind}-----"])


_RSA = _pem("RSA PRIVATE KEY", ["MIIEpAIBAAKCAQEA" + "x7Q2" * 12, "Pz4Lk9Rt" * 8, "Wm3Vn8Ya" * 4 + "Qb=="])
_OPENSSH = _pem("OPENSSH PRIVATE KEY", ["b3BlbnNzaC1rZXktdjEA" + "Jh5Kd2Ws" * 5, "Tc7Ue1Fg" * 8])
_PKCS8 = _pem("ENCRYPTED PRIVATE KEY", ["MIIFHDBOBgkqhkiG9w0B" + "Nr6Mx0Zq" * 5, "Hy2Gv4Bs" * 6 + "=="])
_AZURE_KEY = "Zk8Lp2Qw" * 10 + "Xy4Vb6Nm=="

SECRETS = [
    Secret(
        "aws-access-key-id",
        "AKIA" + "ZQ4R7T2XWV5NB3MK",
        "Found credentials in environment variables: {}",
        "AWS_ACCESS_KEY_ID",
    ),
    Secret(
        "aws-secret-access-key",
        "kW9tRb2Lx" + "/Vq7Pz3Nm+Ye5Hc8Ju1Gd4Fs6Ak0Eo",
        "aws_secret_access_key = {}",
        "AWS_SECRET_ACCESS_KEY",
    ),
    Secret(
        "aws-session-token",
        "FwoGZXIvYXdzE" + "Pb7Ly2Mc9Nd4Qe6Rf1Sg3Th8Ui5Vj0Wk",
        "export AWS_SESSION_TOKEN={}",
        "AWS_SESSION_TOKEN",
    ),
    Secret(
        "github-ghp",
        "ghp_" + "Rf5Tg6Yh7Uj8Ik9Ol0Pa1Sd2Fg3Hj4Kl5Zxq",
        "git remote set-url origin https://{}@github.com/acme/bench",
        "GITHUB_TOKEN",
    ),
    Secret("github-gho", "gho_" + "Mn2Bv3Cx4Zl5Kj6Hg7Fd8Sa9Po0Iu1Yt2Req", "gh auth: logged in with {}", "GH_TOKEN"),
    Secret(
        "github-ghu", "ghu_" + "Qa1Ws2Ed3Rf4Tg5Yh6Uj7Ik8Ol9Pz0Xc1Vbq", "app user-to-server {} accepted", "GH_APP_USER"
    ),
    Secret(
        "github-ghs",
        "ghs_" + "Lk9Jh8Gf7Ds6Ap5Oi4Uy3Tr2Ew1Qz0Mx9Ncq",
        "remote: https://x-access-token:{}@github.com/acme/kb",
        "GH_INSTALLATION",
    ),
    Secret("github-ghr", "ghr_" + "Vb4Nm5Qw6Er7Ty8Ui9Op0As1Df2Gh3Jk4Lzq", "refresh token {} issued", "GH_REFRESH"),
    Secret(
        "github-fine-grained",
        "github_pat_" + "11ABCDE2F0" + "gH7jK8lM9nP0qR1sT2uV3w_" + "Xy4Zb5Cd6Ef7Gh8Ij9Kl0Mn1Op2Qr3St4Uv5Wx6Yz7Ab8",
        "using {} for the API",
        "GITHUB_PAT",
    ),
    Secret(
        "gitlab-pat",
        "glpat-" + "Hn3Jm4Kq5Lr6Ms7Nt8Pu",
        "git clone https://oauth2:{}@gitlab.com/acme/kb.git",
        "GITLAB_TOKEN",
    ),
    Secret("gitlab-deploy", "gldt-" + "Wz5Xy6Av7Bu8Ct9Ds0Er", "deploy token {} configured", "CI_DEPLOY"),
    Secret("gitlab-runner", "glrt-" + "Fq1Gp2Ho3In4Jm5Kl6Lk", "registering runner with {}", "RUNNER_REG"),
    Secret(
        "slack-bot",
        "xoxb-" + "483920175634-5738291046572-" + "Yt6Ur5Ie4Wo3Qp2Az1Sx0Dc",
        "notifier: posting with {}",
        "SLACK_BOT_TOKEN",
    ),
    Secret(
        "slack-user",
        "xoxp-" + "2109876543-2109876543-987654321098-" + "h7G6f5E4d3C2b1A0",
        "slack user {}",
        "SLACK_USER",
    ),
    Secret(
        "slack-webhook",
        "T0ABC" + "DEF12/B0GHIJKL34/Qw3Er4Ty5Ui6Op7As8Df9",
        "curl -X POST https://hooks.slack.com/services/{}",
        "SLACK_WEBHOOK_URL",
        "https://hooks.slack.com/services/{}",
    ),
    Secret("stripe-live", "sk_live_" + "51Hx" + "Pq8Rs7Tu6Vw5Xa4Yb3Zc2", "stripe.api_key = '{}'", "STRIPE_SECRET"),
    Secret(
        "stripe-restricted",
        "rk_test_" + "51Hx" + "Mn9Lo8Kp7Jq6Ir5Hs4Gt3",
        "rotate {} after the run",
        "STRIPE_RESTRICTED",
    ),
    Secret(
        "google-api-key",
        "AIza" + "SyD" + "Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVb",
        "GET https://maps.googleapis.com/maps/api/geocode/json?key={}",
        "GOOGLE_API_KEY",
    ),
    Secret(
        "google-oauth-client-secret",
        "GOCSPX-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9",
        "client_id=123.apps client {}",
        "GOOGLE_CLIENT",
    ),
    Secret(
        "google-oauth-access",
        "ya29." + "a0AfB_byC" + "Hk3Lm4Np5Qr6St7Uv8Wx9Yz0Ab1Cd2Ef",
        "refreshed access {}",
        "GCP_ACCESS",
    ),
    Secret(
        "openai-project",
        "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe" * 2,
        "openai.AuthenticationError: Incorrect API key provided: {}",
        "OPENAI_API_KEY",
    ),
    Secret(
        "openai-legacy",
        "sk-" + "Hq7Wr2Ty" + "T3BlbkFJ" + "Kp4Ls6Dm8Nb0Vc2Xz4",
        "client = OpenAI(api_key='{}')",
        "OPENAI_KEY_OLD",
    ),
    Secret(
        "anthropic",
        "sk-ant-api03-" + "Xy7_Zw8-Uv9Ts6Rq5Po4Nm3Lk2Ji1" * 3 + "AA",
        'curl -H "x-api-key: {}"',
        "ANTHROPIC_API_KEY",
    ),
    Secret("huggingface", "hf_" + "Ab3De5Gh7Jk9Mn1Pq3Rs5Tu7Vw9Xy1Za3B", "huggingface-cli login --token {}", "HF_TOKEN"),
    Secret(
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9"
        + ".eyJzdWIiOiJiZW5jaC1ib3QiLCJpYXQiOjE3MDAwMDAwMDB9"
        + ".Rk3Tn5Vp7Xr9Zt1Bv3Dx5Fz7Hb9Jd1Lf3Nh5",
        "oidc: refreshed id {} (expires in 3600s)",
        "ID_TOKEN_JWT",
    ),
    Secret("pem-rsa", _RSA, "loading key material:\n{}\nkey loaded", "SSH_PRIVATE_KEY"),
    Secret("pem-openssh", _OPENSSH, "$ cat ~/.ssh/id_ed25519\n{}", "DEPLOY_KEY"),
    Secret("pem-encrypted-pkcs8", _PKCS8, "{}", "TLS_KEY"),
    Secret(
        "postgres-url-password",
        "Pg7Sx" + "Kd9Lw2Mq",
        "connecting to postgresql://bench:{}@db.internal:5432/results",
        "DATABASE_URL",
        "postgresql://bench:{}@db.internal:5432/results",
    ),
    Secret(
        "https-url-password",
        "Ht4Pw" + "Zn8Rc3Vb",
        "pip install --index-url https://ci:{}@pypi.internal/simple torch",
        "PIP_INDEX_URL",
        "https://ci:{}@pypi.internal/simple",
    ),
    Secret("bearer-header", "op4queTk" + "3n9Rw7Qx5Zc1", "> Authorization: Bearer {}", "AUTH_HEADER", "Bearer {}"),
    Secret("basic-header", "YmVuY2g6" + "aHVudGVyMmh1bnRlcjI=", "Authorization: Basic {}", "BASIC_AUTH"),
    Secret(
        "azure-storage-connection",
        _AZURE_KEY,
        "DefaultEndpointsProtocol=https;AccountName=benchdata;AccountKey={};EndpointSuffix=core.windows.net",
        "AZURE_STORAGE_CONNECTION_STRING",
        "DefaultEndpointsProtocol=https;AccountName=benchdata;AccountKey={};EndpointSuffix=core.windows.net",
    ),
    Secret(
        "azure-service-bus",
        "Sb3Kx" + "9Lm2Np5Qr8St1Uv4Wx7Yz0Ab6=",
        "Endpoint=sb://bench.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={}",
        "SERVICEBUS_CONNECTION",
        "Endpoint=sb://bench.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={}",
    ),
    Secret(
        "azure-sas",
        "Qz7Rk2Lp" + "9Xw4Mn6Vb1Ct8Ds3Ef5%3D",
        "GET https://bench.blob.core.windows.net/w/model.bin?sv=2022-11-02&sr=b&sp=r&sig={}",
        "AZURE_BLOB_URL",
        "https://bench.blob.core.windows.net/w/model.bin?sv=2022-11-02&sr=b&sp=r&sig={}",
    ),
    Secret("npm", "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "//registry.npmjs.org/:_authToken={}", "NPM_TOKEN"),
    Secret(
        "pypi",
        "pypi-" + "AgEIcHlwaS5vcmcCJDQ5" + "Mj3Nk8Lq2Pw7Rv5Tx0Yz4Ab6Cd9Ef1Gh3Ij5Kl7Mn",
        "password = {}",
        "TWINE_PASSWORD",
    ),
    Secret(
        "pypi-in-prose",
        "pypi-" + "AgENdGVzdC5weXBpLm9yZw" + "Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Ji0Hg9Fe8Dc7",
        "uploading with {}",
        "PYPI_UPLOAD",
    ),
    Secret("password-assignment", "Tr0ub4dor" + "Ex7Kq2Zm", "mysql login password={} user=bench", "DB_PASSWORD"),
    Secret("secret-yaml", "c0rrect" + "HorseB4tt3ry", "client_secret: {}", "OAUTH_CLIENT_SECRET"),
    Secret("api-key-flag", "k98765" + "zyxQwErTy", "python bench.py --api-key {} --steps 10", "BENCH_API_KEY"),
    Secret("cookie-header", "8f3k2j" + "Rt5Yu7Ip9", "Cookie: sessionid={}; csrftoken=a9d8f7", "SESSION_COOKIE"),
    Secret(
        "docker-auth",
        "ZG9ja2Vy" + "OmRrcl9wYXQ0NTY3OA==",
        '{"auths": {"ghcr.io": {"auth": "{}"}}}',
        "DOCKER_AUTH_CONFIG",
        '{"auths": {"ghcr.io": {"auth": "{}"}}}',
    ),
    Secret(
        "sendgrid",
        "SG." + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7O" + ".Pq8Rs9Tu0Vw1Xy2Za3Bc4De5Fg6Hi7Jk8Lm9No0Pq1R",
        "mail relay using {}",
        "MAIL_RELAY",
    ),
]

LOOK_ALIKES = [
    LookAlike("git-sha", "commit 3f2a9c4d5e6f708192a3b4c5d6e7f80912345678 (HEAD -> main)", "BENCH_GIT_COMMIT"),
    LookAlike("short-sha", "torch 2.9.0a0+git1b2c3d4", "BENCH_TORCH_BUILD"),
    LookAlike("uuid", "run_id=123e4567-e89b-12d3-a456-426614174000", "BENCH_RUN_ID"),
    LookAlike(
        "sha256-digest", "sha256:9b2e4f7a1c3d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7", "BENCH_IMAGE"
    ),
    LookAlike(
        "docker-digest",
        "pytorch/pytorch@sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "BENCH_CONTAINER",
    ),
    LookAlike(
        "base64-model-hash", "model.safetensors sha256-q3VbN7k2Lp9Xw4Mz6Rc1Ty8Ud5Se0Fa3Gb7Hc2Jd4=", "BENCH_WEIGHTS"
    ),
    LookAlike(
        "inductor-fx-key",
        "fx graph cache hit for key fvyrmqvxe2yeialcpsu7xlbs6xefgd5rsa6mjwycewdrpeq2jca",
        "BENCH_INDUCTOR_NOTE",
    ),
    LookAlike(
        "inductor-key-json",
        '"key": "fvyrmqvxe2yeialcpsu7xlbs6xefgd5rsa6mjwycewdrpeq2jca", "cache_state": "hit"',
        "BENCH_FX_CACHE",
    ),
    LookAlike(
        "inductor-cache-path",
        "/tmp/torchinductor_u/fxgraph/vy/fvyrmqvxe2yeialcpsu7xlbs6xefgd5rsa6mjwycewdrpeq2jca",
        "BENCH_FX_PATH",
    ),
    LookAlike(
        "triton-kernel", "triton_poi_fused_add_mul_0 cached in /tmp/triton/ZQ5LDXAT7JP3KMG2WRS4BVNE6HYF", "BENCH_TRITON"
    ),
    LookAlike("torch-version", "torch==2.13.0.dev20260101+cpu torchvision==0.28.0+cu128", "BENCH_VERSIONS"),
    LookAlike("neuron-version", "neuronx-cc 2.21.18209.0+043b1bf7", "BENCH_NEURON_CC"),
    LookAlike(
        "hex-tensor-dump", "tensor([0x3f800000, 0x40000000, 0x40400000, 0x7fc00000], dtype=torch.int32)", "BENCH_DUMP"
    ),
    LookAlike("long-hex", "payload 0x" + "deadbeefcafebabe0123456789abcdef" * 4, "BENCH_PAYLOAD"),
    LookAlike("hexdump", "00000010: 4a6f 686e 2044 6f65 0a00 ff7f 3f80 0000  John Doe....?...", "BENCH_HEXDUMP"),
    LookAlike("base64-tensor", "weights AAAAAAAAgD8AAABAAABAQAAAgEAAAKBA", "BENCH_B64"),
    LookAlike(
        "hf-cache-path",
        "/home/u/.cache/huggingface/hub/models--meta-llama--Llama-3-8B/snapshots/"
        "8cde5ca8380496c9a6cc7ef3a8b46a0372a1d920/model.safetensors",
        "BENCH_MODEL_PATH",
    ),
    LookAlike("tokens-per-s", "tokens_per_s=15234.5", "BENCH_TOKENS_PER_S"),
    LookAlike("max-tokens", "max_tokens=2048 max_new_tokens=128", "BENCH_GENERATION"),
    LookAlike("num-tokens", "num_tokens: 4096", "BENCH_NUM_TOKENS"),
    LookAlike("keyboard", "KeyboardInterrupt after the keyboard shortcut", "BENCH_KEYBOARD"),
    LookAlike("tokenizer", "token_type_ids loaded from tokenizer.json", "BENCH_TOKENIZER"),
    LookAlike("tokenizers-parallelism", "TOKENIZERS_PARALLELISM=false", "BENCH_TOKENIZERS"),
    LookAlike("key-size", "key_size=256 password_min_length=12", "BENCH_KEY_SIZE"),
    LookAlike("dispatch-key", "dispatch_key=PrivateUse1", "BENCH_DISPATCH"),
    LookAlike("author", "author: Jane Doe", "BENCH_AUTHOR"),
    LookAlike("url-without-password", "https://download.pytorch.org/whl/cu128", "BENCH_INDEX"),
    LookAlike("ssh-remote", "git@github.com:pytorch/pytorch.git", "BENCH_REMOTE"),
    LookAlike("ssh-public-key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGfKq8 jane@laptop", "BENCH_PUBKEY"),
    LookAlike("email", "jane.doe+bench@example.com", "BENCH_EMAIL"),
    LookAlike("sklearn", "scikit-learn sk-learn sk-video-2", "BENCH_PACKAGES"),
    LookAlike("hf-identifier", "hf_hub_download hf_transfer_enabled", "BENCH_HF_FUNCS"),
    LookAlike("bearer-prose", "the bearer of the news", "BENCH_PROSE"),
    LookAlike("metrics-line", "step=120 loss=2.3141 grad_norm=1.25 lr=3.0e-4", "BENCH_METRICS"),
    LookAlike("aten-op", "aten::_scaled_dot_product_flash_attention", "BENCH_OP"),
    LookAlike("alloc-conf", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "BENCH_ALLOC"),
    LookAlike("timestamp", "2026-01-01T12:00:00Z", "BENCH_WHEN"),
    LookAlike("eyj-fragment", "eyJhbGciOi config fragment", "BENCH_FRAGMENT"),
]
