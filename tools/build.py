"""`make build`: the Rust extension into the virtualenv and the bench binaries
(`bench`, `runone`), optimized with the profile of a training workload (PGO).

Profile-guided optimization lays out and inlines the simulator's hot paths
by measured branch and call counts: about 10 % fewer instructions and
8-13 % less wall time on the benchmark scenarios, which are not part of the
training; results are bit-identical (it changes code layout, not
arithmetic). Steps (the instrumented build and the profile live under
``target/pgo``):

1. build the extension (into the source tree's package) and the bench
   binaries instrumented (``gen/``);
2. train: run every example, every built-in suite's base scenario and a
   small dumbbell once per congestion control and per qdisc through the
   instrumented extension (writing each run's page) and ``runone`` (so no
   model's code is left cold), and the bench's floor skeleton; merge the counts
   (``llvm-profdata`` from rustup's ``llvm-tools``, installed here if
   missing);
3. build both again with the profile into ``target/opt``; the extension
   is installed into the virtualenv with ``maturin develop``.

Training is redone only when the Rust sources, the lock file or the
workload change (``target/pgo/fingerprint``). ``PGO=0``, or no
``llvm-profdata`` to be had, builds the same things without a profile.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PGO_DIR = ROOT / "target" / "pgo"
#: Where the optimized extension and bench binaries are built (`make bench` runs opt/release/bench).
OPT_DIR = ROOT / "target" / "opt"
TRAIN_BASE = ROOT / "tools" / "pgo-train.toml"
CRATES = ("crates/ccbench-core", "crates/ccbench-py", "crates/ccbench-bench")

#: One run of TRAIN_BASE per qdisc (CUBIC flows) ...
QDISCS = [
    '{ kind = "pfifo", limit = 100 }',
    '{ kind = "bfifo", limit = "150000b" }',
    '{ kind = "codel" }',
    '{ kind = "fq_codel" }',
    '{ kind = "pie" }',
    '{ kind = "fq_pie", ecn = true }',
    '{ kind = "red", limit = 400000, avpkt = 1000, adaptive = true, bandwidth = "50Mbit", ecn = true }',
    '{ kind = "dualpi2" }',
    '{ kind = "cake", bandwidth = "50Mbit" }',
    '{ kind = "twin_codel_af", bandwidth = "50Mbit", sce_thresh = 4 }',
    '{ kind = "lfq_cobalt", bandwidth = "50Mbit", sce_thresh = 8 }',
    '{ kind = "tbf", rate = "50Mbit", burst = "30000b", latency = "50ms" }',
    '{ kind = "htb", rate = "50Mbit", child = { kind = "fq_codel" } }',
    '{ kind = "netem", delay = "1ms", jitter = "1ms", rate = "50Mbit", child = { kind = "pfifo", limit = 200 } }',
]
#: ... and per congestion control, through a qdisc that gives it its signal.
CCS = [("reno", 3), ("bbr", 3), ("dctcp", 7), ("prague", 7), ("reno-sce", 9), ("cubic-sce", 9), ("dctcp-sce", 10)]


def training_runs() -> list[tuple[Path, list[str]]]:
    """(scenario file, overrides) of every training run."""
    files = sorted((ROOT / "examples").glob("*.toml")) + sorted((ROOT / "python/ccbench/suites/base").glob("*.toml"))
    runs = [(f, []) for f in files]
    runs += [(TRAIN_BASE, [f"links.bottleneck.qdisc={q}"]) for q in QDISCS]
    runs += [(TRAIN_BASE, [f"links.bottleneck.qdisc={QDISCS[q]}", f'flows.a.cc="{cc}"', f'flows.b.cc="{cc}"'])
             for cc, q in CCS]
    return runs


def main() -> None:
    venv = Path(os.environ.get("VENV", ROOT / ".venv")).resolve()
    wanted = os.environ.get("PGO", "1") != "0"
    tool = profdata_tool() if wanted else None
    if tool is None:
        if wanted:
            print("build: no llvm-profdata (rustup component llvm-tools): building without PGO", file=sys.stderr)
        install(venv, None)
        return
    profile = PGO_DIR / "ccbench.profdata"
    stamp = PGO_DIR / "fingerprint"
    mark = fingerprint()
    if not (profile.is_file() and stamp.is_file() and stamp.read_text() == mark):
        train(venv, tool, profile)
        stamp.write_text(mark)
    install(venv, f"-Cprofile-use={profile}")


def profdata_tool() -> Path | None:
    """rustup's llvm-profdata for the active toolchain (its LLVM must match rustc's), installing it if need be."""
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout.strip()
    host = next(line.split()[1] for line in rustc_version().splitlines() if line.startswith("host:"))
    tool = Path(sysroot) / "lib" / "rustlib" / host / "bin" / "llvm-profdata"
    if not tool.is_file() and shutil.which("rustup"):
        subprocess.run(["rustup", "component", "add", "llvm-tools"], capture_output=True, check=False)
    return tool if tool.is_file() else None


@functools.cache
def rustc_version() -> str:
    """``rustc -vV``: the toolchain's version, LLVM and host triple."""
    return subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout


