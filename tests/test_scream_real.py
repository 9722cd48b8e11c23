"""SCReAM's model against SCReAM's own code on the same emulated path.

``tests/data/scream_real.json`` holds what EricssonResearch/scream's BW test
tool did when ``bench/scream_real.py`` ran it through ``ccbench emulate``
(the commit and the command of each case are in the file; docs/scream-real.md
says how it was built). Here the simulator runs each case's scenario (the
``[commands]`` section is only for the emulator) and its SCReAM flow must
deliver the same rate over the same window, within 10 %, and see the same
CE marking at the bottleneck, within 20 % (each recorded figure is the mean
of three runs of the code).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import ccbench

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from scream_real import MEDIA_BYTES, TCP_BYTES, leaving_rate  # noqa: E402  (the same measure as the data)

DATA = json.loads((Path(__file__).parent / "data" / "scream_real.json").read_text())["cases"]


def simulated(case: dict) -> dict:
    res = ccbench.run(case["scenario"])
    ids = [f["id"] for f in res.summary["flows"]]
    sojourn = res.tables["sojourn"]
    link = next(x for x in res.summary["links"] if x["id"] == "bottleneck")
    return {"scream_mbps": leaving_rate(sojourn, ids.index("scream"), MEDIA_BYTES),
            "tcp_mbps": leaving_rate(sojourn, ids.index("tcp"), TCP_BYTES) if "tcp" in ids else None,
            "ce_fraction": link["marks"] / max(1, link["tx_packets"])}


#: Where the model does not yet do what the code does (model vs code, as measured; docs/scream-real.md).
#: Strict: a case that starts to agree fails here until it is taken off the list.
DISAGREE = {
    "alone-5ms": "CE marks 4.2 % vs the code's 5.2 % (rate within 0.4 %)",
    "alone-100ms": "CE marks 0.59 % vs 1.46 % (rate within 3 %)",
    "alone-25ms-rand50": "CE marks 8.2 % vs 6.7 % (rate within 3 %)",
    "alone-25ms-mb2": "rate 33.4 vs 37.5 Mbit/s",
    "alone-25ms-mb2-994f9a4": "rate 33.1 vs 37.3 Mbit/s, CE marks 5.0 % vs 4.1 %",
    "alone-25ms-head": "CE marks 2.7 % vs the code's 2.0 % (rate within 1 %)",
    "bbr-25ms": "beside kernel BBR SCReAM gets 18.0 vs 12.8 Mbit/s (BBR 79.5 vs 84.4): the kernel's BBR needs "
                "more drop probability from PI2 to hold the classic queue (413 vs 217 drops in 10-30 s), so "
                "the coupled L marking is higher: the model's BBR (README, Known differences)",
}


@pytest.mark.parametrize("case", [
    pytest.param(c, id=c["name"], marks=[pytest.mark.xfail(reason=DISAGREE[c["name"]], strict=True)]
                 if c["name"] in DISAGREE else [])
    for c in DATA])
def test_scream_model_delivers_what_its_code_does_on_the_same_path(case: dict) -> None:
    sim = simulated(case)
    assert sim["scream_mbps"] == pytest.approx(case["scream_mbps"], rel=0.10), (sim, case["scream_mbps"])
    assert sim["ce_fraction"] == pytest.approx(case["ce_fraction"], rel=0.20), (sim, case["ce_fraction"])
