# The two commands a newcomer runs: `make run` (the daemon) and `make test`.
# Each creates .venv and installs what it needs on first use.
PYTHON ?= python3
VENV   := .venv
STAMP  := $(VENV)/.installed-dev
RUNSTAMP := $(VENV)/.installed-run

.PHONY: run test lint bench clean

# torch is pinned by the `local` extra to the CPU build these machines carry.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev,local]'
	touch $(STAMP) $(RUNSTAMP)

$(RUNSTAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[local]'
	touch $(RUNSTAMP)

run: $(RUNSTAMP)
	$(VENV)/bin/aether up

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: lint
	$(VENV)/bin/pytest

bench: $(STAMP)
	$(VENV)/bin/python bench/checkpoints.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
