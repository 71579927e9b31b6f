# acp-types: `make generate` and `make test` are all a newcomer needs.
# Every target bootstraps .venv from the pinned requirements.txt on first use.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: generate check validate test fuzz lint diff bench conformance clean help

help:
	@echo "make generate  check the schemas and rewrite generated/ (only changed files)"
	@echo "make check     exit 1 and list stale files if generated/ is out of date"
	@echo "make validate  check the schemas only, reporting file and JSON pointer"
	@echo "make test      run the whole test suite (sets everything up itself)"
	@echo "make fuzz      a long fuzzing run of the parser (FUZZ_CASES=100000, FUZZ_SEED=a fresh one)"
	@echo "make lint      ruff and mypy --strict over the generator, the runtime and the package"
	@echo "make diff      show what changes from v1 to the v2 draft"
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

test: $(STAMP)
	$(PY) -m pytest -rs -n 2 --dist loadfile

# The short run of tests/test_fuzz.py is part of `make test`; this one mutates
# many more fixtures, with a new seed each time unless FUZZ_SEED is given.
FUZZ_CASES ?= 100000
FUZZ_SEED ?= $(shell date +%s)

fuzz: $(STAMP)
	@echo "fuzzing $(FUZZ_CASES) mutants, seed $(FUZZ_SEED) (repeat with FUZZ_SEED=$(FUZZ_SEED))"
	FUZZ_CASES=$(FUZZ_CASES) FUZZ_SEED=$(FUZZ_SEED) $(PY) -m pytest -q tests/test_fuzz.py

lint: $(STAMP)
	$(PY) -m ruff check generator runtime tests benchmarks examples
	$(PY) -m mypy generator runtime
	$(PY) -m mypy -p acp_types
	$(PY) -m mypy tests/typing/public_api.py tests/typing/star_import.py

diff: $(STAMP)
	$(PY) -m generator diff schema/v1 schema/v2

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
	rm -rf $(VENV) .venv-bench .venv-floor build generated/*.egg-info