def fingerprint() -> str:
    """Hash of what the profile depends on: Rust sources, manifests, the workload, this script, rustc."""
    h = hashlib.sha256(rustc_version().encode())
    files = [ROOT / "Cargo.toml", ROOT / "Cargo.lock", Path(__file__).resolve()]
    files += [f for c in CRATES for f in sorted((ROOT / c).rglob("*")) if f.is_file()]
    files += [f for f, _ in training_runs()]
    for f in dict.fromkeys(files):
        h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def cargo_env(target: Path, flag: str | None) -> dict[str, str]:
    """Cargo's environment: the target directory and, after any RUSTFLAGS of the caller's, ``flag``
    (passed encoded, so a checkout path with spaces stays one argument)."""
    env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
    if flag is not None:
        env.pop("RUSTFLAGS", None)
        env["CARGO_ENCODED_RUSTFLAGS"] = "\x1f".join([*os.environ.get("RUSTFLAGS", "").split(), flag])
    return env


def train(venv: Path, tool: Path, profile: Path) -> None:
    """Build instrumented with the very commands of `install` (the profile matches a function only in
    a build of the same crate graph), run the workload through the extension and the bench binaries,
    merge the counts."""
    raw = PGO_DIR / "raw"
    print("build: instrumented build and training run for PGO (once per source change)", file=sys.stderr)
    gen = PGO_DIR / "gen"
    install(venv, f"-Cprofile-generate={raw}", gen, skip_install=True)
    shutil.rmtree(raw, ignore_errors=True)  # build scripts ran instrumented too: only the training counts
    runs = training_runs()
    # Each run's page too: its arrays are the core's work (ccbench_core::metrics::chart).
    script = ("import sys, json, tempfile, ccbench\n"
              "from ccbench.simulate.page import page_html\n"
              "for path, overrides in json.loads(sys.argv[1]):\n"
              "    with tempfile.TemporaryDirectory() as spill:\n"
              "        page_html(ccbench.run(path, set=overrides, spill_dir=spill))\n")
    with tempfile.TemporaryDirectory() as tmp:  # the source tree's package, with the instrumented module in it
        subprocess.run([str(venv / "bin" / "python"), "-c", script, json.dumps([(str(f), o) for f, o in runs])],
                       cwd=tmp, check=True, env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    for f, overrides in runs:
        subprocess.run([str(gen / "release" / "runone"), str(f), *overrides], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run([str(gen / "release" / "bench"), "floor"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([str(tool), "merge", "-o", str(profile), *map(str, sorted(raw.glob("*.profraw")))], check=True)


def install(venv: Path, flag: str | None, target: Path = OPT_DIR, skip_install: bool = False) -> None:
    """The extension into the virtualenv (with ``skip_install`` only into the source tree's package),
    then the bench binaries; ``flag``: the PGO step's rustc flag."""
    env = cargo_env(target, flag)
    skip = ["--skip-install"] if skip_install else []
    subprocess.run([str(venv / "bin" / "maturin"), "develop", "--release", "-q", *skip], cwd=ROOT,
                   env={"PIP_QUIET": "1", **env, "VIRTUAL_ENV": str(venv)}, check=True)  # pip: errors only
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "ccbench-bench"], cwd=ROOT, env=env, check=True)
    if not skip_install:
        # The package is installed editable, which compiles no bytecode: where nothing writes it at
        # import either (PYTHONDONTWRITEBYTECODE), every process would compile ~30 modules (60 ms).
        subprocess.run([str(venv / "bin" / "python"), "-m", "compileall", "-q", str(ROOT / "python" / "ccbench")],
                       check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
