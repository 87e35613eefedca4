# The two commands a newcomer runs: `make run` (the daemon) and `make test`.
# Each creates .venv and installs what it needs on first use.
PYTHON ?= python3
VENV   := .venv
STAMP  := $(VENV)/.installed-dev
RUNSTAMP := $(VENV)/.installed-run

.PHONY: run test lint docs bench clean compose-tool browser-tool module-tool

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

# The documentation site: guides from docs/, reference pages generated from the code
# (docs/hooks/reference.py). --strict: a broken link or anchor fails the build.
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --quiet

# The compose file is validated with Debian's docker-compose 1.29 (no engine needed).
compose-tool:
	@command -v docker-compose >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null; \
	  else echo "docker-compose 1.29 is needed: sudo apt-get install docker-compose" >&2; exit 1; fi; }

# The console's browser tests drive Debian's Chromium through its ChromeDriver (with a
# colour emoji font: the agent's default emoji is drawn, not a missing-glyph box).
browser-tool:
	@command -v chromedriver >/dev/null 2>&1 && command -v chromium >/dev/null 2>&1 && dpkg -s fonts-noto-color-emoji >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-noto-color-emoji >/dev/null; \
	  else echo "chromium, its driver and an emoji font are needed: sudo apt-get install chromium chromium-driver fonts-noto-color-emoji" >&2; exit 1; fi; }

# The journal chain's Redis module (aether/server/aether_chain.c) is built at the embedded
# server's first start with a C compiler and OpenSSL's headers; without them the chain
# runs in Lua, which the tests compare it with.
module-tool:
	@command -v cc >/dev/null 2>&1 && [ -f /usr/include/openssl/sha.h ] || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libssl-dev >/dev/null; \
	  else echo "a C compiler and OpenSSL's headers are needed: sudo apt-get install gcc libssl-dev" >&2; exit 1; fi; }

# Bytecode first: the many CLI processes a run starts then skip compiling aether.
test: lint docs compose-tool browser-tool module-tool
	$(VENV)/bin/python -m compileall -q aether tests >/dev/null
	$(VENV)/bin/pytest

# Each prints one JSON object: checkpoints, then retrieval on both benchmarks' dev splits.
bench: $(STAMP)
	$(VENV)/bin/python bench/checkpoints.py
	$(VENV)/bin/python bench/locomo.py
	$(VENV)/bin/python bench/context.py
	$(VENV)/bin/python bench/beam.py
	cd bench && ../$(VENV)/bin/python console.py
	cd bench && ../$(VENV)/bin/python erase.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis site
