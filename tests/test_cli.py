"""The ccbench command: run → result directory → show, and validate."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import ccbench
from ccbench.cli import _num
from conftest import MEDIA, TWO_FLOWS


def test_run_writes_a_result_directory_and_show_reads_it(run_cli, write_scenario) -> None:
    scenario = write_scenario(TWO_FLOWS)
    result = run_cli("run", scenario, "-o", "out")
    assert result.exit_code == 0, result.stderr
    out = Path("out")
    for name in ("summary.json", "scenario.toml", "flow_series.parquet"):
        assert (out / name).is_file(), name
    assert not (out / "timeseries.png").exists()  # the PNG only with --plot
    assert sorted(p.name for p in Path().iterdir()) == ["out", "tiny.toml"]  # no temporary directories left
    assert "f1" in result.stdout and "wrote out" in result.stdout

    summary = json.loads((out / "summary.json").read_text())
    shown = run_cli("show", out)
    assert shown.exit_code == 0, shown.stderr
    assert "goodput" in shown.stdout
    for flow in summary["flows"]:
        assert flow["id"] in shown.stdout
        assert _num(flow["goodput_mbps"]) in shown.stdout
    for link in summary["links"]:
        assert link["id"] in shown.stdout
    assert "ping" in shown.stdout
    assert "Jain" in shown.stdout and "events" in shown.stdout


def test_run_options_reach_the_scenario(run_cli, write_scenario) -> None:
    result = run_cli("run", write_scenario(), "-o", "out", "--seed", "7", "--set", "duration=1s", "--no-plot")
    assert result.exit_code == 0, result.stderr
    summary = ccbench.load("out").summary
    assert (summary["seed"], summary["duration_s"]) == (7, 1.0)
    assert not Path("out/timeseries.png").exists()


def test_run_writes_the_plot_only_with_the_plot_flag(run_cli, write_scenario) -> None:
    scenario = write_scenario()
    assert run_cli("run", scenario, "-o", "with", "--plot", "--set", "duration=1s").exit_code == 0
    png = Path("with/timeseries.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    assert run_cli("run", scenario, "-o", "without", "--set", "duration=1s").exit_code == 0
    assert not Path("without/timeseries.png").exists()
    # the tables are the same either way
    a, b = ccbench.load("with"), ccbench.load("without")
    assert a.summary["flows"] == b.summary["flows"] and a.tables["flow_series"].equals(b.tables["flow_series"])


def test_run_defaults_to_results_named_after_the_file(run_cli, write_scenario) -> None:
    assert run_cli("run", write_scenario(), "--no-plot").exit_code == 0
    assert Path("results/tiny/summary.json").is_file()


def test_run_replaces_a_previous_result(run_cli, write_scenario) -> None:
    scenario = write_scenario()
    assert run_cli("run", scenario, "-o", "out", "--no-plot", "--seed", "1").exit_code == 0
    assert run_cli("run", scenario, "-o", "out", "--no-plot", "--seed", "2").exit_code == 0
    assert ccbench.load("out").summary["seed"] == 2


def test_run_refuses_to_replace_a_foreign_directory(run_cli, write_scenario) -> None:
    Path("mine").mkdir()
    Path("mine/thesis.tex").write_text("keep")
    result = run_cli("run", write_scenario(), "-o", "mine")
    assert result.exit_code == 2
    assert "mine" in result.stderr and "not a ccbench result directory" in result.stderr
    assert Path("mine/thesis.tex").read_text() == "keep"


def test_validate_ok_and_resolved(run_cli, write_scenario) -> None:
    scenario = write_scenario()
    ok = run_cli("validate", scenario)
    assert (ok.exit_code, ok.stdout.strip()) == (0, f"ok: {scenario}")
    resolved = run_cli("validate", scenario, "--resolved")
    assert resolved.exit_code == 0
    assert resolved.stdout == ccbench.validate(scenario)


def test_version(run_cli) -> None:
    result = run_cli("--version")
    assert result.exit_code == 0 and ccbench.__version__ in result.stdout


def test_python_dash_m_runs_the_cli(run_module) -> None:
    proc = run_module("--help")
    assert proc.returncode == 0
    assert "Usage: ccbench" in proc.stdout
    for command in ("run", "show", "validate"):
        assert command in proc.stdout


def test_run_into_a_parent_directory_with_a_trailing_slash(run_cli, write_scenario) -> None:
    """`-o out/` (as the README has it after `make run` made out/) writes out/<file stem>, beside what is there."""
    Path("out/some-suite").mkdir(parents=True)
    result = run_cli("run", write_scenario(), "-o", "out/", "--no-plot", "--set", "duration=1s")
    assert result.exit_code == 0, result.stderr
    assert Path("out/tiny/summary.json").is_file() and Path("out/some-suite").is_dir()
    assert "wrote out/tiny" in result.stdout


def test_run_refuses_a_foreign_directory_before_simulating_and_says_what_works(run_cli, write_scenario) -> None:
    Path("out/some-suite").mkdir(parents=True)
    result = run_cli("run", write_scenario(), "-o", "out", "--no-plot")
    assert result.exit_code == 2
    assert "out: exists and is not a ccbench result directory" in result.stderr and "-o out/" in result.stderr
    assert sorted(p.name for p in Path("out").iterdir()) == ["some-suite"]


def test_show_of_a_parent_directory_names_what_it_holds(run_cli, write_scenario) -> None:
    assert run_cli("run", write_scenario(), "-o", "out/", "--no-plot", "--set", "duration=1s").exit_code == 0
    shown = run_cli("show", "out")
    assert shown.exit_code == 2 and "it holds: tiny" in shown.stderr and "ccbench show out/tiny" in shown.stderr


def test_ctrl_c_during_a_run_exits_130_and_writes_nothing(write_scenario, tmp_path) -> None:
    import signal
    import subprocess
    import sys
    import time

    scenario = write_scenario(TWO_FLOWS.replace('duration = "2s"', 'duration = "100000s"'))
    lift = ["--set", 'limits.memory="1000gb"', "--set", "limits.events=1000000000000000"]  # a long run on purpose
    proc = subprocess.Popen([sys.executable, "-m", "ccbench", "run", str(scenario), "-o", "out", "--no-plot", *lift],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert time.monotonic() - t0 < 5.0
    assert "interrupted" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_show_gives_no_fairness_index_for_a_single_tcp_flow(run_cli, write_scenario) -> None:
    assert run_cli("run", write_scenario(), "-o", "one", "--no-plot", "--set", "duration=1s").exit_code == 0
    shown = run_cli("show", "one")
    assert "Jain's fairness index: - (fewer than 2 TCP flows" in shown.stdout
    assert run_cli("run", write_scenario(TWO_FLOWS), "-o", "two", "--no-plot").exit_code == 0
    a, b = (f["goodput_mbps"] for f in ccbench.load("two").summary["flows"])
    jain = (a + b) ** 2 / (2 * (a * a + b * b))
    assert f"Jain's fairness index of the TCP flows: {_num(jain, 3)}" in run_cli("show", "two").stdout


def test_ids_and_names_print_as_written(run_cli, write_scenario) -> None:
    """An id or name is any string: rich's :emoji: codes and [markup] in it are printed as they are."""
    text = TWO_FLOWS.replace('id = "f2"', 'id = "web:thumbs_up:[b]"')
    result = run_cli("run", write_scenario(text), "-o", "out:smile:", "--set", "duration=1s")
    assert result.exit_code == 0, result.stderr
    assert "web:thumbs_up:[b]" in result.stdout and "wrote out:smile:" in result.stdout
    assert "web:thumbs_up:[b]" in run_cli("show", "out:smile:").stdout


