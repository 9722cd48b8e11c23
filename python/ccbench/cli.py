"""The ``ccbench`` command: run a scenario, show a result, validate a scenario.

User errors (a wrong scenario, a missing or unreadable file, a malformed
``--set``) print a message on stderr, never a traceback, and exit 2.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

import ccbench
from ccbench.core.errors import CcbenchError, ScenarioError, ScenarioWarning, SimulationError, Terminated
from ccbench.core.term import console as terminal
from ccbench.simulate.page import RUN_PAGE_MODULES
from ccbench.simulate.results import RUN_PLOTS, read_summary

if TYPE_CHECKING:  # compare imports matplotlib: the CLI loads it only for that command
    from rich.console import Console

    from ccbench.report.compare import Spread

#: What `ccbench run` needs once the simulation is over, imported on a thread during it:
#: the page's modules, and rich (50 ms or more to import) and the metrics for the summary.
RUN_AFTER = (*RUN_PAGE_MODULES, "ccbench.report.run_metrics", "rich.console", "rich.table")

__all__ = ["cli", "main"]

USER_ERROR = 2


class _Cli(click.Group):
    """Turns ccbench's expected failures into one-line messages and exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        # SIGTERM (timeout, batch schedulers, CI) stops a command as Ctrl-C does,
        # so that what it holds on disk is removed on the way out.
        previous = signal.signal(signal.SIGTERM, _terminate)
        _terminated_by.clear()
        try:
            with warnings.catch_warnings():
                # Scenario warnings ("100Mbps" is 800 Mbit/s) as one stderr line each.
                warnings.simplefilter("always", ScenarioWarning)
                warnings.showwarning = _show_warning
                return super().invoke(ctx)
        except ScenarioError as e:
            _fail(str(e), USER_ERROR)
        except SimulationError as e:
            _fail(f"simulation failed: {e}", 1)
        except CcbenchError as e:
            _fail(str(e), USER_ERROR)
        except OSError as e:
            _fail(_os_message(e), USER_ERROR)
        except Terminated as e:
            _fail("terminated", e.exit_code)
        finally:
            signal.signal(signal.SIGTERM, previous)


#: The signal that terminated this command, once one has.
_terminated_by: list[int] = []


def _terminate(signum: int, frame: Any) -> None:
    _terminated_by.append(signum)
    raise Terminated(signum)


def _stopped_code() -> int:
    """Exit status of a command stopped by Ctrl-C (130) or SIGTERM (143)."""
    return 128 + _terminated_by[-1] if _terminated_by else INTERRUPTED


_default_showwarning = warnings.showwarning


def _show_warning(message: Warning | str, category: type[Warning], *args: Any, **kw: Any) -> None:
    if issubclass(category, ScenarioWarning):
        click.echo(f"warning: {message}", err=True)
    else:
        _default_showwarning(message, category, *args, **kw)


