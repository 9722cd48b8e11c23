# ccbench — `make help` lists the targets.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PYDEPS := maturin polars numpy matplotlib click rich pytest distributed

.PHONY: help setup build run test test-rust test-py bench mutants clean

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
	$(PY) -m pytest -q

bench:  ## canonical benchmark scenarios (release); see bench/RESULTS.md
	cargo run --release -q -p ccbench-core --example bench

# One file at a time keeps a run short:
#   make mutants MUTANTS="-f crates/ccbench-core/src/tcp/sender.rs -- --lib"
CORE_SRC := crates/ccbench-core/src
MUTANTS ?= -f '$(CORE_SRC)/tcp/**' -f '$(CORE_SRC)/cc/**' -f '$(CORE_SRC)/qdisc/**'
mutants:  ## mutation testing of tcp/, cc/, qdisc/ (slow, not in make test); see bench/MUTANTS.md
	command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
	cargo mutants -p ccbench-core -j 1 $(MUTANTS)

clean:  ## remove build outputs and results
	rm -rf target out $(VENV)
