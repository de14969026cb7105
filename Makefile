# The two set-up commands: `make demo` (the main job) and `make test` (the whole suite).
# Both make .venv on first use; PYTHON picks the interpreter that makes it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# TorchTPU (in the test extra) loads itself at every `import torch`: about 8 s more per import on a 2-core machine
# without a TPU. Off for all that make runs; its own tests turn it on in the processes that need it.
export TORCH_DEVICE_BACKEND_AUTOLOAD ?= 0

.PHONY: install browser demo test check lint bench bench-quick bench-peers test-backends
install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[torch,test]'
	touch $@

# The browser tests drive Debian's Chromium; install it once (as root, or through sudo).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; }

demo: install
	PATH="$(abspath $(BIN)):$$PATH" bash examples/demo.sh

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# One worker per CPU (at most 4): most tests wait on real subprocesses, torch and Chromium. A file's tests stay on
# one worker, so its module fixtures (one compiled run, one built site) are made once.
test: install browser lint
	$(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadfile

# The fast tier, for each change: no real torch.compile, device build, Chromium or rounds of kills (pyproject.toml
# names the markers). `make test` is the whole suite.
check: install lint
	$(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadfile -m "not slow and not browser and not backends"

bench: install browser
	$(BIN)/python -m bench

# The smoke run CI makes, so that no benchmark rots: every benchmark, then kb beside its peers (about 4 minutes).
bench-quick: install browser
	$(BIN)/python -m bench --quick
	$(BIN)/python -m bench.peers --quick

# kb beside MLflow, W&B, collect_env, MkDocs, grep and FTS5 (installs the peers into a venv of its own).
bench-peers: install browser
	$(BIN)/python -m bench.peers

# torch_xla needs a torch of its own (PyPI's torch 2.9.0, the CUDA build: about 7 GB), so a venv apart, made once.
XLA_VENV ?= .venv-xla
$(XLA_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(XLA_VENV)
	$(XLA_VENV)/bin/python -m pip install --quiet -e '.[xla]' 'pytest>=8' 'pytest-timeout>=2.3'
	touch $@

# The tests on real backend packages: TorchTPU and OpenVINO beside the pinned torch, torch_xla in its own venv.
test-backends: install $(XLA_VENV)/.installed
	$(BIN)/python -m pytest -p no:cacheprovider -m backends tests/test_backend_tpu.py tests/test_backend_openvino.py
	PJRT_DEVICE=CPU $(XLA_VENV)/bin/python -m pytest -p no:cacheprovider -m backends tests/test_backend_xla.py
