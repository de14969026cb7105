"""Credentials of every common shape, and harmless text that looks like them, for the end-to-end redaction test.

Every secret is fake and assembled from pieces, so that no secret scanner flags this file. Each secret is
planted as a line of text (how a log, a note or an argument shows it) and as an environment variable; each
look-alike as a line and as a variable too. `probe` is a distinctive middle part of a secret: finding it
anywhere means the secret leaked at least partly.
"""

from __future__ import annotations

import base64
import hashlib
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


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_HEX = "0123456789abcdef"


def _fill(tag: str, length: int, alphabet: str = _ALNUM) -> str:
    """`length` characters of `alphabet`, fixed by `tag` and different for every tag: fake, distinct, stable."""
    out, counter = [], 0
    while len(out) < length:
        digest = hashlib.sha256(f"{tag}/{counter}".encode()).digest()
        out += [alphabet[byte % len(alphabet)] for byte in digest]
        counter += 1
    return "".join(out[:length])


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

_PUTTY_LINES = "\n".join(_fill(f"putty{n}", 64, _ALNUM + "+/") for n in range(3))
_SSH2_LINES = "\n".join(_fill(f"ssh2-{n}", 70, _ALNUM + "+/") for n in range(3))
_DOCKERCONFIG = base64.b64encode(('{"auths":{"ghcr.io":{"auth":"' + _fill("dockercfg", 24) + '"}}}').encode()).decode()
_GCP_KEY = "-----BEGIN PRIVATE KEY-----\\n" + _fill("gcp-sa", 64, _ALNUM + "+/") + "\\n-----END PRIVATE KEY-----\\n"


def _s(id: str, value: str, line: str, variable: str, env: str = "{}") -> Secret:
    return Secret(id, value, line, variable, env)


