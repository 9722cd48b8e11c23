"""User mistakes: each names file, line and key, and the CLI exits 2 without a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

import ccbench
from conftest import TINY, line_of

# (case, scenario text, text the message names the line of, substrings the message must contain)
BAD = [
    ("unknown_key", TINY.replace("seed = 1\n", "seed = 1\nfoo = 1\n"), "foo = 1", ["foo", "unknown"]),
    ("bad_unit", TINY.replace('rate = "10Mbit"', 'rate = "100MB"', 1), '"100MB"', ["100MB"]),
    ("negative_rate", TINY.replace('rate = "10Mbit"', 'rate = "-5Mbit"', 1), '"-5Mbit"', ["negative"]),
    ("missing_link", TINY.replace('path = ["bottleneck"]', 'path = ["nope"]', 1), '["nope"]',
     ["nope", "unknown link"]),
]
IDS = [case for case, *_ in BAD]


def _location(text: str, needle: str) -> str:
    return f"tiny.toml:{line_of(text, needle)}"


@pytest.mark.parametrize(("case", "text", "needle", "says"), BAD, ids=IDS)
def test_api_raises_scenario_error_with_location(write_scenario, case, text, needle, says) -> None:
    path = write_scenario(text)
    with pytest.raises(ccbench.ScenarioError) as info:
        ccbench.run(path)
    err = info.value
    message = str(err)
    assert _location(text, needle) in message
    for s in says:
        assert s in message
    assert err.file is not None and err.file.endswith("tiny.toml")
    assert err.line == line_of(text, needle)
    assert err.problems and all({"file", "line", "col", "key", "message"} <= p.keys() for p in err.problems)


def test_bad_unit_names_the_key(write_scenario) -> None:
    text = BAD[1][1]
    with pytest.raises(ccbench.ScenarioError) as info:
        ccbench.validate(write_scenario(text))
    assert info.value.key in ("links[0].rate", "links.0.rate")
    assert "links[0].rate" in str(info.value) or "links.0.rate" in str(info.value)
    assert "tiny.toml:7:" in str(info.value)


def test_every_problem_is_reported(write_scenario) -> None:
    text = TINY.replace('rate = "10Mbit"', 'rate = "100MB"', 1).replace('rate = "10Mbit"', 'rate = "-5Mbit"', 1)
    with pytest.raises(ccbench.ScenarioError) as info:
        ccbench.validate(write_scenario(text))
    assert len(info.value.problems) >= 2
    assert "100MB" in str(info.value) and "negative" in str(info.value)


def test_text_without_a_file_is_named_string() -> None:
    with pytest.raises(ccbench.ScenarioError, match="<string>"):
        ccbench.validate(BAD[0][1])


@pytest.mark.parametrize("command", ["run", "validate"])
@pytest.mark.parametrize(("case", "text", "needle", "says"), BAD, ids=IDS)
def test_cli_exits_2_with_message_and_no_traceback(run_cli, write_scenario, command, case, text, needle, says) -> None:
    path = write_scenario(text)
    result = run_cli(command, path, *(["-o", "out"] if command == "run" else []))
    assert result.exit_code == 2
    assert _location(text, needle) in result.stderr
    for s in says:
        assert s in result.stderr
    assert "Traceback" not in result.stderr
    assert not Path("out").exists()  # nothing written for a scenario that never ran


@pytest.mark.parametrize("command", ["run", "validate"])
def test_cli_missing_file(run_cli, command) -> None:
    result = run_cli(command, "nope.toml")
    assert result.exit_code == 2
    assert result.stderr.strip() == "nope.toml: no such file"


def test_cli_malformed_set(run_cli, write_scenario) -> None:
    result = run_cli("run", write_scenario(), "--set", "duration")
    assert result.exit_code == 2
    assert "duration" in result.stderr and "key.path=value" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_set_naming_an_unknown_key(run_cli, write_scenario) -> None:
    result = run_cli("validate", write_scenario(), "--set", "durration=1s")
    assert result.exit_code == 2
    assert "durration" in result.stderr


def test_cli_unreadable_file(run_cli, write_scenario) -> None:
    path = write_scenario()
    path.write_bytes(b'name = "\xff"\n')
    result = run_cli("validate", path)
    assert result.exit_code == 2
    assert "tiny.toml" in result.stderr and "UTF-8" in result.stderr


def test_cli_show_of_a_missing_result(run_cli) -> None:
    result = run_cli("show", "nowhere")
    assert result.exit_code == 2
    assert result.stderr.startswith("nowhere:")


def test_real_process_prints_no_traceback(run_module, write_scenario) -> None:
    missing = run_module("run", "nope.toml")
    assert (missing.returncode, missing.stderr.strip()) == (2, "nope.toml: no such file")

    bad = write_scenario(BAD[0][1])
    proc = run_module("validate", bad.name)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"tiny.toml:{line_of(BAD[0][1], 'foo = 1')}")
    assert "Traceback" not in proc.stderr