class _RunProgress:
    """A progress bar on stderr for a run that takes more than two seconds."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.bar: Any = None

    def __call__(self, now_s: float, end_s: float) -> None:
        if self.bar is None:
            if time.monotonic() - self.t0 < 2.0:
                return
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("simulating {task.completed:.1f} of {task.total:.1f} s"), BarColumn(),
                                TimeRemainingColumn(), console=terminal(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("run", total=end_s)
        self.bar.update(self.task, completed=now_s)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _suite_warnings(loaded: Any) -> None:
    from ccbench.plan.suite import axis_warnings

    for line in axis_warnings(loaded):
        click.echo(f"warning: {line}", err=True)


def _fail(message: str, code: int) -> NoReturn:
    click.echo(message, err=True)
    raise click.exceptions.Exit(code)


def _os_message(e: OSError) -> str:
    reason = e.strerror or str(e)
    if e.errno == errno.ENOENT and reason == os.strerror(errno.ENOENT):
        reason = "no such file"
    reason = reason[:1].lower() + reason[1:]
    return f"{e.filename}: {reason}" if e.filename is not None else reason


_set_option = click.option(
    "--set", "overrides", multiple=True, metavar="KEY=VALUE",
    help="Override a scenario value, e.g. --set links.0.rate=50Mbit (repeatable).",
)
_scenario_argument = click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(ccbench.__version__, prog_name="ccbench")
def cli() -> None:
    """Deterministic packet-level bench for congestion control and AQM."""


@cli.command()
@_scenario_argument
@click.option("-o", "--out", type=click.Path(),  # str: a trailing "/" means a parent directory
              help="Result directory to write (replaced if it holds a result); ending in '/' it is a parent: "
                   "the result goes to OUT/SCENARIO-FILE-STEM.  [default: results/SCENARIO-FILE-STEM]")
@_set_option
@click.option("--seed", type=int, help="Random seed (same as --set seed=N).")
@click.option("--plot/--no-plot", default=False,
              help="Also write timeseries.png (matplotlib; adds about a second).  [default: --no-plot]")
@click.option("--pcap", "pcap_links", multiple=True, metavar="LINK",
              help="Capture LINK's packets into OUT/LINK.pcap (repeatable; sets metrics.capture; an id that is not a "
                   "plain name has its other characters written %XX in the file name).")
def run(scenario: Path, out: str | None, overrides: Sequence[str], seed: int | None, plot: bool,
        pcap_links: Sequence[str]) -> None:
    """Simulate SCENARIO and write its result directory.

    The PNG plot is written only with --plot: rendering it takes longer than
    most runs, and `ccbench show`, suites and reports read the Parquet tables.

    Exits 130 if interrupted (Ctrl-C), 143 if terminated (SIGTERM); nothing
    is written then.
    """
    from ccbench.core.files import check_free_space, file_name, work_dir
    from ccbench.core.preload import preload
    from ccbench.simulate.api import estimate, toml_value

    target = run_dir(out, scenario)
    links = list(dict.fromkeys(pcap_links))  # each once, in order
    capture = [f"metrics.capture={toml_value(links)}"] if links else []
    sets = [*overrides, *capture]
    # Checked before any directory is made: a refused scenario leaves nothing behind.
    check_free_space(target, estimate(scenario, seed=seed, set=sets, streamed=True)["disk"])

    def pcaps(into: Path) -> None:
        from ccbench.formats.pcap import write_pcap

        for link in links:  # a link id may be any string: its file stays inside the directory
            write_pcap(result, into / f"{file_name(link)}.pcap", link)

    bar = _RunProgress()
    preload(RUN_AFTER)  # while the core simulates, without the GIL
    try:
        with work_dir(target) as work:  # the core writes the tables there as the run goes
            try:
                result = ccbench.run(scenario, seed=seed, set=sets, progress=bar, spill_dir=work)
            finally:
                bar.close()
            target = result.save(target, plot=plot, extra=pcaps if links else None, work=work)
    except KeyboardInterrupt:
        _fail("terminated" if _terminated_by else "interrupted", _stopped_code())
    console = _console()
    print_summary(console, result.summary)
    console.print(f"wrote {target}")


INTERRUPTED = 130


def run_dir(out: str | None, scenario: Path) -> Path:
    """Where ``ccbench run`` writes: OUT, OUT/<stem> for OUT ending in "/", results/<stem> by default.

    Refuses, before anything runs, a target that exists and is not a result
    directory (no user data is replaced), with the command that would work.
    """
    from ccbench.simulate.results import _replaceable

    if out is None:
        target = Path("results") / scenario.stem
    elif out.endswith(("/", os.sep)):
        target = Path(out) / scenario.stem
    else:
        target = Path(out)
    if target.exists() and not _replaceable(target):
        hint = f"; to write a result inside it, end the name with '/': -o {out.rstrip('/' + os.sep)}/" if out else ""
        raise OSError(errno.EEXIST, f"exists and is not a ccbench result directory{hint}", str(target))
    return target


@cli.command()
@click.argument("result_dir", type=click.Path(file_okay=False, path_type=Path))
def show(result_dir: Path) -> None:
    """Print the summary tables of a result directory, or the tables of a suite directory."""
    from ccbench.sweep.runner import MANIFEST

    if (result_dir / MANIFEST).is_file() and not (result_dir / "summary.json").is_file():
        try:
            print_suite(_console(), result_dir)
        except (KeyError, TypeError, ValueError, AttributeError) as e:  # a hand-edited suite.json or summary
            from ccbench.core.errors import ResultError

            raise ResultError(f"{result_dir}: damaged, not a complete ccbench suite directory ({e!r})") from None
        return
    if result_dir.is_dir() and not (result_dir / "summary.json").is_file():
        inside = sorted(p.name for p in result_dir.iterdir()
                        if p.is_dir() and ((p / "summary.json").is_file() or (p / MANIFEST).is_file()))
        if inside:
            _fail(f"{result_dir}: not a result directory; it holds: {', '.join(inside)} "
                  f"(ccbench show {result_dir / inside[0]})", USER_ERROR)
    summary = read_summary(result_dir)
    try:
        print_summary(_console(), summary)
    except (TypeError, ValueError, AttributeError) as e:  # a value of the wrong kind in a hand-edited file
        from ccbench.core.errors import ResultError
        from ccbench.simulate.results import SUMMARY_FILE

        raise ResultError(f"{result_dir / SUMMARY_FILE}: damaged, not a ccbench summary ({e})") from None


@cli.command()
@_scenario_argument
@_set_option
@click.option("--resolved", is_flag=True, help="Print the resolved scenario (every default filled in).")
def validate(scenario: Path, overrides: Sequence[str], resolved: bool) -> None:
    """Check SCENARIO without running it."""
    text = ccbench.validate(scenario, set=list(overrides), streamed=True)  # as `ccbench run` runs it
    click.echo(text if resolved else f"ok: {scenario}", nl=not resolved or not text.endswith("\n"))


# --- emulate (live, ccbench-emu) ------------------------------------------------------------


@cli.command(context_settings={"ignore_unknown_options": True})
@_scenario_argument
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for summary.json and forwarder.json.  [default: results/SCENARIO-emu]")
@_set_option
@click.option("--server", "servers", multiple=True, metavar="CMD",
              help="Shell command to run in the server namespace first (repeatable).")
@click.option("--flow", "flow_cmds", multiple=True, metavar="ID=CMD",
              help="Shell command to run in flow ID's client host, on that flow's route (repeatable).")
@click.option("--no-rt", is_flag=True, help="Do not run the forwarder as SCHED_FIFO.")
@click.option("--pcap", is_flag=True, help="Write OUT/fwd.pcap and OUT/rev.pcap: every frame the emulator sends, "
              "as sent (nanosecond pcap).")
@click.option("--pcap-link", "pcap_links", multiple=True, metavar="LINK",
              help="Write OUT/LINK.pcap: every frame as LINK starts sending it, with the ECN and DSCP it "
              "carries then, stamped with its departure time (repeatable; an id that is not a plain name has "
              "its other characters written %XX in the file name).")
@click.argument("command", nargs=-1, required=False, type=click.UNPROCESSED)
def emulate(scenario: Path, out: Path | None, overrides: Sequence[str], servers: Sequence[str],
            flow_cmds: Sequence[str], no_rt: bool, pcap: bool, pcap_links: Sequence[str],
            command: Sequence[str]) -> None:
    """Run COMMAND live through SCENARIO's links (root; Linux).

    ccbench's own qdisc, rate and delay code carries real packets between
    network namespaces: `ccbench emulate s.toml --server "iperf3 -s" -- iperf3 -c $CCB_SERVER_IP`.
    Each [[flows]] entry gets a client host on its own route (its path,
    reverse and access delays); COMMAND runs in the first flow's, each
    --flow ID=CMD in flow ID's, the --server commands in the server's. All
    see CCB_CLIENT_IP (their host's), CCB_CLIENT_IPS and CCB_SERVER_IP.
    Without COMMAND or --flow, the scenario's [commands] section says what
    runs (server = [...], client = "...", flows = { ID = "..." }).
    """
    import subprocess

    from ccbench.formats.emulator import emu_binary, finish_run

    target = out or Path("results") / f"{scenario.stem}-emu"
    argv = [emu_binary(), "run", str(scenario), "-o", str(target)]
    for o in overrides:
        argv += ["--set", o]
    for srv in servers:
        argv += ["--server", srv]
    for fc in flow_cmds:
        argv += ["--flow", fc]
    if no_rt:
        argv.append("--no-rt")
    if pcap:
        argv.append("--pcap")
    for link in dict.fromkeys(pcap_links):  # each once, in order
        argv += ["--pcap-link", link]
    if command:
        argv += ["--", *command]
    proc = subprocess.Popen(argv)
    while True:
        try:
            code = proc.wait()
            break
        except KeyboardInterrupt:
            continue  # the emulator got the same SIGINT and is cleaning up
    if (target / "summary.json").is_file():
        finish_run(target, scenario, overrides)  # also after a failure: the records show what happened
    if code != 0:
        raise click.exceptions.Exit(code)


@cli.command()
@_scenario_argument
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for the emulated run.  [default: results/SCENARIO-compare]")
@_set_option
@click.option("--no-rt", is_flag=True, help="Do not run the forwarder as SCHED_FIFO.")
@click.option("--forwarder", is_flag=True,
              help='Simulate each path\'s last link with forwarder = "emulator": packets leave it as the emulator\'s '
                   "forwarder releases them (late, now and then in bursts), as on the emulated side.")
@click.option("--seeds", type=click.IntRange(min=1), default=None, metavar="N",
              help="Compare at seeds 1..N (each into OUT/seed=K) and print each metric's mean ± 95 % interval "
                   "over them, per side.")
def compare(scenario: Path, out: Path | None, overrides: Sequence[str], no_rt: bool, forwarder: bool,
            seeds: int | None) -> None:
    """Run SCENARIO's TCP flows simulated and with the kernel's own TCP (root).

    Each emulated flow is a bulk sender whose congestion control (the flow's
    `cc`) is set before connect, started at the flow's start and sending until
    its stop, all through the scenario's links. Prints, per flow, goodput over
    its active time, its share of the total, retransmits, sRTT and where
    HyStart ended slow start (the cwnd; the detector of each side, simulated /
    kernel, in the label: the kernel's from its TCPHystart* counters), and the
    bottleneck's queue delay, side by side, and flags differences above 10 %;
    OUT/compare.png draws each flow's throughput, cwnd and sRTT and the
    bottleneck's queue delay over time, simulated and kernel.
    Both sides cover the whole run: the scenario's warm-up is not applied.
    The emulated hosts' devices have TSO/GSO off, but Linux TCP builds GSO
    packets whatever the device offers (software GSO splits them at the
    device), so both sides send in bursts of about 1 ms at the pacing rate.
    Each flow entry's client host is its own namespace on the flow's route;
    flows with `ecn = "classic"` turn on `tcp_ecn` there. The emulated path
    draws its random elements (netem jitter, loss) from the scenario's seed,
    as the simulation does: a run per seed (--set seed=N) samples them, runs
    repeated at one seed do not; --seeds N runs seeds 1..N and gives each
    metric's mean and 95 % interval on each side.
    """
    from ccbench.report.compare import EmulationError, run_compare, run_compare_seeds

    if seeds is not None:
        try:
            many = run_compare_seeds(scenario, out, overrides, seeds, no_rt=no_rt, forwarder=forwarder)
        except EmulationError as e:
            _fail(str(e), 1)
        _compare_table(scenario, many.runs[0].flows, many.rows, f"seeds 1..{seeds}, mean ± 95 % interval")
        _emulator_timing([c.emulator["fwd"] for c in many.runs])
        _console().print(f"wrote {many.out} (compare.json; each seed's run in seed=K)")
        return
    try:
        c = run_compare(scenario, out, overrides, no_rt=no_rt, forwarder=forwarder)
    except EmulationError as e:
        _fail(str(e), 1)
    emu_sum, out = c.emulator, c.out
    _compare_table(scenario, c.flows, [(n, _single(a), _single(b)) for n, a, b in c.rows], None)
    _emulator_timing([emu_sum["fwd"]])
    _console().print(f"wrote {out}")


#: The emulator's forwarder runs 2-40 µs late on average on an idle 2-core machine; beyond this
#: the machine is too busy for the kernel side to stand for the path (README: at 150-640 µs a
#: CUBIC flow's CoDel queue grew with it, 3.4-5.5 ms against 2.6).
LATE_FORWARDER_US = 100.0


def _emulator_timing(fwds: Sequence[dict[str, Any]]) -> None:
    """How late the emulator's forwarder ran (each run's mean, the largest stall) and its socket
    drops; a warning on stderr when it ran too late to be a reference."""
    means = [fw["timer_late_mean_us"] for fw in fwds]
    shown = "/".join(f"{m:.0f}" for m in means)
    _console().print(f"emulator: timer lateness mean {shown} us, max {max(fw['timer_late_max_us'] for fw in fwds):.0f} us; "
                     f"socket drops {sum(fw['sock_rx_drops'] for fw in fwds)}")
    if max(means) > LATE_FORWARDER_US:
        click.echo(f"warning: the emulator's forwarder ran {max(means):.0f} us late on average (on an idle machine "
                   f"2-40 us): the machine was too busy for the kernel's side to be a reference; compare again "
                   "when it is quieter", err=True)


def _compare_table(scenario: Path, flows: Sequence[tuple[int, dict[str, Any]]], rows: Sequence[tuple[str, Any, Any]],
                   caption: str | None) -> None:
    """Print compare's rows: per metric the simulated and emulated value (mean ± interval over seeds,
    where there are several) and the emulated side's difference, flagged beyond 10 %."""
    from rich import box
    from rich.table import Table

    ccs = ", ".join(f"{f['id']} ({f['cc']})" for _, f in flows)
    table = Table(title=f"{scenario.stem}: {ccs} simulated vs the kernel's", caption=caption, box=box.SIMPLE)
    for col in ("metric", "simulated", "emulated", "diff"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for name, a, b in rows:
        diff = _MISSING
        if a is not None and b is not None and a[0]:
            d = (b[0] - a[0]) / a[0]
            diff = f"{d * 100:+.1f}%" + (" !" if abs(d) > 0.10 else "")
        exact = all(isinstance(v, int) for side in (a, b) if side is not None for v in side[2])
        table.add_row(name, _spread_text(a, exact), _spread_text(b, exact), diff)
    _console().print(table)


def _single(value: Any) -> Spread | None:
    """One run's value as a spread over one seed."""
    return None if value is None else (value, None, [value])


def _spread_text(side: Spread | None, exact: bool) -> str:
    """A value (or a mean ± its 95 % interval) as compare prints it."""
    if side is None:
        return _MISSING
    mean, half, _ = side
    fmt = _plain_int if exact and half is None else _num
    return fmt(mean) + ("" if half is None else f" ± {_num(half)}")


# --- export (flent) ------------------------------------------------------------------------


@cli.group()
def export() -> None:
    """Write a result directory in another tool's format."""


@export.command("flent")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("-o", "--out", type=click.Path(),  # str: a trailing "/" means a directory
              help="File to write, ending in .flent.gz (or a directory for it).  [default: RUN_DIR.flent.gz]")
@click.option("--test", "test_name", metavar="NAME",
              help="flent test to label the run as: tcp_1up, tcp_nup, tcp_ndown, tcp_Nup/tcp_Ndown, rrul, ping.  "
                   "[default: from the run's flows]")
@click.option("--step", type=click.FloatRange(min=0.0, min_open=True), default=0.2, show_default=True,
              help="Sampling step of the flent time axis, seconds.")
def export_flent(run_dir: Path, out: str | None, test_name: str | None, step: float) -> None:
    """Export RUN_DIR as a flent 2.3.0 data file (flent -i FILE -p totals)."""
    from ccbench.formats.flent import FlentExportError
    from ccbench.formats.flent import export as flent_export

    try:
        written = flent_export(run_dir, out, test=test_name, step=step)
    except FlentExportError as e:
        _fail(str(e), USER_ERROR)
    for note in written.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"wrote {written.path} (flent test {written.test})")