# Shapes from vendors' documented token formats and from secret-scanning rule sets (gitleaks, GitHub secret
# scanning, detect-secrets), and passwords as command lines, connection strings and config files carry them.
SECRETS += [
    _s("mysql-p", "My" + _fill("mysql", 14), "mysql -u bench -p{} results < dump.sql", "MYSQL_PWD"),
    _s(
        "docker-login-p", "Dk" + _fill("docker", 18), "docker login -u ci -p {} registry.example.com", "DOCKER_PASSWORD"
    ),
    _s("sshpass-p", "Ss" + _fill("sshpass", 14), "sshpass -p {} ssh bench@node7 nvidia-smi", "SSHPASS"),
    _s("curl-u", "Cu" + _fill("curl", 14), "curl -u admin:{} https://ci.example.com/api/json", "CI_ADMIN_PASSWORD"),
    _s(
        "openssl-pass",
        "Os" + _fill("openssl", 14),
        "openssl enc -d -aes-256-cbc -pass pass:{} -in w.enc",
        "OPENSSL_PASSPHRASE",
    ),
    _s("pgpassword", "Pg" + _fill("pgpassword", 14), "PGPASSWORD={} psql -h db -U bench results", "PGPASSWORD"),
    _s(
        "odbc-pwd",
        "Od" + _fill("odbc", 14),
        "Driver={ODBC Driver 18};Server=db;UID=sa;PWD={};Encrypt=yes",
        "ODBC_CONNECTION",
        "Driver={ODBC Driver 18};Server=db;UID=sa;PWD={};Encrypt=yes",
    ),
    _s("redis-pass", "Rp" + _fill("redispass", 14), "REDIS_PASS={} redis-server", "REDIS_PASS"),
    _s("yaml-pass", "Yp" + _fill("yamlpass", 14), "database:\n  user: bench\n  pass: {}\n", "DB_PASS"),
    _s("netrc-inline", "Nr" + _fill("netrc", 14), "machine api.example.com login bench password {}", "NETRC_PASSWORD"),
    _s(
        "netrc-lines",
        "Nl" + _fill("netrc2", 14),
        "machine pypi.example.com\n  login ci\n  password {}\n",
        "NETRC_SECRET",
    ),
    _s("sqlcmd-P", "Sq" + _fill("sqlcmd", 14), "sqlcmd -S db -U sa -P {} -Q 'select 1'", "SQLCMDPASSWORD"),
    _s(
        "ldapsearch-w",
        "Ld" + _fill("ldap", 14),
        "ldapsearch -x -D cn=admin,dc=example -w {} -b dc=example",
        "LDAP_PASSWORD",
    ),
    _s("redis-cli-a", "Rc" + _fill("rediscli", 14), "redis-cli -h cache -a {} ping", "REDISCLI_AUTH"),
    _s("smbclient-u", "Sm" + _fill("smb", 14), "smbclient //nas/results -U bench%{}", "SMB_PASSWORD"),
    _s("twine-p", "Tw" + _fill("twine", 14), "twine upload -u __token__ -p {} dist/*", "TWINE_UPLOAD_PASSWORD"),
    _s(
        "jdbc-password",
        "Jd" + _fill("jdbc", 14),
        "jdbc:postgresql://db:5432/bench?user=bench&password={}",
        "JDBC_URL",
        "jdbc:postgresql://db:5432/bench?user=bench&password={}",
    ),
    _s(
        "mongodb-srv",
        "Mg" + _fill("mongo", 14),
        "mongodb+srv://bench:{}@cluster0.ab1cd.mongodb.net/results",
        "MONGO_URI",
        "mongodb+srv://bench:{}@cluster0.ab1cd.mongodb.net/results",
    ),
    _s(
        "amqp-url",
        "Aq" + _fill("amqp", 14),
        "amqp://guest:{}@rabbit:5672/",
        "BROKER_URL",
        "amqp://guest:{}@rabbit:5672/",
    ),
    _s(
        "url-password-with-at",
        "Pa5@" + _fill("urlat", 14),
        "redis://default:{}@cache.internal:6379/0",
        "CACHE_URL",
        "redis://default:{}@cache.internal:6379/0",
    ),
    _s(
        "token-as-url-user",
        _fill("urluser", 40, _HEX),
        "git clone https://{}@github.com/acme/private.git",
        "GIT_CLONE_URL",
        "https://{}@github.com/acme/private.git",
    ),
    _s(
        "sentry-dsn",
        _fill("sentrydsn", 32, _HEX),
        "SENTRY_DSN=https://{}@o12345.ingest.sentry.io/67890",
        "SENTRY_DSN",
        "https://{}@o12345.ingest.sentry.io/67890",
    ),
    _s(
        "pip-extra-index",
        "Pi" + _fill("pipindex", 20),
        "pip install --extra-index-url https://__token__:{}@pypi.example.com/simple x",
        "PIP_EXTRA_INDEX_URL",
        "https://__token__:{}@pypi.example.com/simple",
    ),
    _s("deepseek-hex", "sk-" + _fill("deepseek", 32, _HEX), "deepseek client using {}", "DEEPSEEK_API_KEY"),
    _s("openai-admin", "sk-admin-" + _fill("oaiadmin", 58, _ALNUM + "_-"), "admin key {} rotated", "OPENAI_ADMIN_KEY"),
    _s("atlassian", "ATATT3" + _fill("atlassian", 186, _ALNUM + "_-"), "jira: {}", "JIRA_API_TOKEN"),
    _s("databricks", "dapi" + _fill("databricks", 32, _HEX), "databricks configure with {}", "DATABRICKS_TOKEN"),
    _s("digitalocean", "dop_v1_" + _fill("digitalocean", 64, _HEX), "doctl auth init -t {}", "DIGITALOCEAN_TOKEN"),
    _s("doppler", "dp.pt." + _fill("doppler", 43), "doppler token {}", "DOPPLER_TOKEN"),
    _s("dropbox", "sl." + _fill("dropbox", 136, _ALNUM + "_-"), "dropbox upload with {}", "DROPBOX_TOKEN"),
    _s("figma", "figd_" + _fill("figma", 40, _ALNUM + "_-"), "figma export {}", "FIGMA_TOKEN"),
    _s(
        "grafana-sa",
        "glsa_" + _fill("grafana", 32) + "_" + _fill("grafana2", 8, _HEX),
        "grafana {}",
        "GRAFANA_SA_TOKEN",
    ),
    _s("grafana-cloud", "glc_" + _fill("grafanacloud", 80, _ALNUM + "+/"), "push metrics with {}", "GRAFANA_CLOUD"),
    _s("vault", "hvs." + _fill("vault", 90, _ALNUM + "_-"), "vault login {}", "VAULT_TOKEN"),
    _s(
        "terraform-cloud",
        _fill("tfc", 14).lower() + ".atlasv1." + _fill("tfc2", 67, _ALNUM + "_-"),
        "terraform login token {}",
        "TF_TOKEN_app_terraform_io",
    ),
    _s("linear", "lin_api_" + _fill("linear", 40), "linear sync {}", "LINEAR_API_KEY"),
    _s("mailchimp", _fill("mailchimp", 32, _HEX) + "-us6", "mailchimp list sync key {}", "MAILCHIMP_KEY"),
    _s("mailgun", "key-" + _fill("mailgun", 32, _HEX), "mailgun send with {}", "MAILGUN_API_KEY"),
    _s(
        "newrelic",
        "NRAK-" + _fill("newrelic", 27, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
        "newrelic {}",
        "NEW_RELIC_API_KEY",
    ),
    _s("notion", "secret_" + _fill("notion", 43), "notion sync {}", "NOTION_TOKEN"),
    _s(
        "postman",
        "PMAK-" + _fill("postman", 24, _HEX) + "-" + _fill("postman2", 34, _HEX),
        "newman run --api-key {}",
        "POSTMAN_API_KEY",
    ),
    _s("pulumi", "pul-" + _fill("pulumi", 40, _HEX), "pulumi login with {}", "PULUMI_ACCESS_TOKEN"),
    _s("replicate", "r8_" + _fill("replicate", 37), "replicate run with {}", "REPLICATE_API_TOKEN"),
    _s(
        "sentry-token",
        "sntrys_" + _fill("sentry", 64, _ALNUM + "+/"),
        "sentry-cli releases new with {}",
        "SENTRY_AUTH_TOKEN",
    ),
    _s("shopify", "shpat_" + _fill("shopify", 32, _HEX), "shopify app deploy {}", "SHOPIFY_TOKEN"),
    _s("square", "EAAA" + _fill("square", 60, _ALNUM + "_-"), "square payments {}", "SQUARE_ACCESS_TOKEN"),
    _s("twilio", "SK" + _fill("twilio", 32, _HEX), "twilio api key {}", "TWILIO_API_KEY"),
    _s(
        "telegram-bot",
        "5839201746:AA" + _fill("telegram", 33, _ALNUM + "_-"),
        "notify via bot {}",
        "TELEGRAM_BOT_TOKEN",
    ),
    _s(
        "discord-bot",
        "M" + _fill("discord", 25) + "." + _fill("discord2", 6) + "." + _fill("discord3", 38),
        "discord bot {}",
        "DISCORD_TOKEN",
    ),
    _s(
        "discord-webhook",
        _fill("discordhook", 68, _ALNUM + "_-"),
        "POST https://discord.com/api/webhooks/1234567890/{}",
        "DISCORD_WEBHOOK_URL",
        "https://discord.com/api/webhooks/1234567890/{}",
    ),
    _s(
        "teams-webhook",
        _fill("teams", 36, _HEX) + "@" + _fill("teams2", 36, _HEX) + "/IncomingWebhook/" + _fill("teams3", 32, _HEX),
        "POST https://acme.webhook.office.com/webhookb2/{}",
        "TEAMS_WEBHOOK",
        "https://acme.webhook.office.com/webhookb2/{}",
    ),
    _s(
        "zapier-webhook",
        "1234567/" + _fill("zapier", 12).lower(),
        "POST https://hooks.zapier.com/hooks/catch/{}/",
        "ZAPIER_HOOK",
        "https://hooks.zapier.com/hooks/catch/{}/",
    ),
    _s(
        "mattermost-webhook",
        _fill("mattermost", 26, "abcdefghijklmnopqrstuvwxyz0123456789"),
        "POST https://chat.example.com/hooks/{}",
        "MATTERMOST_HOOK",
        "https://chat.example.com/hooks/{}",
    ),
    _s("groq", "gsk_" + _fill("groq", 52), "groq client {}", "GROQ_API_KEY"),
    _s("xai", "xai-" + _fill("xai", 80), "grok client {}", "XAI_API_KEY"),
    _s("perplexity", "pplx-" + _fill("pplx", 48), "perplexity client {}", "PPLX_API_KEY"),
    _s(
        "huggingface-org",
        "api_org_" + _fill("hforg", 34, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
        "org token {}",
        "HF_ORG_TOKEN",
    ),
    _s("age", "AGE-SECRET-KEY-1" + _fill("age", 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"), "sops key {}", "SOPS_AGE_KEY"),
    _s("heroku", "HRKU-" + _fill("heroku", 60, _ALNUM + "_-"), "heroku auth {}", "HEROKU_API_KEY"),
    _s("fly", "fo1_" + _fill("fly", 43, _ALNUM + "_-"), "flyctl deploy {}", "FLY_API_TOKEN"),
    _s("netlify", "nfp_" + _fill("netlify", 40), "netlify deploy {}", "NETLIFY_AUTH_TOKEN"),
    _s("rubygems", "rubygems_" + _fill("rubygems", 48, _HEX), "gem push with {}", "GEM_HOST_API_KEY"),
    _s(
        "nuget", "oy2" + _fill("nuget", 43, "abcdefghijklmnopqrstuvwxyz0123456789"), "nuget push -k {}", "NUGET_API_KEY"
    ),
    _s("crates", "cio" + _fill("crates", 32), "cargo login {}", "CARGO_REGISTRY_TOKEN"),
    _s("dockerhub", "dckr_pat_" + _fill("dockerhub", 27, _ALNUM + "_-"), "docker hub pat {}", "DOCKERHUB_TOKEN"),
    _s("bitbucket", "ATBB" + _fill("bitbucket", 32), "bitbucket app password {}", "BITBUCKET_APP_PASSWORD"),
    _s(
        "entra-client-secret",
        _fill("entra", 3) + "8Q~" + _fill("entra2", 34, _ALNUM + "_~.-"),
        "az login --service-principal -p {}",
        "AZURE_CLIENT_SECRET",
    ),
    _s("stripe-webhook", "whsec_" + _fill("whsec", 32), "stripe listen secret {}", "STRIPE_WEBHOOK_SECRET"),
    _s(
        "slack-app",
        "xapp-1-A0"
        + _fill("slackapp", 9, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        + "-4820193847561-"
        + _fill("slackapp2", 64, _HEX),
        "slack socket mode {}",
        "SLACK_APP_TOKEN",
    ),
    _s("wandb-login", _fill("wandb", 40, _HEX), "wandb login {}", "WANDB_API_KEY"),
    _s(
        "azure-devops-pat",
        _fill("adopat", 52, "abcdefghijklmnopqrstuvwxyz234567"),
        "AZURE_DEVOPS_EXT_PAT={}",
        "AZURE_DEVOPS_EXT_PAT",
    ),
    _s("npm-auth", _fill("npmauth", 32, _ALNUM + "+/") + "==", "//registry.npmjs.org/:_auth={}", "NPM_AUTH"),
    _s(
        "gcp-service-account",
        _GCP_KEY,
        '{"type": "service_account", "private_key": "{}", "client_email": "x"}',
        "GCP_SA_JSON",
        '{"type": "service_account", "private_key": "{}"}',
    ),
    _s(
        "k8s-dockerconfigjson",
        _DOCKERCONFIG,
        "data:\n  .dockerconfigjson: {}\ntype: kubernetes.io/dockerconfigjson",
        "K8S_PULL_SECRET",
    ),
    _s(
        "putty",
        _PUTTY_LINES,
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: bench\nPublic-Lines: 1\n"
        "AAAAC3NzaC1lZDI1NTE5AAAA\nPrivate-Lines: 3\n{}\nPrivate-MAC: " + _fill("puttymac", 64, _HEX),
        "PUTTY_KEY",
    ),
    _s(
        "ssh2",
        _SSH2_LINES,
        '---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: "bench"\n{}\n---- END SSH2 ENCRYPTED PRIVATE KEY ----',
        "SSH2_KEY",
    ),
    _s("github-token-header", "ght" + _fill("ghheader", 20), "Authorization: token {}", "GH_AUTH_HEADER", "token {}"),
    _s("x-api-key-header", "Xk" + _fill("xapikey", 20), "X-Api-Key: {}", "X_API_KEY"),
    _s(
        "proxy-authorization",
        "UHJveHk6" + _fill("proxyauth", 16, _ALNUM + "+/") + "==",
        "Proxy-Authorization: Basic {}",
        "PROXY_AUTHORIZATION",
    ),
    _s("export-quoted", "Ex" + _fill("exportq", 20), 'export OPENAI_API_KEY="{}"', "OPENAI_API_KEY_2"),
    _s("set-x-trace", "Sx" + _fill("setx", 20), "+ export HF_TOKEN={}", "HF_TOKEN_2"),
    _s(
        "git-extraheader",
        "R2l0" + _fill("extraheader", 24, _ALNUM + "+/"),
        'git -c http.extraheader="AUTHORIZATION: basic {}" fetch',
        "GIT_AUTH_HEADER",
    ),
    _s("kubectl-token", "Kc" + _fill("kubectl", 24), "kubectl config set-credentials ci --token={}", "KUBE_TOKEN"),
    _s(
        "json-password",
        "Js" + _fill("jsonpw", 16),
        '{"user": "bench", "password": "{}"}',
        "APP_CONFIG_JSON",
        '{"user": "bench", "password": "{}"}',
    ),
    _s("yaml-upper-password", "Yu" + _fill("yamlupper", 16), "PASSWORD: {}", "APP_PASSWORD"),
    _s("yaml-api-key", "Ya" + _fill("yamlapikey", 16), "api-key: {}", "SERVICE_API_KEY"),
    _s(
        "url-access-token",
        "Ua" + _fill("urlaccess", 24),
        "GET https://api.example.com/v1/runs?access_token={}&page=2",
        "RUNS_URL",
        "https://api.example.com/v1/runs?access_token={}",
    ),
    _s(
        "url-apikey",
        "Uk" + _fill("urlapikey", 24),
        "GET https://api.example.com/v2/q?apikey={}",
        "QUERY_URL",
        "https://api.example.com/v2/q?apikey={}",
    ),
    _s("snowflake-password", "Sf" + _fill("snowflake", 16), "snowsql -a acct -u bench --password {}", "SNOWSQL_PWD"),
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


_numbers = iter(range(1000))


def _a(id: str, text: str) -> LookAlike:
    return LookAlike(id, text, f"BENCH_EVIDENCE_{next(_numbers)}")


# Evidence that looks like credentials to a careless rule: model configs, tokenizer files, generation and
# serving metrics, attention code, dispatch keys, environment of training jobs, signals.
LOOK_ALIKES += [
    _a("eos-token-id", "eos_token_id=2"),
    _a("pad-token-id", "pad_token_id=0"),
    _a("bos-token-id-json", '"bos_token_id": 128000'),
    _a("eos-token-id-list", '"eos_token_id": [128001, 128008, 128009]'),
    _a("pad-token", '"pad_token": "<pad>"'),
    _a("bos-token", '"bos_token": "<|begin_of_text|>"'),
    _a("eos-token", '"eos_token": "</s>"'),
    _a("unk-token", '"unk_token": "<unk>"'),
    _a("mask-token", '"mask_token": "[MASK]"'),
    _a("cls-token", '"cls_token": "[CLS]"'),
    _a("sep-token", '"sep_token": "[SEP]"'),
    _a("eot-token", 'tokenizer.eos_token = "<|eot_id|>"'),
    _a("pad-token-none", "pad_token=None"),
    _a("time-to-first-token", "time_to_first_token=0.123"),
    _a("ms-per-token", "ms_per_token=12.7"),
    _a("inter-token-latency", "inter_token_latency_ms=8.1 output_tokens_per_s=921.4"),
    _a("num-key-value-heads", "num_key_value_heads=8"),
    _a("num-key-value-heads-json", '"num_key_value_heads": 8, "num_attention_heads": 32'),
    _a("setting-num-kv-heads", "--setting num_key_value_heads=8"),
    _a("key-states", "key_states = self.k_proj(hidden_states)"),
    _a("value-states", "value_states = self.v_proj(hidden_states).view(bsz, q_len, -1, self.head_dim)"),
    _a("past-key-values", "past_key_values=DynamicCache() use_cache=True"),
    _a("key-padding-mask", "key_padding_mask=None attn_mask=causal"),
    _a("sorted-key-len", "sorted(x, key=len)"),
    _a("max-key-get", "best = max(scores, key=scores.get)"),
    _a("sort-key-step", "sort_key=step"),
    _a("dispatch-key-set", "dispatch_key_set=DispatchKeySet(CPU, AutogradCPU)"),
    _a("dispatch-key-enum", "DispatchKey.PrivateUse1 DispatchKey.AutogradPrivateUse1"),
    _a("dispatch-keys-call", "torch._C._dispatch_keys(t)"),
    _a("hf-hub-implicit-token", "HF_HUB_DISABLE_IMPLICIT_TOKEN=1"),
    _a("hf-hub-transfer", "HF_HUB_ENABLE_HF_TRANSFER=1"),
    _a("sig-11", "sig=11"),
    _a("sigsegv", "Fatal Python error: Segmentation fault (signal 11, SIGSEGV), exitcode: -11"),
    _a("missing-keys", "_IncompatibleKeys(missing_keys=[], unexpected_keys=['lm_head.bias'])"),
    _a("key-error", "KeyError: 'model.layers.0.self_attn.q_proj.weight'"),
    _a("use-auth-token", "use_auth_token=False"),
    _a("token-none", "token=None revision=main"),
    _a("token-null-yaml", "token: null"),
    _a("api-key-null-json", '"api_key": null'),
    _a("auth-disabled", "auth: disabled"),
    _a("session-len", "session_len=4096 max_session_len=8192"),
    _a("token-path", "HF_TOKEN_PATH=/home/u/.cache/huggingface/token"),
    _a("private-key-path", "private_key_path=/etc/ssl/private/node.pem"),
    _a("key-bits", "key_bits=256 keystore_type=JKS"),
    _a("kv-cache-dtype", "kv_cache_dtype=fp8_e4m3 key_cache.shape=(2, 16, 128)"),
    _a("num-keys", "num_keys=4 top_k=50 top_p=0.9"),
    _a("token-ids", "token_ids=[1, 15043, 29892, 2787]"),
    _a("input-ids", "input_ids.shape=torch.Size([8, 2048]) attention_mask.sum()=16384"),
    _a("tokens-seen", "tokens_seen=1.2e9 total_tokens=2048"),
    _a("max-position", '"max_position_embeddings": 131072, "rope_theta": 500000.0'),
    _a("vocab-size", '"vocab_size": 128256, "tie_word_embeddings": false'),
    _a("torch-dtype", '"torch_dtype": "bfloat16", "head_dim": 128'),
    _a("model-max-length", '"model_max_length": 8192, "add_bos_token": true'),
    _a("tokenizer-class", '"tokenizer_class": "LlamaTokenizerFast", "legacy": false'),
    _a("clean-up-spaces", '"clean_up_tokenization_spaces": false'),
    _a("added-tokens", '"added_tokens_decoder": {"128000": {"content": "<|begin_of_text|>", "special": true}}'),
    _a("special-tokens-map", '"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]'),
    _a("generation-config", "GenerationConfig(max_new_tokens=128, do_sample=False, repetition_penalty=1.1)"),
    _a("trainer-log", "{'loss': 2.3141, 'grad_norm': 1.25, 'learning_rate': 2e-05, 'epoch': 0.5}"),
    _a("tokens-per-sec", "throughput: 15234.5 tokens/sec/gpu, mfu=41.2%"),
    _a("prefill-tokens", "prefill_tokens=1024 decode_tokens=256 batch_token_budget=8192"),
    _a("attn-implementation", 'attn_implementation="sdpa" _attn_implementation_autoset=True'),
    _a("flash-attn-key", "flash_attn_func(q, k, v, causal=True) k.shape=(8, 2048, 8, 128)"),
    _a("sdpa-key-arg", "F.scaled_dot_product_attention(query, key, value, is_causal=True)"),
    _a("dynamo-guard-key", "GUARDS: ___check_type_id(L['key'], 7629056)"),
    _a("dynamo-cache-limit", "torch._dynamo hit config.recompile_limit (8) function: 'forward'"),
    _a("inductor-autotune", "autotune_cache key: triton_mm_4 0.0102 ms 100.0%"),
    _a("neuron-cores", "NEURON_RT_VISIBLE_CORES=0-31 NEURON_CC_FLAGS=--model-type=transformer"),
    _a("xla-flags", "XLA_FLAGS=--xla_dump_to=/tmp/xla --xla_dump_hlo_as_text"),
    _a("pjrt-device", "PJRT_DEVICE=TPU TPU_NUM_DEVICES=4"),
    _a("nccl-env", "NCCL_IB_DISABLE=1 NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=eth0"),
    _a("torch-compile-debug", "TORCH_COMPILE_DEBUG=1 TORCH_LOGS=+dynamo,recompiles"),
    _a("deepspeed-zero", '"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 4'),
    _a("fsdp-config", "fsdp_config: {sharding_strategy: FULL_SHARD, state_dict_type: SHARDED_STATE_DICT}"),
    _a("lora-config", "LoraConfig(r=16, lora_alpha=32, target_modules=['q_proj', 'k_proj', 'v_proj'])"),
    _a("schema-signature", "signature=(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    _a("aten-schema", "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
    _a("authorization-prose", "Authorization header missing: the request was refused (HTTP 401)"),
    _a("password-prose", "password reset is required for new accounts"),
    _a("pass-test", "PASS: test_flash_attention_backward[bf16]"),
    _a("pytest-summary", "=== 12 passed, 3 skipped, 1 xfailed in 41.20s ==="),
    _a("git-hooks-path", "hint: The '.git/hooks/pre-commit' hook was ignored because it's not set as executable."),
    _a("pwd-path", "PWD=/srv/bench/run-17"),
    _a("secret-manager-name", "secret_name=bench/hf-readonly (fetched at start)"),
    _a("tokenizer-json-model", '"model": {"type": "BPE", "unk_token": null, "continuing_subword_prefix": null}'),
    _a("sentencepiece", "sp_model_kwargs={} spm_path=tokenizer.model"),
    _a("token-type-embeddings", "bert.embeddings.token_type_embeddings.weight torch.Size([2, 768])"),
    _a("key-value-store", "TCPStore(host_name=node0, port=29500, world_size=16, is_master=True)"),
    _a("master-addr", "MASTER_ADDR=10.0.0.12 MASTER_PORT=29500 RANK=0 WORLD_SIZE=16"),
    _a("cuda-visible", "CUDA_VISIBLE_DEVICES=0,1,2,3 CUDA_LAUNCH_BLOCKING=1"),
    _a("nvidia-smi", "| 0  NVIDIA H100 80GB HBM3  On | 00000000:18:00.0 Off | 0 |"),
    _a("memory-summary", "torch.cuda.OutOfMemoryError: Tried to allocate 2.00 GiB (GPU 0; 79.10 GiB total capacity)"),
    _a("wandb-run-url", "wandb: View run at https://wandb.ai/acme/bench/runs/3f9a2c7d"),
    _a("wandb-offline", "WANDB_MODE=offline WANDB_PROJECT=bench"),
    _a("mlflow-uri", "MLFLOW_TRACKING_URI=http://mlflow.internal:5000"),
    _a("hf-repo-id", "repo_id=meta-llama/Llama-3.1-8B-Instruct revision=0e9e39f249a16976918f6564b8830bc894c89659"),
    _a("safetensors-index", '"weight_map": {"model.embed_tokens.weight": "model-00001-of-00004.safetensors"}'),
    _a("checkpoint-path", "saving checkpoint to /ckpt/step_000500/model_state_rank0.pt"),
    _a("hex-seed", "seed=0x5eed1234 generator=torch.Generator(device='cpu')"),
    _a("profiler-key-averages", "prof.key_averages().table(sort_by='self_cuda_time_total', row_limit=10)"),
    _a("group-by-key", "df.groupby(key='step').mean()"),
    _a("lookup-key-dict", "cfg['key'] = 'value'"),
    _a("number-password-length", "min_password_length=12 password_rounds=4"),
    _a("auth-type-none", "auth_type=none"),
    _a("session-state", "session_state=ready session_count=3"),
]
