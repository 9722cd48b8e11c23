"""Hypothesis over the command line's handling of files, suites and result
directories: whatever a user gives it — mutated scenarios, bytes that are
not TOML, suites with odd axes, bases and parts, output paths that climb
out of the working directory, damaged result directories — a command ends
with exit status 0 or 2 (1: a suite run that recorded failed runs), prints
no traceback, writes nothing outside its working directory and leaves no
temporary directory behind.

``make test`` runs a fixed, derandomized set of examples; ``make fuzz``
runs the same properties for a set time (``tools/fuzz_cli.py``), with
``CCBENCH_FUZZ_EXAMPLES`` examples per round and a random seed.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from click.testing import CliRunner, Result as CliResult
from hypothesis import HealthCheck, given, settings, strategies as st

from ccbench.cli import cli as ccbench_cli

ROOT = Path(__file__).resolve().parent.parent
SEEDS = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").glob("*.toml"))]
EXAMPLES = int(os.environ.get("CCBENCH_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize="CCBENCH_FUZZ_RANDOM" not in os.environ,
                suppress_health_check=list(HealthCheck), print_blob=True)

# Every run is kept small; the properties are about files, not the simulator.
SMALL = ["--set", "limits.events=300000", "--set", 'limits.memory="64mb"', "--set", 'limits.disk="64mb"']

VALUES = ["0", "-1", "4294967296", "1e308", "nan", "true", '""', "[]", "{}", '"0s"', '"1ns"', '"1e30s"', '"0bit"',
          '"100Gbit"', '"5potatoes"', '"../../x"', '"/tmp/x"', '"é"', '"\\u0000"', '{ kind = "netem", duplicate = 100 }']
LINES = ["[[links]]", "[[flows]]", "[metrics]", "[limits]", 'id = "../../x"', 'path = ["bottleneck"]', "count = 10000",
         'capture = ["bottleneck"]', 'delay = "0ms"', 'memory = "1mb"', 'disk = "1kb"', 'duration = "0.2s"',
         'qdisc = { kind = "fq_codel", flows = 0 }', "a = [[[[[[[[[[1]]]]]]]]]]", 'x = """']


