"""The factor table of docs/fidelity.md (section 4.5) against a run of its script.

``bench/scream_factors.py`` scores the three SCReAM test-record suites (70
published cells) with one testbed factor changed at a time. Here the rows
that need only the suites as configured (the baseline and the two other
measurement windows) are measured again and must be what the document says,
and so must the DualPI2 step-rule finding the document explains.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import ccbench
from ccbench.plan.suite_file import load_suite

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from scream_factors import measure, row  # noqa: E402  (the script that made the table)


def _doc_rows() -> dict[str, list[str]]:
    """The factor table's rows, keyed by their first two cells, minus signs as ASCII."""
    text = (ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8")
    section = text[text.index("### 4.5 The test record's gap"):text.index("## Summary of the differences")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip().replace("\u2212", "-") for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and re.fullmatch(r"\d+/70", cells[2]):
            rows[f"{cells[0]} | {cells[1]}"] = cells[2:]
    return rows


def test_the_documented_baseline_and_window_rows_are_what_the_script_measures() -> None:
    results, _ = measure(["baseline"], jobs=2)
    doc = _doc_rows()
    assert len(doc) == 9, sorted(doc)
    documented = {
        "baseline": next(v for k, v in doc.items() if k.startswith("baseline |")),
        "window-last5": next(v for k, v in doc.items() if k.startswith("measurement window | the last 5 s")),
        "window-whole": next(v for k, v in doc.items() if k.startswith("measurement window | the whole")),
    }
    for name, what, score in results:
        measured = [c.strip() for c in row(name, what, score).strip().strip("|").split("|")][2:]
        assert measured == documented[name], (name, measured, documented[name])


def test_dualpi2_step_rule_changes_no_mark_until_nine_packets_at_100_mbit() -> None:
    # A packet waits past the 1 ms step only behind 9 packets of 1400 B at 100 Mbit/s (112 us each),
    # so min_qlen_step 0..8 exempt none that would be marked; 9 is the first that does.
    planned = next(p for p in load_suite("scream-test-record").plan() if p.values["rtt"] == 25)
    marks = {n: ccbench.run(planned.scenario, set=[f"links.bottleneck.qdisc.min_qlen_step={n}"])
             .summary["links"][0]["marks"] for n in (0, 2, 8, 9)}
    assert marks[0] == marks[2] == marks[8] == 47753, marks
    assert marks[9] == 47454, marks
