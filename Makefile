# ccbench — `make help` lists the targets.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PYDEPS := maturin polars numpy matplotlib click rich pytest distributed

.PHONY: help setup build run test test-rust test-py test-emu bench clean

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(VENV)/.deps: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(PYDEPS)
	touch $@

setup: $(VENV)/.deps  ## create .venv with the Python dependencies

build: setup  ## build the Rust extension (release) into .venv
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release -q

run: build  ## run the default suite (SCReAM test record, Test 2) and write its report
	$(VENV)/bin/ccbench suite run scream-test-record -o out

test: test-rust test-py  ## every Rust and Python test

test-rust:  ## Rust unit, property and fidelity tests
	cargo test -p ccbench-core

test-py: build  ## Python tests (CLI, API, errors)
	cargo build -q -p ccbench-emu  # tests/test_emulate.py runs target/debug/ccbench-emu
	$(PY) -m pytest -q

test-emu:  ## live emulation tests (root; real packets between namespaces; run serially, ~30 s)
	cargo test -p ccbench-emu -- --test-threads=1

bench:  ## canonical benchmark scenarios (release); see bench/RESULTS.md
	cargo run --release -q -p ccbench-core --example bench

clean:  ## remove build outputs and results
	rm -rf target out $(VENV)
