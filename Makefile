# The two commands: `make demo` (analyse a bundled sample, write the HTML report) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test snapshots fuzz bench bench-batch score clean

DEMO := sample_bundles/annotation-health-omitted/bundle

$(STAMP): pyproject.toml
	@echo "Creating .venv and installing the analyzer with its test extras (first run: about a minute)"
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install -qq --disable-pip-version-check --upgrade pip
	@$(BIN)/pip install -qq --disable-pip-version-check -e '.[test,dask]'
	@touch $(STAMP)

# The verdict and the registration links of a bundled sample, then its HTML report. analyze exits
# 1 when it finds a fault (the sample has one): that is the expected outcome here.
demo: $(STAMP)
	@mkdir -p out
	@$(BIN)/hami-analyzer analyze $(DEMO) | awk 'NF == 0 { n++ } n == 2 { exit } { print }'
	@$(BIN)/hami-analyzer analyze $(DEMO) --format html -o out/report.html || [ $$? -eq 1 ]
	@echo "The whole diagnosis: $(BIN)/hami-analyzer analyze $(DEMO)"
	@echo "Report written to $(CURDIR)/out/report.html"

test: $(STAMP)
	$(BIN)/ruff format --check analyzer tests tools
	$(BIN)/ruff check analyzer tests tools
	$(BIN)/hami-analyzer rules lint
	$(BIN)/python tools/make_samples.py --check
	$(BIN)/lint-imports
	$(BIN)/python tools/mypy_baseline.py
	$(BIN)/pytest -rs

# rewrite each rule's snapshot (tests/snapshots/rules/) from its firing cases; read `git diff` after
snapshots: $(STAMP)
	$(BIN)/pytest tests/test_rule_snapshots.py --update-snapshots -p no:cacheprovider -q

# the fuzz test of `make test`, longer: make fuzz SEED=7 EXAMPLES=3000 (docs/hardening.md)
SEED ?= $(shell date +%s)
EXAMPLES ?= 2000
fuzz: $(STAMP)
	@echo "fuzz: seed $(SEED), $(EXAMPLES) examples (rerun with SEED=$(SEED) to reproduce)"
	HAMI_FUZZ_SEED=$(SEED) HAMI_FUZZ_EXAMPLES=$(EXAMPLES) $(BIN)/pytest tests/test_fuzz.py \
		-k contract -p no:cacheprovider -q --hypothesis-show-statistics

# accuracy on the real cases beside the checkout (docs/testing.md, Accuracy on real cases)
score: $(STAMP)
	$(BIN)/hami-analyzer dev score ../shared/corpus

bench: $(STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python -m analyzer.dev.bench

bench-batch: $(STAMP)
	$(BIN)/python -m analyzer.dev.bench --only batch --batch 10000 --dask-workers 1,2,4

clean:
	rm -rf $(VENV) out build dist *.egg-info
