# acp-types: `make generate` and `make test` are all a newcomer needs.
# Every target bootstraps .venv from the pinned requirements.txt on first use.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: generate check validate test test-quick fuzz lint format diff dist bench conformance clean help

help:
	@echo "make generate  check the schemas and rewrite generated/ (only changed files)"
	@echo "make check     exit 1 and list stale files if generated/ is out of date"
	@echo "make validate  check the schemas only, reporting file and JSON pointer"
	@echo "make test      the whole suite, then the unit tests on the other ends of Python 3.10-3.13 found"
	@echo "make test-quick the quick loop: in-process tests only (no generator runs, environments, processes or mypy), under a minute"
	@echo "make fuzz      a long fuzzing run of the parser (FUZZ_CASES=100000, FUZZ_SEED=a fresh one), then the hostile peers at 10x load"
	@echo "make lint      ruff (checks and format) and mypy --strict over the generator, the runtime and the package"
	@echo "make format    ruff's formatter over the hand-written code"
	@echo "make diff      show what changes from v1 to the v2 draft"
	@echo "make dist      build the wheel and the sdist into dist/, and smoke-test each in a fresh venv"
	@echo "make bench     run the benchmarks and print figures against their baselines"
	@echo "make conformance  rewrite docs/conformance/: the conformance kit's reports on our examples and the SDKs' programs"

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $(STAMP)

generate: $(STAMP)
	$(PY) -m generator generate

check: $(STAMP)
	$(PY) -m generator check

validate: $(STAMP)
	$(PY) -m generator validate

# The whole suite on .venv's interpreter, then the quick selection (the tests not
# marked slow, see tests/conftest.py) on each end of the supported range (3.10,
# 3.13) that .venv is not, in .venv-interpreters/ (made on first use; an end not
# on the machine is skipped with a note, or fails under ACP_TYPES_REQUIRE_RANGE_ENDS=1).
# ACP_TYPES_QUICK=1 draws fewer property examples: the whole suite drew them all.
test: $(STAMP)
	$(PY) -m pytest -rs -n 2 --dist worksteal
	ACP_TYPES_QUICK=1 $(PY) tests/_venvs.py -q -n 2 -m "not slow"

# The contributor's loop: every test not marked slow, with fewer property examples (under a minute).
test-quick: $(STAMP)
	ACP_TYPES_QUICK=1 $(PY) -m pytest -q -n 2 -m "not slow"

# The short run of tests/test_fuzz.py is part of `make test`; this one mutates
# many more fixtures, with a new seed each time unless FUZZ_SEED is given.
FUZZ_CASES ?= 100000
FUZZ_SEED ?= $(shell date +%s)

fuzz: $(STAMP)
	@echo "fuzzing $(FUZZ_CASES) mutants, seed $(FUZZ_SEED) (repeat with FUZZ_SEED=$(FUZZ_SEED))"
	FUZZ_CASES=$(FUZZ_CASES) FUZZ_SEED=$(FUZZ_SEED) $(PY) -m pytest -q tests/test_fuzz.py
	@echo "hostile peers at ten times the audit's load (HOSTILE_LOAD=10): memory growth under 100 MiB"
	HOSTILE_LOAD=10 $(PY) -m pytest -q -s tests/test_hostile_peers.py

# Hand-written Python only: generated/ is black's output, tests/bad_schemas data.
FORMATTED := generator runtime tests benchmarks examples

lint: $(STAMP)
	$(PY) -m ruff check $(FORMATTED)
	$(PY) -m ruff format --check $(FORMATTED)
	$(PY) -m mypy generator runtime
	$(PY) -m mypy -p acp_types
	$(PY) -m mypy tests/typing/public_api.py tests/typing/star_import.py
	$(PY) tests/readme_snippets.py  # every python block of README.md: mypy --strict and pyright

format: $(STAMP)
	$(PY) -m ruff format $(FORMATTED)

diff: $(STAMP)
	$(PY) -m generator diff schema/v1 schema/v2

# `build` lives in a side environment of its own, not in .venv or requirements.txt.
DIST_VENV := .venv-dist
DIST_STAMP := $(DIST_VENV)/.installed

$(DIST_STAMP):
	$(PYTHON) -m venv $(DIST_VENV)
	$(DIST_VENV)/bin/python -m pip install --quiet --disable-pip-version-check build
	touch $(DIST_STAMP)

dist: $(STAMP) $(DIST_STAMP)
	rm -rf dist
	$(DIST_VENV)/bin/python -m build --outdir dist .
	$(PY) tests/dist_smoke.py dist

# The benchmarks compare against the official SDK (agent-client-protocol),
# which lives only in .venv-bench, never in .venv or in acp_types' dependencies.
BENCH_VENV := .venv-bench
BENCH_PY := $(BENCH_VENV)/bin/python
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): benchmarks/requirements.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install --quiet --disable-pip-version-check -r benchmarks/requirements.txt
	touch $(BENCH_STAMP)

bench: $(STAMP) $(BENCH_STAMP)
	$(BENCH_PY) -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall .
	PYTHONPATH=. $(BENCH_PY) -m benchmarks $(BENCH_ARGS)

# The conformance kit (python -m acp_types.conformance) on real programs: our reference programs and
# examples, the official SDKs' programs of tests/interop; SDK_EXAMPLES=<a checkout of the Python SDK's
# repository> adds its example agents and client.
conformance: $(STAMP)
	$(PY) tests/conformance/reports.py $(if $(SDK_EXAMPLES),--sdk-examples $(SDK_EXAMPLES))

clean:
	rm -rf $(VENV) .cache .venv-bench .venv-floor .venv-interpreters .venv-dist build dist generated/*.egg-info
