"""The profile-guided build's training workload (tools/build.py) reaches every model.

A model the training never runs is compiled as cold code, slower than
without a profile; so a qdisc or congestion control added to the core must
be added to the workload too, and every training run must be a valid
scenario (the build stops on the first that is not).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import ccbench
from ccbench.core.errors import ScenarioError

ROOT = Path(__file__).resolve().parent.parent


def _build_module():
    spec = importlib.util.spec_from_file_location("ccbench_build", ROOT / "tools" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


build = _build_module()


def _allowed(override: str) -> set[str]:
    """The values the core accepts at a key, from its error for one it does not."""
    with pytest.raises(ScenarioError) as e:
        ccbench.validate(build.TRAIN_BASE, set=[override])
    message = str(e.value)
    assert "expected one of" in message, message
    return set(re.findall(r"`([a-z0-9_-]+)`", message.split("expected one of", 1)[1]))


def _trained(key: str, pattern: str) -> set[str]:
    """The values ``pattern`` captures in the training runs' overrides of ``key``."""
    return {v for _, overrides in build.training_runs() for o in overrides if o.startswith(key)
            for v in re.findall(pattern, o)}


def test_every_qdisc_kind_is_trained() -> None:
    kinds = _allowed('links.bottleneck.qdisc={ kind = "no-such-qdisc" }')
    assert len(kinds) >= 14
    assert kinds <= _trained("links.bottleneck.qdisc", r'kind = "([a-z0-9_]+)"')


def test_every_congestion_control_is_trained() -> None:
    ccs = _allowed('flows.a.cc="no-such-cc"')
    assert len(ccs) >= 8
    assert ccs <= _trained("flows.a.cc", r'"([a-z0-9-]+)"') | {"cubic"}  # the base scenario's own


def test_training_covers_media_and_ping_flows() -> None:
    kinds = set()
    for path, _ in build.training_runs():
        kinds |= set(re.findall(r'kind = "(media|ping)"', path.read_text()))
    assert kinds == {"media", "ping"}


def test_every_training_run_is_a_valid_scenario() -> None:
    runs = build.training_runs()
    assert len(runs) >= len(build.QDISCS) + len(build.CCS) + 6
    for path, overrides in runs:
        ccbench.validate(path, set=overrides)