def test_a_skipped_test_fails_the_session(tmp_path) -> None:
    """make test runs nothing conditionally: the conftest hook turns any skip into a failed session."""
    import os
    import shutil
    import subprocess
    import sys

    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_skips.py").write_text("import pytest\n\ndef test_x():\n    pytest.skip('no tool')\n")
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)]
    done = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "nothing may skip" in done.stdout, done.stdout
    allowed = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "CCBENCH_ALLOW_SKIPS": "1"})
    assert allowed.returncode == 0, allowed.stdout


def test_run_without_plot_loads_no_plotting_or_suite_code(write_scenario) -> None:
    """`ccbench run`'s start-up stays small: matplotlib only for --plot, sweep/suite code only for suites,
    and neither Polars nor NumPy (each a third of a short run's wall time): its page draws from what the
    core hands over, its arrays made by the core."""
    import subprocess
    import sys

    scenario = write_scenario()
    heavy = ("matplotlib", "ccbench.simulate.plot", "ccbench.plan.suite", "ccbench.sweep", "ccbench.sweep.frame",
             "ccbench.report.suite", "polars", "numpy")
    code = (
        "import sys\n"
        "from ccbench.cli import cli\n"
        f"cli(['run', {str(scenario)!r}, '-o', 'lazy', '--set', 'duration=\"1s\"'], standalone_mode=False)\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=scenario.parent).stdout
    assert out.strip().splitlines()[-1] == "[]"
    assert (scenario.parent / "lazy" / "summary.json").is_file()


def test_what_a_run_writes_after_the_simulation_is_loaded_during_it(write_scenario) -> None:
    """`ccbench run` imports what its page and summary need on a thread while the core simulates
    (`RUN_PAGE_MODULES`, about a third of a short run otherwise): once that thread is done,
    writing the results and printing the summary import nothing more (not even rich's emoji table:
    ids print as written)."""
    import subprocess
    import sys

    scenario = write_scenario()
    code = (
        "import sys\n"
        "import ccbench.core.preload as p\n"
        "after, start = [], p.preload\n"
        "def spy(modules):\n"
        "    t = start(modules)\n"
        "    t.join()\n"
        "    after.append(set(sys.modules))\n"
        "    return t\n"
        "p.preload = spy\n"
        "from ccbench.cli import cli\n"
        f"cli(['run', {str(scenario)!r}, '-o', 'pre', '--set', 'duration=\"1s\"'], standalone_mode=False)\n"
        "print(sorted(set(sys.modules) - after[0]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=scenario.parent).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_the_command_keeps_numpy_to_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenBLAS would start a spinning thread per core when NumPy loads; the command asks for one
    (inherited by its workers), unless the user chose a number."""
    from ccbench.cli import main

    for preset, expected in ((None, "1"), ("4", "4")):
        if preset is None:
            monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
        else:
            monkeypatch.setenv("OPENBLAS_NUM_THREADS", preset)
        with pytest.raises(SystemExit) as done:
            main(["--version"])
        assert done.value.code == 0
        assert os.environ["OPENBLAS_NUM_THREADS"] == expected


def test_sweep_module_is_callable_however_it_is_imported() -> None:
    import subprocess
    import sys

    code = "import ccbench.sweep as s, ccbench\nprint(callable(s), ccbench.sweep is s, callable(ccbench.load_suite))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True", "True"]


#: The media scenario with an interval after the run's end as well.
MEDIA_LATE = MEDIA.replace('intervals = [{ name = "late", from = "2s", to = "4s" }]',
                           'intervals = [{ name = "late", from = "2s", to = "4s" }, '
                           '{ name = "after-end", from = "5s", to = "6s" }]')


def test_show_of_a_media_run_gives_its_media_fields_and_named_intervals(run_cli, tmp_path) -> None:
    (tmp_path / "media.toml").write_text(MEDIA_LATE)
    assert run_cli("run", "media.toml", "-o", "out").exit_code == 0
    flow = json.loads(Path("out/summary.json").read_text())["flows"][0]
    shown = run_cli("show", "out")
    assert shown.exit_code == 0, shown.stderr
    text = shown.stdout
    media = text.split("media flows", 1)[1].split("named intervals", 1)[0]
    for value in (flow["media"]["target_mbps"], flow["media"]["tx_mbps"], flow["media"]["qdelay_ms"]["p99"]):
        assert _num(value) in media, (value, media)
    assert f"{flow['media']['packets_sent']:,}" in media
    intervals = text.split("named intervals", 1)[1].split("links", 1)[0]
    late, after = flow["intervals"]
    assert after["goodput_mbps"] is None  # the run ended before it
    assert "late" in intervals and _num(late["goodput_mbps"]) in intervals and "after-end" in intervals
