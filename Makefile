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
	PONDER_HOME=$${PONDER_HOME:-$$PWD/.ponder} $(BIN)/ponder think "Write a C++17 program that prints the length of the longest increasing subsequence of n integers read from stdin." --profile paper --provider sim --prompt-style paper-programming

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy activities workflows client worker benchmarks
	$(BIN)/lint-imports

# The suite mostly waits on dev servers and subprocesses, so six xdist workers on two cores
# take it from ~25 to ~9 minutes; each worker starts its own session dev server.
test: install lint
	$(BIN)/pytest -q -p no:cacheprovider -n 6 --durations=10 -rfE --tb=native

# Full sizes; tests/test_benchmarks.py runs each with --smoke (tiny sizes) in the suite.
bench: install
	$(BIN)/python -m benchmarks.ask_latency
	$(BIN)/python -m benchmarks.activity_overhead
	$(BIN)/python -m benchmarks.tournament_overhead
	$(BIN)/python -m benchmarks.bt_fit
	$(BIN)/python -m benchmarks.ranking_accuracy
	$(BIN)/python -m benchmarks.plan_validation
	$(BIN)/python -m benchmarks.plan_run
	$(BIN)/python -m benchmarks.plan_fanout
	$(BIN)/python -m benchmarks.plan_worktrees
	$(BIN)/python -m benchmarks.campaign_scale