# --- suites and reports --------------------------------------------------------------------


@cli.group()
def suite() -> None:
    """Run suites: a base scenario swept over axes of overrides, with a report."""


@suite.command("list")
def suite_list() -> None:
    """List the built-in suites."""
    from ccbench.plan.suite_file import builtin_suites

    suites = builtin_suites()
    width = max((len(name) for name, _ in suites), default=0)
    for name, description in suites:
        click.echo(f"{name:<{width}}  {description}")


@suite.command("run")
@click.argument("suite_ref", metavar="SUITE")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Runs at a time.  [default: CPU cores]")
@click.option("-o", "--out", type=click.Path(file_okay=False),  # str: a trailing "/" means a parent directory
              help="The suite's result directory (runs/, suite.json, report.html), as `run -o` takes it; ending "
                   "in '/' it is a parent: the results go to OUT/SUITE-NAME/.  [default: results/SUITE-NAME]")
@click.option("--resume", is_flag=True, help="Keep the runs already finished in OUT; run only the others.")
@click.option("--dask", metavar="ADDRESS|local", help="Run on a Dask cluster: a scheduler address, or "
              "'local' for a LocalCluster of --jobs worker processes.")
@_set_option
@click.option("--dry-run", is_flag=True, help="List the runs and their overrides (with --resume: which are reused); "
              "run nothing.")