@st.composite
def scenario_bytes(draw: st.DrawFn) -> bytes:
    """A shipped scenario made short and then mutated, or bytes that are not one."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(max_size=300))
    if kind == 1:
        return draw(st.text(max_size=300)).encode("utf-8", "surrogatepass")
    lines = re.sub(r'^duration = .*$', 'duration = "0.3s"', draw(st.sampled_from(SEEDS)), flags=re.M).splitlines()
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        op = draw(st.integers(0, 3))
        if op == 0 and lines and "=" in lines[i]:
            lines[i] = lines[i].split("=", 1)[0] + "= " + draw(st.sampled_from(VALUES))
        elif op == 1:
            lines.insert(i, draw(st.sampled_from(LINES)))
        elif op == 2 and lines:
            del lines[i]
        elif lines:
            j = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + draw(st.text(max_size=3)) + lines[i][j:]
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


# Output paths inside the working directory (one the user names outside it is theirs to name), and ones that cannot be.
OUTS = st.sampled_from(["out", "out/", "a/b/c", "/proc/x", "scenario.toml", "out/../in", ".", "x y", "deep/" * 20 + "end",
                        "out/.hidden", "/dev/null/x"])
SETS = st.lists(st.sampled_from(["duration=\"0.2s\"", "seed=2", "foo.bar=1", "links.0.rate=0", "=", "x",
                                 'links.0.id="../../p"', "flows.0.count=10001", 'metrics.capture=["bottleneck"]']),
                max_size=2)


@contextmanager
def sandbox() -> Iterator[Path]:
    """A working directory inside an otherwise empty one, to see writes that climb out."""
    if tally := os.environ.get("CCBENCH_FUZZ_TALLY"):  # tools/fuzz_cli.py counts the examples run
        with open(tally, "a") as f:
            f.write("1\n")
    with tempfile.TemporaryDirectory(prefix="ccbench-fuzz-") as outer:
        work = Path(outer) / "work"
        work.mkdir()
        old = os.getcwd()
        os.chdir(work)
        try:
            yield work
        finally:
            os.chdir(old)
        assert sorted(p.name for p in Path(outer).iterdir()) == ["work"], list(Path(outer).iterdir())
        leftovers = [p for p in work.rglob("*") if ".tmp-" in p.name or ".old-" in p.name]
        assert not leftovers, leftovers


def invoke(*args: str) -> CliResult:
    result = CliRunner().invoke(ccbench_cli, list(args), catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"ccbench {' '.join(args)} raised {result.exception!r}") from result.exception
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def expect(result: CliResult, *codes: int) -> None:
    assert result.exit_code in codes, (result.exit_code, result.stderr)
    if result.exit_code == 2:
        assert result.stderr.strip(), "an error without a message"


@FUZZ
@given(text=scenario_bytes(), out=OUTS, sets=SETS, pcap=st.sampled_from([[], ["--pcap", "bottleneck"], ["--pcap", "../x"]]))
def test_run_validate_and_show_any_scenario(text: bytes, out: str, sets: list[str], pcap: list[str]) -> None:
    with sandbox() as work:
        (work / "scenario.toml").write_bytes(text)
        overrides = [a for s in sets for a in ("--set", s)]
        expect(invoke("validate", "scenario.toml", *overrides), 0, 2)
        result = invoke("run", "scenario.toml", "-o", out, *overrides, *pcap, *SMALL)
        expect(result, 0, 2)
        if result.exit_code == 0:
            (summary,) = work.rglob("summary.json")  # the result written (the output wraps long paths)
            written = summary.parent
            expect(invoke("show", str(written)), 0)
            for damage in (b"", b"{", b"\xff", b'{"flows": {}}'):
                (written / "summary.json").write_bytes(damage)
                expect(invoke("show", str(written)), 2)


@st.composite
def suite_files(draw: st.DrawFn) -> dict[str, bytes]:
    """A suite file (s.toml) with what it names: a base, parts that may name each other, odd axes and names."""
    files: dict[str, bytes] = {"base.toml": draw(scenario_bytes())}
    name = draw(st.sampled_from(['"s"', '"../up"', '"a b"', '""', "1", '"ok-name"']))
    values = draw(st.sampled_from(["[1, 2]", "[]", '["10Mbit", "0bit"]', "[1, 1]", '["../x"]', "5", "[[1]]"]))
    key = draw(st.sampled_from(['"seed"', '"links.0.rate"', '"nowhere.x"', '""', "3"]))
    base = draw(st.sampled_from(['base = "base.toml"', 'base = "missing.toml"', 'base = "/dev/zero"', "base = 3",
                                 '[base]\nduration = "0.2s"\n[[base.links]]\nid = "l"\nrate = "1Mbit"\ndelay = "1ms"\n'
                                 '[[base.flows]]\nid = "f"\npath = ["l"]', ""]))
    axes = f'[[axes]]\nname = "a"\nvalues = {values}\nkey = {key}\n'
    if draw(st.booleans()):
        files["s.toml"] = f"name = {name}\n{base}\n{axes}".encode()
    else:
        parts = draw(st.sampled_from(['["p.toml"]', '["s.toml"]', '["p.toml", "q.toml"]', '["q.toml"]', "[]", '[{ suite = "p.toml", only = { a = [1] } }]']))
        files["s.toml"] = f"name = {name}\nparts = {parts}\n".encode()
        files["p.toml"] = f'name = "p"\nbase = "base.toml"\n{axes}'.encode()
        files["q.toml"] = draw(st.sampled_from([b'name = "q"\nparts = ["s.toml"]\n', b'name = "q"\nparts = ["q.toml"]\n', b"\xff\xfe"]))
    if draw(st.booleans()):
        files["s.toml"] += draw(st.sampled_from([b"\n[report]\nplots = [\"nope\"]\n", b"\nseeds = 2\n", b"\nx = = 1\n",
                                                 b'\n[[report.tables]]\ntitle = "t"\nrows = "a"\ncell = "goodput_mbps +"\n']))
    return files


@FUZZ
@given(files=suite_files(), out=OUTS, sets=SETS)
def test_suite_run_and_show_any_suite(files: dict[str, bytes], out: str, sets: list[str]) -> None:
    with sandbox() as work:
        for name, data in files.items():
            (work / name).write_bytes(data)
        overrides = [a for s in sets for a in ("--set", s)]
        expect(invoke("suite", "run", "s.toml", "-o", out, "--dry-run", *overrides), 0, 2)
        result = invoke("suite", "run", "s.toml", "-o", out, "-j", "1", *overrides, *SMALL)
        expect(result, 0, 1, 2)
        if result.exit_code == 1:  # runs that failed: each for a reason of its own, not ccbench's
            assert "simulation failed" not in result.stderr and ".py:" not in result.stderr, result.stderr
        if result.exit_code in (0, 1):
            report = min(work.rglob("report.html"), key=lambda p: len(p.parts))  # a suite of suites' own first
            expect(invoke("show", str(report.parent)), 0)
            manifest = report.parent / "suite.json"
            manifest.write_bytes(b'{"runs": 5')
            expect(invoke("show", str(report.parent)), 0, 2)
