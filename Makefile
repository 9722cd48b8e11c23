# ccbench — `make help` lists the targets.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PYDEPS := maturin polars numpy matplotlib click rich pytest distributed
# What the tests need beyond PYDEPS: flent itself, for the flent-compatibility check (tests/flent_check.py);
# Hypothesis, for the command line's fuzz properties (tests/test_fuzz_cli.py; pinned: fixed examples in make test);
# Playwright, to open the report pages in Debian's Chromium (tests/test_web_report.py; no browser download).
TESTDEPS := flent==2.3.0 hypothesis==6.170.17 playwright==1.65.2

.PHONY: help setup web build run test test-rust test-py test-tools test-emu bench bench-ns3 bench-htsim kernel-prague fuzz mutants clean

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(VENV)/.deps: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(PYDEPS)
	touch $@

setup: $(VENV)/.deps  ## create .venv with the Python dependencies

# The report pages' charting library (uPlot, pinned in web/package-lock.json) from the npm registry,
# copied into the package (python/ccbench/_web/, not in git) so a saved run's page can carry it.
WEB_DIR := python/ccbench/_web
UPLOT   := web/node_modules/uplot
$(WEB_DIR)/.stamp: web/package.json web/package-lock.json
	npm ci --prefix web --no-audit --no-fund --loglevel=error
	mkdir -p $(WEB_DIR)
	cp $(UPLOT)/dist/uPlot.iife.min.js $(UPLOT)/dist/uPlot.min.css $(WEB_DIR)/
	cp $(UPLOT)/LICENSE $(WEB_DIR)/uPlot.LICENSE
	touch $@

web: $(WEB_DIR)/.stamp  ## the report pages' charting library (npm ci in web/, copied into python/ccbench/_web/)

# PGO=0 builds without the profile-guided step (see tools/build.py).
PGO ?= 1
build: setup web  ## build the Rust extension (release, profile-guided) into .venv, and the bench binaries
	PGO=$(PGO) VENV=$(abspath $(VENV)) $(PY) tools/build.py

run: build  ## run the default suite (SCReAM test record, Test 2) and write its report
	$(VENV)/bin/ccbench suite run scream-test-record -o out/

test: test-rust test-emu test-py  ## every Rust and Python test (test-emu needs root)

# Property tests draw their inputs from a fixed seed, so a test run is repeatable (and CI cannot
# fail at random); `make test-rust PROPTEST_RNG_SEED= PROPTEST_CASES=3000` explores new inputs.
PROPTEST_RNG_SEED ?= 20261129
PROPTEST_CASES ?= 256
test-rust:  ## Rust unit, property (256 cases each, fixed seed) and fidelity tests, and 2000 fixed fuzz inputs
	PROPTEST_RNG_SEED=$(PROPTEST_RNG_SEED) PROPTEST_CASES=$(PROPTEST_CASES) cargo test -p ccbench-core -p ccbench-fuzz

$(VENV)/.test-deps: $(VENV)/.deps Makefile
	$(PIP) install -q $(TESTDEPS)
	touch $@

test-tools:  ## tshark for the pcap tests, Chromium for the report pages' tests: installed from Debian's packages when root
	@command -v tshark >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing tshark (pcap tests)"; \
	    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark >/dev/null; \
	  else \
	    echo "the pcap tests need tshark: sudo apt-get install -y tshark (or your system's package)" >&2; exit 1; \
	  fi; }
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (report page tests)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "the report page tests need Chromium: sudo apt-get install -y chromium (or your system's package)" >&2; exit 1; \
	  fi; }

test-py: build $(VENV)/.test-deps test-tools  ## Python tests (CLI, API, errors, flent, pcap); none may skip
	cargo build -q --release -p ccbench-emu  # tests/test_emulate.py runs target/release/ccbench-emu
	$(PY) -m pytest -q

test-emu:  ## live emulation tests (root; real packets between namespaces; run serially, ~30 s)
	cargo test --release -p ccbench-emu -- --test-threads=1  # optimized: the forwarder's timing is under test

bench: build  ## canonical benchmark scenarios (the optimized build); see bench/RESULTS.md
	target/opt/release/bench

bench-htsim: build  ## htsim vs ccbench on B1's physics (HTSIM_SRC=<csg-htsim checkout>; ROUNDS=5, CACHEGRIND=1); see bench/README.md
	$(VENV)/bin/python bench/htsim_bench.py

KPRAGUE := target/kernel-prague
kernel-prague:  ## build and register bench/kernel_prague's BPF Prague (root; clang, bpftool, libbpf-dev); docs/scream-real.md
	mkdir -p $(KPRAGUE)
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > $(KPRAGUE)/vmlinux.h
	clang -O2 -g -target bpf -I$(KPRAGUE) -c bench/kernel_prague/prague.bpf.c -o $(KPRAGUE)/prague.bpf.o
	clang -O2 -g -target bpf -I/usr/include/$$(gcc -dumpmachine) -c bench/kernel_prague/ect1.bpf.c -o $(KPRAGUE)/ect1.bpf.o
	grep -qw bpf_prague /proc/sys/net/ipv4/tcp_available_congestion_control || bpftool struct_ops register $(KPRAGUE)/prague.bpf.o

bench-ns3:  ## ns-3 3.44 vs ccbench on S1-S4 (not in `make test`; REPS=3, QUICK=1 for simulated time / 10)
	python3 bench/ns3_bench.py

# FUZZ_SECONDS for each part; FUZZ_SEED picks the inputs (a new campaign each time by default).
FUZZ_SECONDS ?= 600
FUZZ_SEED ?= $(shell date +%s)
fuzz: build $(VENV)/.test-deps  ## fuzz for FUZZ_SECONDS each: scenarios through reader and simulator, the command line, then 3000 fresh inputs per property test
	cargo run --release -q -p ccbench-fuzz -- --seconds $(FUZZ_SECONDS) --seed $(FUZZ_SEED) --out target/fuzz
	$(PY) tools/fuzz_cli.py $(FUZZ_SECONDS)
	env -u PROPTEST_RNG_SEED PROPTEST_CASES=3000 cargo test --release -q -p ccbench-core --test properties --test guard_props --test ecn_feedback

# One file at a time keeps a run short:
#   make mutants MUTANTS="-f crates/ccbench-core/src/tcp/sender.rs -- --lib"
CORE_SRC := crates/ccbench-core/src
# netem's delay tables are generated data (7 500 sign mutants, one a value); tests check their moments.
MUTANTS ?= -f '$(CORE_SRC)/tcp/**' -f '$(CORE_SRC)/cc/**' -f '$(CORE_SRC)/qdisc/**' -f '$(CORE_SRC)/media/**' \
	-e '$(CORE_SRC)/qdisc/netem/tables.rs'
mutants:  ## mutation testing of tcp/, cc/, qdisc/, media/ (slow, not in make test); see bench/MUTANTS.md
	command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
	cargo mutants -p ccbench-core -j 1 $(MUTANTS)

clean:  ## remove build outputs and results
	rm -rf target out $(VENV) web/node_modules $(WEB_DIR)
