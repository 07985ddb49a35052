# Two entry points for a fresh machine with Python 3.11 and make:
#   make demo   set up .venv and run the shipped example
#   make test   set up .venv and run the test suite (both CEL / JSON Schema engines)
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench schemas check clean

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "need python3.11 on PATH"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[fast,dev]"
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/toolrt demo

test: $(STAMP)
	$(BIN)/python -m pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc

lint: $(STAMP)
	$(BIN)/toolrt lint --strict examples/coding-agent
	$(BIN)/toolrt lint --strict examples/customer-service
	$(BIN)/toolrt lint --strict examples/warehouse
	$(BIN)/toolrt lint --strict policies
	$(BIN)/ruff format --check runtime tests
	$(BIN)/ruff check runtime tests
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[fast,dev,bench]"
	$(BIN)/python tests/benchmarks/bench_snapshot.py
	$(BIN)/python tests/benchmarks/bench_cel_time.py
	$(BIN)/python tests/benchmarks/bench_pipeline.py
	$(BIN)/python tests/benchmarks/bench_redaction.py
	$(BIN)/python tests/benchmarks/bench_key_pieces.py
	$(BIN)/python tests/benchmarks/bench_policy.py
	$(BIN)/python tests/benchmarks/bench_workspace.py
	$(BIN)/python tests/benchmarks/bench_workflow.py
	$(BIN)/python tests/benchmarks/bench_reload.py
	$(BIN)/python tests/benchmarks/bench_observability.py
	$(BIN)/python tests/benchmarks/bench_fleet.py
	$(BIN)/python tests/benchmarks/bench_bridges.py
	$(BIN)/python tests/benchmarks/bench_serve_memory.py

schemas: $(STAMP)
	$(BIN)/toolrt schema --out schemas
	$(BIN)/toolrt schema --reference --update README.md

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
