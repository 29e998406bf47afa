# The README's two commands: `make run` and `make test`. Each installs what it needs first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PACKAGES := libs/contracts libs/store libs/messaging libs/telemetry libs/supervision libs/embedding libs/extractors libs/plugins libs/embedded-servers libs/memory-plugins libs/vector-stores \
            services/indexer services/aggregator services/gateway cli
STAMP := $(VENV)/.installed
# torch's CPU build; pip takes it from this machine's local wheel store. Asked for by name first, so
# that sentence-transformers does not pull a multi-GB CUDA build.
TORCH := torch==2.13.0

.PHONY: install run test check lint typecheck docs-check unit bench clean

install: $(STAMP)

$(STAMP): Makefile requirements-dev.txt $(addsuffix /pyproject.toml,$(PACKAGES))
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/pip install -q $(addprefix -e ,$(PACKAGES)) -r requirements-dev.txt
	@if $(BIN)/pip install -q "$(TORCH)"; then \
		$(BIN)/pip install -q -e 'libs/embedding[local]'; \
	else \
		echo "!! $(TORCH) is not installable here: local embeddings are off, search is lexical-only"; \
	fi
	@touch $@

run: install
	$(BIN)/cortex run

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

docs-check: install  # docs/ as the code generates it (OpenAPI, AsyncAPI)
	$(BIN)/python scripts/export_api_docs.py --check

check: lint typecheck docs-check

test: check
	$(BIN)/pytest

unit: install
	$(BIN)/pytest tests/unit

bench: install
	$(BIN)/python -m bench.ingest
	$(BIN)/python -m bench.search

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