@click.option("--only", "only", multiple=True, metavar="AXIS=V[,V...]",
              help="Run only the points with these axis values (repeatable), e.g. --only rtt=20,80. In a suite "
                   "of suites, parts without such an axis are skipped (and listed).")
def suite_run(suite_ref: str, jobs: int | None, out: str | None, resume: bool, dask: str | None,
              overrides: Sequence[str], dry_run: bool, only: Sequence[str]) -> None:
    """Run SUITE (a suite file or a built-in name) and write its report.

    Exits 1 if any run failed, 130 if interrupted (Ctrl-C); finished runs are
    kept either way, and --resume continues from them.
    """
    from ccbench.core.workers import start_early

    if not (dry_run or dask):
        start_early(jobs)  # its imports overlap loading and planning the suite
    from ccbench.core.errors import CcbenchError
    from ccbench.plan.suite import SuiteSet
    from ccbench.plan.suite_file import load_suite
    from ccbench.sweep.runner import SweepInterrupted, resume_command, run_suite

    loaded = load_suite(suite_ref)
    if only:
        loaded = loaded.restricted(_only(only))
        for name, lacks in getattr(loaded, "skipped", ()):
            click.echo(f"--only: skipping part {name} (it has no axis {', '.join(lacks)})", err=True)
    target = suite_dir(out, loaded.name)
    parts = loaded.parts if isinstance(loaded, SuiteSet) else (loaded,)
    for part in parts:
        if part.base_text is not None:
            _suite_warnings(part.with_overrides(overrides))
    if dry_run:
        for part in parts:
            _dry_run(part.with_overrides(overrides), target / part.name if part is not loaded else target, resume)
        return
    again = resume_command(suite_ref, out if out is not None else "results/", jobs=jobs, dask=dask,
                           overrides=overrides, only=only)
    try:
        res = run_suite(loaded, target.parent, jobs=jobs, resume=resume, dask=dask, set=list(overrides),
                        into=target)
    except SweepInterrupted as e:
        r = e.result
        click.echo(f"interrupted: {r.ok} of {len(r.runs)} runs finished, kept in {r.dir}", err=True)
        click.echo(f"resume with: {again}", err=True)
        raise click.exceptions.Exit(_stopped_code()) from None
    except CcbenchError as e:
        _fail(str(e), USER_ERROR)
    done = f"{res.ok} ok" + (f" ({res.reused} from an earlier sweep)" if res.reused else "")
    click.echo(f"{len(res.runs)} runs: {done}, {res.failed} failed in {res.wall_s:.1f} s")
    for r in res.runs:
        if r.status == "failed":
            click.echo(f"failed: {r.key}: {(r.error or '').splitlines()[0] if r.error else ''}", err=True)
    click.echo(f"report: {res.report}")
    if res.failed:
        raise click.exceptions.Exit(1)


