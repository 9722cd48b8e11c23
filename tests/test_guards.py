"""Resource guards as a user sees them: warnings printed by the CLI and
raised from the API, a run over its memory limit failing cleanly, progress
reported while a run is under way, and start jitter making seeds matter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result as CliResult

import ccbench
from ccbench.core.errors import ScenarioWarning

from conftest import TINY, TWO_FLOWS, line_of

BYTE_RATE = TINY.replace('rate = "10Mbit"\ndelay = "10ms"\nqdisc', 'rate = "1Mbps"\ndelay = "10ms"\nqdisc', 1)

UNLIMITED = """\
duration = "3s"
[limits]
memory = "4mb"
[[links]]
id = "a"
delay = "10ms"
[[links]]
id = "b"
delay = "10ms"
[[flows]]
id = "bulk"
cc = "cubic"
path = ["a"]
reverse = ["b"]
# Socket buffers big enough for the packets in flight to outgrow the limit
# (samples no longer do: ccbench run writes them out as the run goes).
tcp = { wmem_max = "256mb", rmem_max = "256mb" }
"""


def test_byte_rate_warns_in_validate_and_run(write_scenario: Callable[..., Path],
                                             run_cli: Callable[..., CliResult]) -> None:
    path = write_scenario(BYTE_RATE)
    line = line_of(BYTE_RATE, '"1Mbps"')
    result = run_cli("validate", path)
    assert result.exit_code == 0, result.stderr
    assert f"warning: {path}:{line}:8: links[0].rate: \"1Mbps\" is read as tc reads it" in result.stderr
    assert "8 Mbit/s" in result.stderr and 'write "1Mbit"' in result.stderr
    # An override (a suite axis is one) is named as such.
    result = run_cli("run", write_scenario(), "-o", "out", "--no-plot", "--set", "links.ret.rate=2Mbps")
    assert result.exit_code == 0, result.stderr
    assert "warning: --set: links.ret.rate:" in result.stderr
    # Bits per second: silent.
    assert "warning" not in run_cli("validate", write_scenario()).stderr


def test_api_raises_scenario_warnings() -> None:
    with pytest.warns(ScenarioWarning, match="16 Mbit/s"):
        ccbench.validate(TINY, set=['links.bottleneck.rate="2Mbps"'])


def test_memory_limit_stops_the_run_and_writes_nothing(write_scenario: Callable[..., Path],
                                                       run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    result = run_cli("run", write_scenario(UNLIMITED), "-o", "out", "--no-plot")
    assert result.exit_code == 2
    assert "limits.memory: stopped at" in result.stderr and "more than the memory limit of 4 MiB" in result.stderr
    assert "only its socket buffers limit it" in result.stderr  # warned before it ran
    assert not (tmp_path / "out").exists()


def test_set_value_errors_name_the_override(write_scenario: Callable[..., Path],
                                            run_cli: Callable[..., CliResult]) -> None:
    result = run_cli("validate", write_scenario(), "--set", "links.bottleneck.rate=5potatoes")
    assert result.exit_code == 2
    assert result.stderr.startswith('--set: links.bottleneck.rate: links[0].rate: unknown rate unit "potatoes"')
    broken = TINY.replace('delay = "10ms"\nqdisc', 'delay = "10ms\nqdisc', 1)
    line = line_of(broken, 'delay = "10ms\n'.strip())
    result = run_cli("validate", write_scenario(broken), "--set", "seed=3")
    assert result.exit_code == 2
    assert f"tiny.toml:{line}:" in result.stderr


def test_progress_follows_simulated_time_not_the_machine() -> None:
    """Progress is reported by simulated time, so a run reports the same steps on any machine."""


    def steps() -> list[tuple[float, float]]:
        seen: list[tuple[float, float]] = []
        ccbench.run(TINY, progress=lambda now, end: seen.append((now, end)))
        return seen

    seen = steps()
    assert all(end == 2.0 and 0.0 <= now <= end for now, end in seen)
    nows = [now for now, _ in seen]
    # This run takes milliseconds, yet it reports through its whole length, a thousandth of it apart at least.
    assert len(seen) >= 100 and nows[0] < 0.1 and nows[-1] > 1.9, nows
    assert all(b - a >= 2.0 / 1000 for a, b in zip(nows, nows[1:])), nows
    assert steps() == seen
    # The engine runs on a thread of its own and hands its steps over in batches: a Python
    # thread busy all the while changes neither the steps nor the thread they arrive on.
    import threading

    stop, spins = threading.Event(), [0]

    def busy() -> None:
        while not stop.is_set():
            spins[0] += 1

    t = threading.Thread(target=busy)
    t.start()
    try:
        caller, threads = threading.get_ident(), set()
        busy_seen: list[tuple[float, float]] = []
        ccbench.run(TINY, progress=lambda now, end: (busy_seen.append((now, end)), threads.add(threading.get_ident())))
    finally:
        stop.set()
        t.join()
    assert busy_seen == seen and threads == {caller} and spins[0] > 0


def test_start_jitter_makes_seeds_differ() -> None:
    jitter = ['flows.f1.start_jitter="50ms"', 'flows.f2.start_jitter="50ms"']
    quiet = [f'flows.{f}.{k}' for f in ("f1", "f2")
             for k in ('start_jitter="0s"', 'tcp.tx_jitter="0s"', "tcp.tx_stall_prob=0.0", 'tcp.ack_jitter="0s"', "tcp.ack_stall_prob=0.0")]
    plain = [ccbench.run(TWO_FLOWS, seed=s, set=quiet).summary["flows"] for s in (1, 2)]
    assert plain[0] == plain[1], "without host timing noise nothing here is random"
    noisy = [ccbench.run(TWO_FLOWS, seed=s).summary["flows"] for s in (1, 2)]
    assert noisy[0] != noisy[1], "the default host timing noise makes each seed a sample"
    jittered = [ccbench.run(TWO_FLOWS, seed=s, set=jitter).summary["flows"] for s in (1, 2)]
    assert [f["start_s"] for f in jittered[0]] != [f["start_s"] for f in jittered[1]]
    assert all(0.0 <= f["start_s"] <= 0.05 for run in jittered for f in run)


def test_suite_axis_values_in_bytes_per_second_warn_once(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    suite = tmp_path / "axes.toml"
    suite.write_text(
        'name = "axes"\nbase = "tiny.toml"\n\n[[axes]]\nname = "rate"\nvalues = ["8Mbit", "1Mbps"]\n'
        'set = ["links.bottleneck.rate={value}"]\n\n[[axes]]\nname = "seed"\nvalues = [1, 2]\nset = ["seed={value}"]\n',
        encoding="utf-8",
    )
    result = run_cli("suite", "run", suite, "--dry-run")
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    # Two runs set "1Mbps"; the warning is printed once, at the axis that wrote it.
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith(f"warning: {suite}:") and "links.bottleneck.rate" in warnings[0], warnings[0]
    assert "8 Mbit/s" in warnings[0]


def test_tables_on_disk_do_not_count_against_the_memory_limit(write_scenario: Callable[..., Path],
                                                              run_cli: Callable[..., CliResult],
                                                              tmp_path: Path) -> None:
    """300 s of TINY records ~15 MB of samples: refused up front when they would stay in
    memory, run by `ccbench run`, which writes them out as it goes."""
    path = write_scenario(TINY.replace('duration = "2s"', 'duration = "300s"') + '[limits]\nmemory = "8mb"\n')
    with pytest.raises(ccbench.ScenarioError, match="more than limits.memory = 8 MiB"):
        ccbench.run(path)
    with pytest.raises(ccbench.ScenarioError, match="limits.memory"):
        ccbench.validate(path)
    assert ccbench.validate(path, streamed=True)
    assert run_cli("validate", path).exit_code == 0
    result = run_cli("run", path, "-o", "out")
    assert result.exit_code == 0, result.stderr
    saved = ccbench.load(tmp_path / "out")
    assert saved.tables["sojourn"].height > 200_000
