# The two commands: `make demo` (analyse a bundled sample, write the HTML report) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test snapshots fuzz bench bench-batch score clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,dask]'
	touch $(STAMP)

# analyze exits 1 when it finds a fault (the sample has one): that is the expected outcome here
demo: $(STAMP)
	@mkdir -p out
	@$(BIN)/hami-analyzer analyze sample_bundles/annotation-health-omitted/bundle || [ $$? -eq 1 ]
	@$(BIN)/hami-analyzer analyze sample_bundles/annotation-health-omitted/bundle --format html -o out/report.html || [ $$? -eq 1 ]
	@echo "Report written to $(CURDIR)/out/report.html"

test: $(STAMP)
	$(BIN)/ruff format --check analyzer tests tools
	$(BIN)/ruff check analyzer tests tools
	$(BIN)/hami-analyzer rules lint
	$(BIN)/python tools/make_samples.py --check
	$(BIN)/pytest

# rewrite each rule's snapshot (tests/snapshots/rules/) from its firing cases; read `git diff` after
snapshots: $(STAMP)
	$(BIN)/pytest tests/test_rule_snapshots.py --update-snapshots -p no:cacheprovider -q

# the fuzz test of `make test`, longer: make fuzz SEED=7 EXAMPLES=3000 (see README, Hostile input)
SEED ?= $(shell date +%s)
EXAMPLES ?= 2000
fuzz: $(STAMP)
	@echo "fuzz: seed $(SEED), $(EXAMPLES) examples (rerun with SEED=$(SEED) to reproduce)"
	HAMI_FUZZ_SEED=$(SEED) HAMI_FUZZ_EXAMPLES=$(EXAMPLES) $(BIN)/pytest tests/test_fuzz.py \
		-k contract -p no:cacheprovider -q --hypothesis-show-statistics

# accuracy on the real cases beside the checkout (see README, Accuracy on real cases)
score: $(STAMP)
	$(BIN)/hami-analyzer dev score ../shared/corpus

bench: $(STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python -m analyzer.dev.bench

bench-batch: $(STAMP)
	$(BIN)/python -m analyzer.dev.bench --batch 10000 --dask-workers 1,2,4

clean:
	rm -rf $(VENV) out build dist *.egg-info