@cli.command("explore")
@click.argument("file", metavar="FILE")
@click.option("-o", "--out", type=click.Path(file_okay=False),
              help="The exploration's directory.  [default: results/NAME]")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Runs at a time.  [default: CPU cores]")
@click.option("--seeds", type=click.IntRange(min=1), help="Runs per point (seeds 1..N), instead of the file's.")
@click.option("--budget", type=click.IntRange(min=1), help="Stop after this many runs, instead of the file's.")
@click.option("--dask", metavar="ADDRESS|local", help="Run on a Dask cluster: a scheduler address, or "
              "'local' for a LocalCluster of --jobs worker processes (one cluster for every round).")
def explore_cmd(file: str, out: str | None, jobs: int | None, seeds: int | None, budget: int | None,
                dask: str | None) -> None:
    """Find where FILE's property stops holding over its axes (an [explore] file or a built-in name).

    Samples a coarse grid, then refines only where neighbouring points
    disagree; writes points.parquet/csv, cells.csv, boundary.html (and
    boundary.png for two axes). Running it again reuses every finished run.
    Exits 130 if interrupted.
    """
    from ccbench.core.errors import CcbenchError
    from ccbench.sweep.explore import ExploreInterrupted, explore, read_exploration, resolve_source

    try:
        source = resolve_source(file)
        name = read_exploration(source).name
        target = Path(out) if out is not None else Path("results") / name
        df = explore(source, target, jobs=jobs, seeds=seeds, budget=budget, progress=True, dask=dask)
    except ExploreInterrupted as e:
        click.echo(f"interrupted: finished runs kept in {e.out}; run the same command again to continue", err=True)
        raise click.exceptions.Exit(_stopped_code()) from None
    except CcbenchError as e:
        _fail(str(e), USER_ERROR)
    doc = json.loads((target / "explore.json").read_text(encoding="utf-8"))
    click.echo(f"{doc['runs']} runs, {doc['sampled_cells']} of {doc['grid_cells']} points sampled "
               f"({doc['fraction']:.0%}){' (budget spent)' if doc['budget_exhausted'] else ''}; "
               f"{int(df['holds'].sum() or 0)} runs hold")
    click.echo(f"boundary: {target / 'boundary.html'}")


