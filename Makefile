# The two set-up commands: `make demo` (the main job) and `make test` (the whole suite).
# Both make .venv on first use; PYTHON picks the interpreter that makes it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install demo test lint bench bench-quick
install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[torch,test]'
	touch $@

demo: install
	PATH="$(abspath $(BIN)):$$PATH" bash examples/demo.sh

lint: install
	$(BIN)/ruff check .

test: install lint
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python -m bench

bench-quick: install
	$(BIN)/python -m bench --quick
