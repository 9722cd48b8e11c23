"""The README's walk-through: every command in its code blocks works, in the order written.

The test copies README.md and examples/ into a fresh directory and runs each
shell command and Python block of the README there, one after the other,
as a new user would after a fresh clone — with short durations (``--set
duration=...``) so the whole walk takes seconds. ``make run`` is run as the
suite command its Makefile recipe holds. Left out, each for its reason:

- ``make test`` (this test is part of it), ``make help``/``bench``/``fuzz``/``clean``;
- ``pip install``/``maturin build`` (would reinstall the package under test);
- a Dask scheduler address (``--dask tcp://...``) becomes ``--dask local``.

The reports' suites (sce-l4s, l4s-testing) keep their timelines, which their
axes set, and run a few points of a part or two (``--only``, below) instead.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SHORT = 'duration="2s"'
NO_WARMUP = 'metrics.warmup="0s"'  # a warm-up must end before the shortened run does
NOT_RUN = ("make test", "make help", "make bench", "make clean", "pip ", "maturin ", "flent ")
# Per report suite: the points its README command runs here. --only skips the parts without
# one of these axes (and says so), so each names the axes of a part or two.
REPORT_SUITES = {
    "sce-l4s": ["rtt=20", "bw=5"],
    "sce-l4s-no-fallback": ["rtt=20", "bw=5"],
    "l4s-testing": ["rtt=0", "flows=prague", "ce=1"],
}


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, in order."""
    return [(m.group(1).strip(), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)]


def steps(text: str) -> list[tuple[str, str]]:
    """("sh", command) and ("python", code) steps of the README, in order."""
    out: list[tuple[str, str]] = []
    for lang, body in code_blocks(text):
        if lang == "python":
            out.append(("python", body))
        elif lang == "":
            for line in body.splitlines():
                command = line.split(" #", 1)[0].strip()
                if command.startswith(("make ", ".venv/bin/ccbench ", "ccbench ")) or command == "make":
                    out.append(("sh", command))
    return out


def make_run_command() -> str:
    """The command `make run` runs, from the Makefile (so the test follows the Makefile)."""
    recipe = (REPO / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    line = next(x.strip() for x in recipe.splitlines()[1:] if "ccbench" in x)
    return line.replace("$(VENV)/bin/ccbench", "ccbench")


def argv(command: str) -> list[str] | None:
    """The process to run for a README command, shortened; None for commands this test leaves out."""
    if command.startswith(NOT_RUN):
        return None
    if command == "make run":
        command = make_run_command()
    elif command.startswith("make"):
        return None
    words = shlex.split(command)
    if words[0].endswith("ccbench"):
        words = [sys.executable, "-m", "ccbench", *words[1:]]
    words = ["--dask" if w == "--dask" else ("local" if w.startswith("tcp://") else w) for w in words]
    if words[3:4] == ["explore"]:  # the README's own file is an example, not in the repository
        return None if "my-question.toml" in words else words + ["--budget", "6"]  # the search is tested elsewhere
    runs = words[3:4] == ["run"] or words[3:5] == ["suite", "run"]
    if runs and words[3:5] == ["suite", "run"] and words[5] in REPORT_SUITES:
        words += [w for only in REPORT_SUITES[words[5]] for w in ("--only", only)]
    elif runs and "--dry-run" not in words:
        words += ["--set", SHORT, "--set", NO_WARMUP]
    return words


def shortened(code: str) -> str:
    return re.sub(r'duration=\\"\d+s\\""', 'duration=\\\\"2s\\\\"", "metrics.warmup=\\\\"0s\\\\""', code)


def test_readme_lists_the_walk_through_commands() -> None:
    text = README.read_text()
    commands = [c for kind, c in steps(text) if kind == "sh"]
    assert commands[:2] == ["make run", "make test"]
    for needed in ("ccbench run examples/cubic-fq_codel.toml -o out/", "ccbench show out/scream-test-record",
                   "ccbench show out/cubic-fq_codel"):
        assert any(needed in c for c in commands), needed
    assert any(kind == "python" and "ccbench.sweep(" in c and "ccbench.load_suite(" in c for kind, c in steps(text))
    assert "capture.parquet" in text and "media_series.parquet" in text and "rtt_samples" in text


@pytest.mark.slow
def test_every_readme_command_works_in_order(tmp_path: Path) -> None:
    shutil.copy(README, tmp_path / "README.md")
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    ran = 0
    for kind, step in steps(README.read_text()):
        if kind == "python":
            code = shortened(step)
            done = subprocess.run([sys.executable, "-c", "import matplotlib; matplotlib.use('Agg')\n" + code],
                                  cwd=tmp_path, capture_output=True, text=True, timeout=600)
        else:
            words = argv(step)
            if words is None:
                continue
            done = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"README step failed: {step}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr, step
        ran += 1
    assert ran >= 15
    assert (tmp_path / "out" / "cubic-fq_codel" / "summary.json").is_file()
    assert (tmp_path / "out" / "scream-test-record" / "report.html").is_file()
    assert (tmp_path / "out" / "x" / "bottleneck.pcap").is_file()
    assert (tmp_path / "out" / "run1.flent.gz").is_file()
    assert (tmp_path / "results" / "bufferbloat-sweep" / "suite.json").is_file()


def test_readme_quotes_no_suite_figure_that_no_test_checks() -> None:
    """Figures a suite prints drift as the model changes: the README points at the command instead."""
    text = README.read_text()
    known = text.split("Known differences from published testbed results", 1)[1].split("BBR v1 against CUBIC", 1)[0]
    assert "ccbench suite run scream-test-record" in known and "docs/fidelity.md" in known
    prose = re.sub(r"```.*?```", "", known, flags=re.S)
    # Facts of the set-up may appear (link rates, 50 % pacing headroom, 1.13 ms per packet); results of runs may not.
    figures = re.findall(r"\d+(?:\.\d+)?\s*(?:Mbit/s|%)|RMS[^.]*\d|\d+/\d+/\d+", prose)
    assert not [f for f in figures if f not in ("50 %", "100 Mbit/s", "10 Mbit/s")], figures  # link rates: set-up


def test_readme_codel1q_20ms_is_what_the_suite_runs() -> None:
    """The README's codel1q(20ms) line is the sce-l4s S2 qdisc of that name (the report's batch file)."""
    import tomllib

    from ccbench.plan.suite_file import load_suite

    line = next(x for x in README.read_text().splitlines()
                if x.startswith('qdisc = { kind = "fq_codel", flows = 1'))
    readme = tomllib.loads(line)["qdisc"]
    s2 = next(p for p in load_suite("sce-l4s").parts if p.name == "s2-two-flow")
    [run] = s2.restricted({"qdisc": "codel1q_20ms", "arch": "l4s", "rtt": 20}).plan()
    child = next(x for x in tomllib.loads(run.scenario)["links"] if x["id"] == "bottleneck")["qdisc"]["child"]
    for key, value in readme.items():
        assert child[key] == value or (key in ("target", "interval") and _secs(child[key]) == _secs(value)), key


def _secs(text: str) -> float:
    m = re.fullmatch(r"([0-9.]+)(us|ms|s)", text)
    assert m, text
    return round(float(m[1]) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m[2]], 9)