def suite_dir(out: str | None, name: str) -> Path:
    """Where ``ccbench suite run`` writes, as ``run_dir`` for ``ccbench run``: OUT, OUT/<suite name>
    for OUT ending in "/", results/<suite name> by default.

    Refuses, before anything runs, an existing directory that holds something
    but no suite result (no user data is mixed with runs), with the command
    that would work.
    """
    from ccbench.sweep.runner import MANIFEST

    if out is None:
        return Path("results") / name
    if out.endswith(("/", os.sep)):
        return Path(out) / name
    target = Path(out)
    if target.is_dir() and not (target / MANIFEST).is_file() and any(target.iterdir()):
        hint = f"; to write the suite inside it, end the name with '/': -o {out.rstrip('/' + os.sep)}/"
        raise OSError(errno.EEXIST, f"exists and is not a ccbench suite directory{hint}", str(target))
    return target


def _only(items: Sequence[str]) -> dict[str, list[str]]:
    """``--only AXIS=V[,V...]`` options as axis -> values."""
    out: dict[str, list[str]] = {}
    for item in items:
        name, eq, values = item.partition("=")
        if not eq or not name.strip() or not values.strip():
            _fail(f"--only {item!r}: expected AXIS=VALUE[,VALUE...]", USER_ERROR)
        out.setdefault(name.strip(), []).extend(v.strip() for v in values.split(","))
    return out


def _dry_run(loaded: Any, where: Path, resume: bool) -> None:
    """Print the suite's size at once (on stderr), then one line per run as it is resolved.

    Lines are ``key<TAB>overrides``; with ``resume``, ``key<TAB>reused|to run<TAB>overrides``,
    where reused means a finished result with that key is in WHERE/runs (the suite's or the part's directory).
    """
    from ccbench.simulate.results import SUMMARY_FILE
    from ccbench.sweep.runner import RUNS_DIR

    sizes = " x ".join(f"{len(a.values)} {a.name}" for a in loaded.axes) or "no axes"
    click.echo(f"{loaded.name}: {loaded.size:,} runs ({sizes})", err=True)
    runs_dir = where / RUNS_DIR
    reused = 0
    for p in loaded.iter_plan():
        text = "  ".join(o.text for o in p.overrides)
        if resume:
            done = p.scenario is not None and (runs_dir / p.key / SUMMARY_FILE).is_file()
            reused += done
            click.echo(f"{p.key}\t{'reused' if done else 'to run'}\t{text}")
        else:
            click.echo(f"{p.key}\t{text}")
        if p.error:
            click.echo(f"  invalid: {p.error}")
    if resume:
        click.echo(f"--resume reuses {reused} of {loaded.size:,} runs from {runs_dir}", err=True)


