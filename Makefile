# The README's two commands: `make demo` (main job) and `make test` (the suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: install demo test lint docs bench mutation mutation-changed lock

# Reproducible: every package pinned with its hashes in requirements.lock (the embedded and
# dev extras included; `make lock` regenerates it), then ponder itself, editable, without deps.
$(BIN)/ponder: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	$(BIN)/pip check
	touch $(BIN)/ponder

# ponder is installed editable, so its own modules are compiled here: on a machine that sets
# PYTHONDONTWRITEBYTECODE (this one and CI do), every `ponder` command of a fresh checkout
# would otherwise compile what it imports again (a quick `ponder think`: 2.6-3.3 s of CPU
# instead of 1.7-2.4). Up-to-date files are skipped. The suite writes its own caches
# (tests/conftest.py).
install: $(BIN)/ponder
	$(BIN)/python -m compileall -q -j 0 activities workflows client worker benchmarks

demo: install
	$(BIN)/ponder think "Write a C++17 program that prints the length of the longest increasing subsequence of n integers read from stdin." --profile paper --provider sim --prompt-style paper-programming

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy activities workflows client worker benchmarks
	$(BIN)/lint-imports

# The suite mostly waits on dev servers and subprocesses, so six xdist workers on two cores
# take it from ~25 to ~9-12 minutes; each worker starts its own session dev server.
# --maxschedchunk 1: xdist's load scheduler otherwise hands each worker a first batch of a
# quarter of its share (~80 consecutive tests), and with the slow tests collected first two
# workers got all of them and ran ~840 s while the other four were done at ~470 s; handed out
# one at a time, the slow tests spread over all six (tests/conftest.py).
test: install lint
	$(BIN)/pytest -q -p no:cacheprovider -n 6 --maxschedchunk 1 --durations=10 -rfE --tb=native

# The documentation site (mkdocs.yml, docs/) into site/; the suite builds it too (tests/test_docs.py).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# Full sizes; tests/test_benchmarks.py runs each with --smoke (tiny sizes) in the suite.
bench: install
	$(BIN)/python -m benchmarks.ask_latency
	$(BIN)/python -m benchmarks.quick_latency
	$(BIN)/python -m benchmarks.cli_latency
	$(BIN)/python -m benchmarks.activity_overhead
	$(BIN)/python -m benchmarks.tournament_overhead
	$(BIN)/python -m benchmarks.bt_fit
	$(BIN)/python -m benchmarks.ranking_accuracy
	$(BIN)/python -m benchmarks.ranking_trust
	$(BIN)/python -m benchmarks.plan_validation
	$(BIN)/python -m benchmarks.plan_run
	$(BIN)/python -m benchmarks.plan_fanout
	$(BIN)/python -m benchmarks.plan_worktrees
	$(BIN)/python -m benchmarks.campaign_scale
	$(BIN)/python -m benchmarks.many_runs
	$(BIN)/python -m benchmarks.pipelining
	$(BIN)/python -m benchmarks.ledger

# Mutation testing of the pure cores (the "pure cores" import-linter contract in pyproject.toml;
# [tool.mutmut] there holds the fast unit tests mutmut runs against each mutant) through
# tests/mutation_run.py, which prints the score per module and fails under 90% for any module.
# mutmut lives in its own venv, layered over $(VENV) by a .pth file, so it never enters the
# project's environment. mutmut's own output goes to build/mutation.log.
# `make mutation`: every pure core, ~20,000 mutants (hours of CPU); the results are kept in
# build/mutation/, so a rerun checks only what changed. MUTATION_FLAGS="workflows/x.py ..." for
# some modules, MUTATION_FLAGS="--sample 1000" for an estimate from a fixed sample.
# `make mutation-changed` (CI runs it after the suite; run it before a push):
# the pure cores the newest commit touched, a fixed sample of about $(MUTATION_SAMPLE) of their
# mutants, so it stays within ~3 minutes.
MUTMUT := mutmut==3.8.1
MUT_VENV := .venv-mut
MUTATION_FLAGS ?=
MUTATION_SAMPLE ?= 40
MUTATION_RUN = $(BIN)/python -m tests.mutation_run --mutmut $(MUT_VENV)/bin/mutmut \
	--log build/mutation.log

$(MUT_VENV)/bin/mutmut: | install
	$(BIN)/python -m venv $(MUT_VENV)
	$(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > \
		"$$($(MUT_VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/ponder-venv.pth"
	$(MUT_VENV)/bin/pip install --quiet '$(MUTMUT)'

mutation: $(MUT_VENV)/bin/mutmut
	$(MUTATION_RUN) --max-children 2 $(MUTATION_FLAGS)

mutation-changed: $(MUT_VENV)/bin/mutmut
	$(MUTATION_RUN) --max-children 2 --changed HEAD~1 --sample $(MUTATION_SAMPLE)

# The install locks, compiled by uv (in its own venv) from pyproject.toml for Python 3.11 on
# every platform, with hashes: requirements.lock (.[embedded,dev], make install and CI) and
# requirements-worker.lock (the runtime alone, the same versions; the Dockerfile). Pins already
# in the lock are kept while pyproject.toml allows them; `make lock LOCK_FLAGS=--upgrade` takes
# the newest. tests/test_lockfile.py fails when the locks and pyproject.toml disagree.
UV := uv==0.13.9
LOCK_VENV := .venv-lock
LOCK_FLAGS ?=
UV_COMPILE = $(LOCK_VENV)/bin/uv pip compile pyproject.toml --quiet --universal \
	--python-version 3.11 --generate-hashes --custom-compile-command "make lock" $(LOCK_FLAGS)

$(LOCK_VENV)/bin/uv:
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet '$(UV)'

lock: $(LOCK_VENV)/bin/uv
	$(UV_COMPILE) --extra embedded --extra dev -o requirements.lock
	$(UV_COMPILE) --constraint requirements.lock -o requirements-worker.lock
	$(PYTHON) -m tests.lockfile stamp requirements.lock requirements-worker.lock
