"""What a careless or hostile user must not be able to do with the command
line: hang it, get a traceback, fill the disk, leave files behind after
SIGTERM, or write outside the result directory. Each case is a reported
input; the long fuzz campaign is tests/test_fuzz_cli.py and `make fuzz`."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from click.testing import Result as CliResult

import ccbench
import ccbench.core.files
import ccbench.simulate.api
from ccbench.core import workers
from conftest import TINY

from test_guards import UNLIMITED

# One link with no rate and no delay used both ways: time could never advance.
TIMELESS = """\
duration = "5s"
[[links]]
id = "l"
delay = "0ms"
[[flows]]
id = "f"
cc = "cubic"
path = ["l"]
reverse = ["l"]
"""

# About a minute of simulation on two cores: long enough to be stopped while it runs.
LONG = """\
duration = "600s"
[[links]]
id = "b"
rate = "1Gbit"
delay = "10ms"
[[links]]
id = "r"
rate = "1Gbit"
delay = "10ms"
[[flows]]
id = "f"
count = 10
path = ["b"]
reverse = ["r"]
"""


def ccbench_process(*args: object, cwd: Path, **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "ccbench", *map(str, args)], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]


def wait_for(proc: subprocess.Popen[str], found: Callable[[], bool]) -> None:
    """Until ``found()`` (the process has got that far) while the process lives."""
    while not found():
        assert proc.poll() is None, f"ended early: {proc.communicate()}"
        time.sleep(0.05)


def no_traceback(result: CliResult | subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in (result.stdout or "") + (result.stderr or "")


def test_a_run_whose_time_cannot_advance_is_refused_not_hung(run_module: Callable[..., subprocess.CompletedProcess[str]],
                                                             tmp_path: Path) -> None:
    (tmp_path / "hang.toml").write_text(TIMELESS)
    # run_module's timeout is the harness guard: a hang fails the test instead of hanging it.
    result = run_module("run", "hang.toml", "-o", "out/hang")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("hang.toml:8:8: flows[0].path: this TCP flow's round trip takes no time")
    assert not (tmp_path / "out").exists()


def test_a_suite_whose_base_is_not_toml_is_a_located_error(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text('name = "s"\nbase = "broken.toml"\n[[axes]]\nname = "a"\nvalues = [1]\nkey = "seed"\n')
    (tmp_path / "broken.toml").write_text("duration = \"1s\"\nx = = 1\n")
    result = run_cli("suite", "run", "s.toml", "-o", "out/")
    assert result.exit_code == 2
    assert result.stderr.startswith("broken.toml:2:5: not a TOML scenario: Invalid value"), result.stderr
    (tmp_path / "broken.toml").write_bytes(b"\xff\xfe\x00binary")
    result = run_cli("suite", "run", "s.toml", "-o", "out/")
    assert result.exit_code == 2 and "cannot read scenario" in result.stderr and "not UTF-8" not in result.stdout
    no_traceback(result)


def test_suite_parts_naming_each_other_are_refused(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    (tmp_path / "loop.toml").write_text('name = "loop"\nparts = ["loop.toml"]\n')
    (tmp_path / "a.toml").write_text('name = "a"\nparts = ["b.toml"]\n')
    (tmp_path / "b.toml").write_text('name = "b"\nparts = ["a.toml"]\n')
    for suite in ("loop.toml", "a.toml"):
        result = run_cli("suite", "run", suite, "-o", "out/")
        assert result.exit_code == 2, result.stderr
        assert "a part must be a suite with axes, not a suite of suites" in result.stderr
        no_traceback(result)


def test_devices_and_huge_files_are_not_read(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    for args in (["run", "/dev/zero"], ["validate", "/dev/zero"], ["suite", "run", "/dev/zero"]):
        result = run_cli(*args)
        assert result.exit_code == 2
        assert result.stderr.startswith("/dev/zero: not a regular file"), result.stderr
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(ccbench.core.files.MAX_INPUT_BYTES + 1)  # sparse: nothing is written
    result = run_cli("validate", big)
    assert result.exit_code == 2 and result.stderr.startswith(f"{big}: larger than 16 MiB"), result.stderr
    result = run_cli("run", tmp_path)
    assert result.exit_code == 2 and "is a directory" in result.stderr


@pytest.mark.parametrize("content", [
    b'{"x":', b"\xff\xfe", b"[1, 2]", b'{"flows": 3}', b'{"flows": [1, 2]}', b'{"duration_s": "long"}',
    b'{"engine": []}', b'{"links": [{"sojourn_ms": 7}]}', b"[" * 100_000,
])
def test_show_reports_a_damaged_summary(run_cli: Callable[..., CliResult], tmp_path: Path, content: bytes) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "summary.json").write_bytes(content)
    result = run_cli("show", "r")
    no_traceback(result)
    assert result.exit_code in (0, 2), result.stderr
    if result.exit_code == 2:
        assert result.stderr.startswith(f"{Path('r') / 'summary.json'}: damaged, not "), result.stderr


def test_sigterm_removes_what_a_run_holds_as_ctrl_c_does(tmp_path: Path) -> None:
    (tmp_path / "long.toml").write_text(LONG)
    proc = ccbench_process("run", "long.toml", "-o", "out/a/long", cwd=tmp_path)
    wait_for(proc, lambda: any((tmp_path / "out" / "a").glob(".long.tmp-spill-*/*.parquet")))
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate()
    assert proc.returncode == 143, err
    assert err.strip() == "terminated" and "Traceback" not in err
    assert not (tmp_path / "out").exists(), list((tmp_path / "out").rglob("*"))


def test_a_later_run_removes_a_killed_runs_leftovers(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    (tmp_path / "long.toml").write_text(LONG)
    (tmp_path / "tiny.toml").write_text(TINY)
    proc = ccbench_process("run", "long.toml", "-o", "out/x", cwd=tmp_path)
    wait_for(proc, lambda: any((tmp_path / "out").glob(".x.tmp-spill-*/*.parquet")))
    proc.kill()  # SIGKILL: nothing can clean up
    proc.communicate()
    (dead,) = (tmp_path / "out").glob(".x.tmp-spill-*")
    # A live run's directory (its lock held) is left alone.
    live = tmp_path / "out" / ".x.tmp-spill-live"
    live.mkdir()
    fd = os.open(live, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        result = run_cli("run", "tiny.toml", "-o", "out/x")
        assert result.exit_code == 0, result.stderr
        assert not dead.exists() and live.exists()
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".x.tmp-spill-live", "x"]
    finally:
        os.close(fd)


def test_a_killed_replacement_puts_the_previous_result_back(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    (tmp_path / "tiny.toml").write_text(TINY)
    assert run_cli("run", "tiny.toml", "-o", "out/x").exit_code == 0
    # As if killed between setting the old result aside and moving the new one in.
    work = tmp_path / "out" / ".x.tmp-spill-dead"
    work.mkdir()
    os.replace(tmp_path / "out" / "x", work / "old")
    ccbench.core.files.clear_dead(tmp_path / "out" / "x")
    assert (tmp_path / "out" / "x" / "summary.json").is_file() and not work.exists()


def long_sweep(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """A sweep of three long runs on two workers, once both are writing; and its runs directory."""
    (tmp_path / "long.toml").write_text(LONG)
    (tmp_path / "s.toml").write_text('name = "s"\nbase = "long.toml"\n[[axes]]\nname = "seed"\nvalues = [1, 2, 3]\n'
                                     'key = "seed"\n')
    runs = tmp_path / "out" / "s" / "runs"
    proc = ccbench_process("suite", "run", "s.toml", "-o", "out/", "-j", "2", cwd=tmp_path, start_new_session=True)
    wait_for(proc, lambda: len(list(runs.glob(".*.tmp-spill-*/*.parquet"))) >= 2)
    return proc, runs


def terminate_sweep(proc: subprocess.Popen[str], runs: Path) -> None:
    """SIGTERM to the whole process group, as `timeout` does: the sweep exits 143, says how to
    resume, and leaves no run files."""
    os.killpg(proc.pid, signal.SIGTERM)
    out, err = proc.communicate()
    assert proc.returncode == 143, err
    assert "resume with: ccbench suite run s.toml --resume" in err and "Traceback" not in err
    assert list(runs.iterdir()) == []


def test_sigterm_stops_a_sweep_and_its_workers_without_leftovers(tmp_path: Path) -> None:
    proc, runs = long_sweep(tmp_path)
    terminate_sweep(proc, runs)
    assert (tmp_path / "out" / "s" / "suite.json").is_file()


def holder_of(directory: Path) -> int:
    """The process that has ``directory`` open (a run holds its work directory's lock)."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if any(os.readlink(fd) == str(directory) for fd in (proc / "fd").iterdir()):
                    return int(proc.name)
    raise AssertionError(f"nobody holds {directory}")


def test_a_stopped_sweep_clears_what_a_killed_worker_left(tmp_path: Path) -> None:
    proc, runs = long_sweep(tmp_path)
    # A worker killed outright cannot remove its run's files; its run fails and the sweep goes on.
    first = set(runs.glob(".*.tmp-spill-*"))
    victim = min(first)
    os.kill(holder_of(victim), signal.SIGKILL)
    # The broken pool's runs fail and a new pool takes the third.
    wait_for(proc, lambda: any(p.parent not in first for p in runs.glob(".*.tmp-spill-*/*.parquet")))
    assert victim.is_dir()
    terminate_sweep(proc, runs)


def test_a_pool_notices_a_worker_killed_as_it_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython's pool wakes its manager thread before it starts the worker a submit adds: made
    certain here with a pause, the manager goes back to waiting on the first worker alone, and the
    second one's death must still fail both runs (it broke the pool) at once, not after an hour."""
    adjust = ProcessPoolExecutor._adjust_process_count

    def late(pool: ProcessPoolExecutor) -> None:
        time.sleep(0.3)
        adjust(pool)  # type: ignore[attr-defined]

    monkeypatch.setattr(ProcessPoolExecutor, "_adjust_process_count", late)
    pool = ProcessPoolExecutor(2, mp_context=workers.mp_context())
    try:
        futures = {pool.submit(time.sleep, 3600) for _ in range(2)}
        second = list(pool._processes.values())[-1]  # type: ignore[attr-defined]
        assert len(pool._processes) == 2  # type: ignore[attr-defined]
        os.kill(second.pid, signal.SIGKILL)
        for _ in range(60):
            futures -= workers.wait_first(pool, futures)
            if not futures:
                break
        assert not futures, "the pool has not noticed its dead worker"
    finally:
        for p in list(pool._processes.values()):  # type: ignore[attr-defined]
            p.kill()
        pool.shutdown(wait=True, cancel_futures=True)


WORKER_STOPPED_TWICE = """\
import os, shutil, signal, sys
from ccbench.core import files, workers
workers.worker_init(os.getppid())
remove = shutil.rmtree
def rmtree(path, **kw):  # another SIGTERM each time the clean-up starts
    os.kill(os.getpid(), signal.SIGTERM)
    remove(path, **kw)
files.shutil.rmtree = rmtree
with workers.run_scope():
    with files.work_dir(sys.argv[1]):
        os.kill(os.getpid(), signal.SIGTERM)
        signal.pause()
"""


def test_a_worker_told_twice_to_stop_still_removes_its_files(tmp_path: Path) -> None:
    # A sweep's worker gets the process group's SIGTERM and then the sweep's own.
    done = subprocess.run([sys.executable, "-c", WORKER_STOPPED_TWICE, str(tmp_path / "run")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 143, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_disk_is_limited_and_free_space_checked(run_cli: Callable[..., CliResult], write_scenario: Callable[..., Path],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_scenario()
    result = run_cli("run", path, "-o", "out/x", "--set", 'limits.disk="1kb"')
    assert result.exit_code == 2
    assert "duration: this run would write about" in result.stderr and "more than limits.disk = 0 MiB" in result.stderr
    import shutil

    usage = shutil.disk_usage(path.parent)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage._replace(free=1000))
    result = run_cli("run", path, "-o", "out/x")
    assert result.exit_code == 2
    assert result.stderr.startswith("out/x: this run would write about ") and "but only 0 MiB is free there" in result.stderr
    assert not Path("out").exists()
    assert ccbench.simulate.api.estimate(path, streamed=True)["disk"] > 1000


def test_pcaps_are_streamed_and_belong_to_the_result(run_cli: Callable[..., CliResult],
                                                    write_scenario: Callable[..., Path],
                                                    monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import ccbench.formats.pcap
    from ccbench.simulate.results import Tables

    path = write_scenario()
    assert run_cli("run", path, "-o", "whole", "--pcap", "bottleneck").exit_code == 0
    # The capture table is never looked up whole, and small batches give the same file.
    whole_lookup = Tables.__getitem__

    def refuse_capture(self: Tables, name: str) -> object:
        assert name != "capture", "the capture table was loaded whole"
        return whole_lookup(self, name)

    monkeypatch.setattr(Tables, "__getitem__", refuse_capture)
    monkeypatch.setattr(ccbench.formats.pcap, "BATCH_ROWS", 7)
    assert run_cli("run", path, "-o", "batched", "--pcap", "bottleneck").exit_code == 0
    assert (tmp_path / "whole" / "bottleneck.pcap").read_bytes() == (tmp_path / "batched" / "bottleneck.pcap").read_bytes()
    # A pcap that cannot be written fails the run: no result without it.
    def fail(*args: object, **kw: object) -> int:
        raise OSError(28, "No space left on device", "failed.pcap")

    monkeypatch.setattr(ccbench.formats.pcap, "write_pcap", fail)
    result = run_cli("run", path, "-o", "failed", "--pcap", "bottleneck")
    assert result.exit_code == 2 and result.stderr.startswith("failed.pcap: no space left on device")
    assert not (tmp_path / "failed").exists()


def test_link_ids_cannot_name_files_outside_the_result(run_cli: Callable[..., CliResult],
                                                      write_scenario: Callable[..., Path], tmp_path: Path) -> None:
    outside = tmp_path / "abs"
    text = TINY.replace('id = "bottleneck"', 'id = "../../escaped"').replace('id = "ret"', f'id = "{outside}"')
    text = text.replace('path = ["bottleneck"]', 'path = ["../../escaped"]').replace('reverse = ["ret"]',
                                                                                    f'reverse = ["{outside}"]')
    path = write_scenario(text)
    result = run_cli("run", path, "-o", "out/r", "--pcap", "../../escaped", "--pcap", str(outside))
    assert result.exit_code == 0, result.stderr
    pcaps = sorted(p.name for p in (tmp_path / "out" / "r").glob("*.pcap"))
    assert pcaps == sorted(["%2E.%2F..%2Fescaped.pcap", f"{ccbench.core.files.file_name(str(outside))}.pcap"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "tiny.toml"]
    assert not list(tmp_path.parent.glob("escaped*")) and not outside.with_suffix(".pcap").exists()


def test_a_refused_or_failed_run_leaves_no_directories(run_cli: Callable[..., CliResult],
                                                       write_scenario: Callable[..., Path], tmp_path: Path) -> None:
    result = run_cli("run", write_scenario(TIMELESS), "-o", "a/b/c")
    assert result.exit_code == 2 and not (tmp_path / "a").exists()
    result = run_cli("run", write_scenario(UNLIMITED, "unlimited.toml"), "-o", "a/b/c")  # stops at its memory limit
    assert result.exit_code == 2 and "limits.memory: stopped at" in result.stderr
    assert not (tmp_path / "a").exists()


def test_an_unwritable_output_is_named_as_such(run_cli: Callable[..., CliResult], write_scenario: Callable[..., Path]) -> None:
    path = write_scenario()
    result = run_cli("run", path, "-o", "/proc/x")
    assert result.exit_code == 2
    assert result.stderr.startswith("/proc/x: cannot write a result here: no such file or directory"), result.stderr
    assert "tmp-spill" not in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--set", "foo.bar=1"], "--set: foo.bar: foo: unknown field `foo`"),
    (["--set", 'links.bottleneck.qdisc={ kind = "fq_codel", flows = 0 }'],
     "--set: links.bottleneck.qdisc: links[0].qdisc: flows must be in 1..=65536 (as Linux accepts), got 0"),
    (["--set", 'links.bottleneck.qdisc={ kind = "fq_codel", flows = 4294967295 }'],
     "--set: links.bottleneck.qdisc: links[0].qdisc: flows must be in 1..=65536 (as Linux accepts), got 4294967295"),
])
def test_smaller_mistakes_are_named(run_cli: Callable[..., CliResult], write_scenario: Callable[..., Path],
                                    args: list[str], message: str) -> None:
    result = run_cli("validate", write_scenario(), *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(message), result.stderr