@cli.command()
@click.argument("suite_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Plots drawn at a time.  [default: CPU cores]")
def report(suite_dir: Path, jobs: int | None) -> None:
    """Render SUITE_DIR's report (report.md, report.html) again from its stored results."""
    from ccbench.core.workers import cores
    from ccbench.report.suite import ConsoleProgress, render  # render starts workers only for PNGs the suite asks for

    try:
        with ConsoleProgress() as progress:
            path = render(suite_dir, progress=progress, jobs=jobs or cores())
    except KeyboardInterrupt:
        _fail("interrupted: the report was not changed", _stopped_code())
    click.echo(f"report: {path}")


@cli.command()
@click.argument("dirs", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--kind", "kinds", multiple=True, type=click.Choice(RUN_PLOTS),
              help="Plot to draw (repeatable).  [default: timeseries]")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Runs drawn at a time.  [default: CPU cores]")
def plot(dirs: Sequence[Path], kinds: Sequence[str], jobs: int | None) -> None:
    """Draw per-run plots into result directories from their stored tables.

    Each DIR is a result directory (it gets KIND.png) or a suite's (every
    finished run gets them, delivery_with_rtt with the suite's bounds, and
    the report is rendered again to link them).
    """
    from ccbench.core.workers import cores, start_early

    start_early(jobs, plots=True)
    from ccbench.report.run_plots import draw, kinds_of, plan
    from ccbench.report.suite import ConsoleProgress, render

    kinds = kinds_of(kinds)
    try:
        todo, suites = plan(dirs, kinds)
    except FileNotFoundError as e:
        _fail(f"{e.filename}: {e.strerror}", USER_ERROR)
    try:
        with ConsoleProgress(label="plot") as progress:
            progress.start(len(todo))
            draw(todo, jobs or cores(), on_done=lambda run: progress.step(run.name))
        for suite_dir in suites:
            click.echo(f"report: {render(suite_dir, jobs=jobs or cores())}")
    except KeyboardInterrupt:
        _fail("interrupted: the plots drawn so far are kept", _stopped_code())
    click.echo(f"drew {', '.join(kinds)} for {len(todo)} run{'s' if len(todo) != 1 else ''}")


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point."""
    # NumPy's OpenBLAS starts a thread per core when it loads, spinning ~0.1 s of CPU that the
    # engine, the Parquet writer and the sweep's workers need; no command makes a BLAS call worth
    # threads. Inherited by the worker processes; a value the user set is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    cli.main(args=list(argv) if argv is not None else None, prog_name="ccbench")


# --- summary tables -----------------------------------------------------------------------

Cell = Callable[[dict[str, Any]], str]


def _console() -> Console:
    # Created per command so it writes to the sys.stdout in force (tests swap it). Ids, names and paths
    # are printed as written: no [markup] or highlighting (and, as on every console, no :emoji: codes).
    return terminal(markup=False, highlight=False)


def print_summary(console: Console, summary: dict[str, Any]) -> None:
    """Render summary.json as rich tables (values as the core computed them)."""
    duration = summary.get("duration_s")
    head = f"scenario {summary.get('scenario')}  seed {summary.get('seed')}  duration {_num(duration)} s"
    if summary.get("warmup_s"):
        head += f"  (first {_num(summary['warmup_s'])} s are warm-up, left out of the statistics)"
    console.print(head)
    flows = summary.get("flows", [])
    # Emulated runs: frame bytes out of the flow's last link (the forwarder sees no goodput).
    rate = ("throughput", _float("throughput_mbps")) if any("throughput_mbps" in f for f in flows) else \
        ("goodput", _float("goodput_mbps"))
    _table(console, f"flows ({rate[0]} in Mbit/s, RTT in ms)", flows, [
        ("flow", _str("id")), ("kind", _str("kind")), ("cc", _str("cc")), rate,
        ("RTT\nmean", _float("rtt_ms", "mean")), ("RTT\np50", _float("rtt_ms", "p50")),
        ("RTT\np95", _float("rtt_ms", "p95")), ("RTT\np99", _float("rtt_ms", "p99")),
        ("retrans", _int("retransmits")), ("CE\nmarks", _int("ce_marks")),
    ])
    media = [f for f in flows if isinstance(f.get("media"), dict)]
    _table(console, "media flows (rates in Mbit/s, delays in ms)", media, [
        ("flow", _str("id")), ("target", _float("media", "target_mbps")), ("sent", _float("media", "tx_mbps")),
        ("RTP queue\nmean", _float("media", "rtp_queue_delay_ms", "mean")),
        ("RTP queue\np99", _float("media", "rtp_queue_delay_ms", "p99")),
        ("net queue\nmean", _float("media", "qdelay_ms", "mean")), ("net queue\np99", _float("media", "qdelay_ms", "p99")),
        ("packets", _int("media", "packets_sent")), ("lost", _int("media", "packets_lost")),
        ("discards", _int("media", "rtp_discards")), ("frames", _int("media", "frames")),
    ])
    intervals = [{"flow": f.get("id"), **i} for f in flows for i in (f.get("intervals") or []) if isinstance(i, dict)]
    _table(console, "named intervals (goodput in Mbit/s)", intervals, [
        ("flow", _str("flow")), ("interval", _str("name")), ("from s", _float("from_s")), ("to s", _float("to_s")),
        ("goodput", _float("goodput_mbps")),
    ])
    # Utilization is against the capacity (a shaper's rate where it is below the line rate).
    _table(console, "links (capacity in Mbit/s, queue delay in ms)", summary.get("links", []), [
        ("link", _str("id")), ("capacity", lambda row: _num(row.get("capacity_mbps", row.get("rate_mbps")))),
        ("util", _percent("utilization")),
        ("delay\nmean", _float("sojourn_ms", "mean")), ("delay\np50", _float("sojourn_ms", "p50")),
        ("delay\np99", _float("sojourn_ms", "p99")), ("delay\nmax", _float("sojourn_ms", "max")),
        ("drops", _int("drops")), ("marks", _int("marks")),
    ])
    _table(console, "probes (RTT in ms)", summary.get("probes", []), [
        ("probe", _str("id")), ("RTT\nmean", _float("rtt_ms", "mean")), ("RTT\np50", _float("rtt_ms", "p50")),
        ("RTT\np95", _float("rtt_ms", "p95")), ("RTT\np99", _float("rtt_ms", "p99")),
    ])
    if "jain" in summary:
        from ccbench.report.run_metrics import tcp_jain_of

        jain = tcp_jain_of(summary)
        if jain is not None:
            console.print(f"Jain's fairness index of the TCP flows: {_num(jain, 3)}")
        else:
            console.print("Jain's fairness index: - (fewer than 2 TCP flows active after the warm-up)")
    engine = summary.get("engine") or {}
    if engine:
        wall, events = engine.get("wall_s"), engine.get("events")
        line = f"engine: {_plain_int(events)} events in {_num(wall, 3)} s wall"
        if isinstance(wall, (int, float)) and wall > 0 and isinstance(duration, (int, float)):
            line += f", {_num(duration / wall)} simulated s per wall s"
            if isinstance(events, int):
                line += f", {_num(events / wall / 1e6)} M events/s"
        console.print(line)


def _table(console: Console, title: str, rows: list[dict[str, Any]], columns: list[tuple[str, Cell]]) -> None:
    if rows:
        _print_table(console, title, [header for header, _ in columns], [[cell(row) for _, cell in columns] for row in rows])


def _print_table(console: Console, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A table at its natural width, first column left, the others right."""
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == 0 else "right", no_wrap=True)
    for r in rows:
        table.add_row(*r)
    # Never shorten a value to fit: a narrow terminal wraps the long lines instead. A table takes
    # its natural width when it may be wider (rich measures it once, as it prints).
    width = console.width
    console.width = max(width, 1_000)
    try:
        console.print(table, crop=False)
    finally:
        console.width = width


_MISSING = "-"


def _get(row: dict[str, Any], keys: tuple[str, ...]) -> Any:
    value: Any = row
    for k in keys:
        value = value.get(k) if isinstance(value, dict) else None
    return value


def _str(*keys: str) -> Cell:
    return lambda row: _MISSING if (v := _get(row, keys)) is None else str(v)


def _float(*keys: str) -> Cell:
    return lambda row: _num(_get(row, keys))


def _int(*keys: str) -> Cell:
    return lambda row: _plain_int(_get(row, keys))


def _percent(*keys: str) -> Cell:
    return lambda row: _MISSING if (v := _get(row, keys)) is None else f"{v * 100:.1f}%"


def _num(x: Any, digits: int | None = None) -> str:
    """A number with about three significant digits, fixed-point."""
    if not isinstance(x, (int, float)):
        return _MISSING
    if digits is None:
        digits = 0 if abs(x) >= 100 else 1 if abs(x) >= 10 else 2 if abs(x) >= 1 else 3
    return f"{x:.{digits}f}"


def _plain_int(x: Any) -> str:
    return f"{x:,}" if isinstance(x, int) else _MISSING


def print_suite(console: Console, suite_dir: Path) -> None:
    """A suite directory's report tables and its Runs table (as report.md has them), with the legend."""
    from ccbench.report.suite import build, part_dirs

    parts = part_dirs(suite_dir)
    if parts is not None:
        for part in parts:
            print_suite(console, part)
        console.print(f"report: {suite_dir / 'report.html'}")
        return
    report = build(suite_dir, plots=False, figures=False)  # the terminal shows tables only
    console.print(f"suite {report.title}" + (f": {report.description}" if report.description else ""))
    for key, value in report.meta:
        if key in ("runs", "seeds", "wall time"):
            console.print(f"{key}: {value}")
    for g in [*report.tables, report.runs]:
        title = g.title + (f" ({g.subtitle})" if g.subtitle else "")
        _print_table(console, title, [g.corner, *g.columns], [[label, *(c.text for c in cells)] for label, cells in g.rows])
        for note in g.notes:
            console.print(f"  {note}")
        for line in g.legend:
            console.print(f"  {line}")
    console.print(f"report: {suite_dir / 'report.html'}")
