"""pcap export: the file we write is what the capture table says, and tshark reads it cleanly."""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

import ccbench
from ccbench.formats.pcap import PCAP_MAGIC_NS, RECEIVER_ISN, SENDER_ISN, write_pcap

# One ECN CUBIC flow and one Not-ECT Reno flow through a small ECN CoDel queue, and a ping.
# Endpoints in arena order: 0 = "ecn", 1 = "plain", 2 = "ping".
SCENARIO = """\
name = "pcap"
duration = "3s"
seed = 1

[[links]]
id = "bottleneck"
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "codel", ecn = true, limit = 30 }

[[links]]
id = "ret"
rate = "10Mbit"
delay = "10ms"

[[flows]]
id = "ecn"
cc = "cubic"
ecn = true
path = ["bottleneck"]
reverse = ["ret"]

[[flows]]
id = "plain"
cc = "reno"
path = ["bottleneck"]
reverse = ["ret"]

[[flows]]
id = "ping"
kind = "ping"
path = ["bottleneck"]
reverse = ["ret"]
"""
SNAPLEN = 128
DATA, ACK, PROBE, REPLY = 0, 1, 2, 3
MSS = 1500 - 52
NOT_ECT, ECT0, CE = 0, 2, 3
FLAG_RETRANS = 4


@pytest.fixture(scope="module")
def captured() -> ccbench.Result:
    """SCENARIO with both links captured: data and ping requests cross "bottleneck",
    ACKs and ping replies "ret" (links are one-way, like one side of a router port)."""
    return ccbench.run(SCENARIO, metrics__capture=["bottleneck", "ret"])


@pytest.fixture(scope="module")
def pcaps(captured: ccbench.Result, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """bottleneck.pcap alone, and both.pcap: both links merged, as the sender's host sees the flow."""
    out = tmp_path_factory.mktemp("pcap")
    link = captured.tables["capture"]["link"]
    assert write_pcap(captured, out / "bottleneck.pcap", "bottleneck", snaplen=SNAPLEN) == (link == 0).sum()
    assert write_pcap(captured, out / "both.pcap", ["bottleneck", "ret"], snaplen=SNAPLEN) == len(link)
    return {"bottleneck": out / "bottleneck.pcap", "both": out / "both.pcap"}


def read_pcap(path: Path) -> tuple[tuple[int, ...], list[tuple[int, int, int, int, bytes]]]:
    """(global header fields, [(ts_sec, ts_nsec, incl_len, orig_len, data)]) with only the stdlib."""
    data = path.read_bytes()
    header = struct.unpack_from("<IHHiIII", data, 0)
    records, at = [], 24
    while at < len(data):
        sec, nsec, incl, orig = struct.unpack_from("<IIII", data, at)
        records.append((sec, nsec, incl, orig, data[at + 16 : at + 16 + incl]))
        at += 16 + incl
    assert at == len(data), "a record runs past the end of the file"
    return header, records


def tshark(*args: str) -> list[list[str]]:
    """tshark's tab-separated output lines, split; FAILS (never skips) if tshark is missing."""
    exe = shutil.which("tshark")
    if exe is None:
        pytest.fail("tshark is not installed: apt-get install -y tshark (CI installs it in .ci/run)")
    out = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, check=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def test_records_mirror_the_capture_table(captured: ccbench.Result, pcaps: dict[str, Path]) -> None:
    everything = captured.tables["capture"]
    assert everything["link"].unique().sort().to_list() == [0, 1]
    for name, cap in (("bottleneck", everything.filter(pl.col("link") == 0)), ("both", everything)):
        header, records = read_pcap(pcaps[name])
        assert header == (PCAP_MAGIC_NS, 2, 4, 0, 0, SNAPLEN, 1)  # nanosecond pcap 2.4, Ethernet
        assert len(records) == len(cap) > 1000
        assert [(s * 10**9 + ns, orig) for s, ns, _, orig, _ in records] == list(zip(cap["time_ns"], cap["size"]))
        for (_, _, incl, orig, frame), kind, nsack in zip(records, cap["kind"], cap["nsack"]):
            l4 = 8 if kind in (PROBE, REPLY) else 32 + (4 + 8 * nsack if nsack else 0)
            assert incl == min(14 + 20 + l4, SNAPLEN) <= orig  # headers only: the payload is not captured
            assert frame[12:14] == b"\x08\x00" and frame[14] == 0x45  # IPv4, IHL 5
            assert struct.unpack_from("!H", frame, 16)[0] == orig - 14  # IP total length


def test_tcp_numbers_count_bytes_from_the_isn(captured: ccbench.Result, pcaps: dict[str, Path]) -> None:
    _, records = read_pcap(pcaps["both"])
    for row, (*_, frame) in zip(captured.tables["capture"].iter_rows(named=True), records):
        if row["kind"] == DATA:
            assert struct.unpack_from("!II", frame, 38) == (SENDER_ISN + 1 + row["seq"] * MSS, RECEIVER_ISN + 1)
        elif row["kind"] == ACK:
            assert struct.unpack_from("!II", frame, 38) == (RECEIVER_ISN + 1, SENDER_ISN + 1 + row["ack"] * MSS)


FIELDS = ["ip.src", "ip.dsfield.ecn", "tcp.flags.ece", "tcp.flags.cwr", "tcp.options.sack_le", "icmp.type"]


def tshark_table(path: Path) -> pl.DataFrame:
    rows = tshark("-r", str(path), "-o", "tcp.relative_sequence_numbers:FALSE", "-T", "fields",
                  *(a for f in FIELDS for a in ("-e", f)))
    return pl.DataFrame(rows, schema=FIELDS, orient="row")


@pytest.mark.parametrize("name", ["bottleneck", "both"])
def test_tshark_reads_every_packet_cleanly(captured: ccbench.Result, pcaps: dict[str, Path], name: str) -> None:
    cap = captured.tables["capture"]
    cap = cap.filter(pl.col("link") == 0) if name == "bottleneck" else cap
    got = tshark_table(pcaps[name])
    assert len(got) == len(cap)
    assert got["ip.src"].to_list() == [f"10.{d}.{e}.1" for e, d in zip(cap["endpoint"], cap["dir"])]
    assert got["ip.dsfield.ecn"].cast(pl.UInt32).to_list() == cap["ecn"].to_list()
    data = pl.concat([cap, got], how="horizontal").filter(pl.col("kind") == DATA)
    retrans = (pl.col("flags") & FLAG_RETRANS) != 0
    ecn_flow = data.filter(pl.col("endpoint") == 0)
    assert set(ecn_flow.filter(~retrans)["ecn"]) == {ECT0, CE}  # the ECN flow: ECT(0), some marked
    assert set(ecn_flow.filter(retrans)["ecn"]) <= {NOT_ECT}  # RFC 3168 §6.1.5: retransmissions are Not-ECT
    assert set(data.filter(pl.col("endpoint") == 1)["ecn"]) == {NOT_ECT}  # the Not-ECT flow
    # Nothing malformed, no error-level expert info, every IPv4 header checksum verified good.
    path, check = str(pcaps[name]), ("-o", "ip.check_checksum:TRUE")
    assert tshark("-r", path, *check, "-Y", "_ws.malformed || _ws.expert.severity == error") == []
    assert tshark("-r", path, *check, "-Y", "ip.checksum.status != 1") == []


def test_tshark_sees_ecn_feedback_sack_and_pings(captured: ccbench.Result, pcaps: dict[str, Path]) -> None:
    both = pl.concat([captured.tables["capture"], tshark_table(pcaps["both"])], how="horizontal")
    acks = both.filter(pl.col("kind") == ACK)
    assert acks["tcp.flags.ece"].cast(pl.UInt32).to_list() == (acks["flags"] & 1).to_list()
    assert (acks.filter(pl.col("endpoint") == 0)["tcp.flags.ece"] == "1").any()  # RFC 3168 echo of CE
    data = both.filter(pl.col("kind") == DATA)
    assert data["tcp.flags.cwr"].cast(pl.UInt32).to_list() == ((data["flags"] & 2) // 2).to_list()
    sacked = acks.filter(pl.col("nsack") > 0)
    assert len(sacked) > 0 and (sacked["tcp.options.sack_le"] != "").all()
    first_left = sacked["tcp.options.sack_le"].str.split(",").list.first().cast(pl.UInt64)
    assert first_left.to_list() == (SENDER_ISN + 1 + sacked["sack0_start"] * MSS).to_list()
    assert (acks.filter(pl.col("nsack") == 0)["tcp.options.sack_le"] == "").all()
    pings = both.filter(pl.col("kind").is_in([PROBE, REPLY]))
    assert pings["icmp.type"].to_list() == ["8" if k == PROBE else "0" for k in pings["kind"]]


def test_the_link_must_be_named_when_several_were_captured(tmp_path: Path) -> None:
    both = ccbench.run(SCENARIO, duration="0.5s", metrics__capture=["bottleneck", "ret"])
    with pytest.raises(ValueError, match="'bottleneck', 'ret'"):
        write_pcap(both, tmp_path / "x.pcap")
    n_ret = write_pcap(both, tmp_path / "ret.pcap", 1)
    assert n_ret == (both.tables["capture"]["link"] == 1).sum() > 0
    with pytest.raises(ValueError, match="no link 'nope'"):
        write_pcap(both, tmp_path / "x.pcap", "nope")
    one = ccbench.run(SCENARIO, duration="0.5s", metrics__capture=["ret"])
    with pytest.raises(ValueError, match="'bottleneck' was not captured"):
        write_pcap(one, tmp_path / "x.pcap", "bottleneck")
    with pytest.raises(ValueError, match="no link was captured"):
        write_pcap(ccbench.run(SCENARIO, duration="0.5s"), tmp_path / "x.pcap")


def test_cli_pcap_writes_one_file_per_link_and_keeps_the_table(
    run_cli: Callable[..., object], write_scenario: Callable[..., Path]
) -> None:
    scenario = write_scenario(SCENARIO, "pcap.toml")
    result = run_cli("run", scenario, "-o", "out", "--no-plot", "--set", "duration=1s",
                     "--pcap", "bottleneck", "--pcap", "ret")
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    loaded = ccbench.load("out")
    cap = loaded.tables["capture"]
    for index, link in enumerate(("bottleneck", "ret")):
        _, records = read_pcap(Path("out") / f"{link}.pcap")
        assert len(records) == (cap["link"] == index).sum() > 0
    assert cap.equals(ccbench.run(scenario, duration="1s", metrics__capture=["bottleneck", "ret"]).tables["capture"])
    assert run_cli("run", scenario, "-o", "plain", "--no-plot", "--set", "duration=0.2s").exit_code == 0
    assert ccbench.load("plain").tables["capture"].is_empty()  # nothing captured unless asked


def test_accurate_ecn_acks_carry_the_ce_counter_in_ace(tmp_path: Path) -> None:
    """RFC 9768 §3.2.2: on an AccECN flow's ACKs, (AE, CWR, ECE) = (5 + r.cep) mod 8."""
    text = """
name = "accecn"
duration = "3s"
[[links]]
id = "bottleneck"
rate = "20Mbit"
delay = "5ms"
qdisc = { kind = "dualpi2" }
[[links]]
id = "return"
rate = "20Mbit"
delay = "5ms"
[[flows]]
id = "prague"
cc = "prague"
ecn = true
path = ["bottleneck"]
reverse = ["return"]
"""
    result = ccbench.run(text, set=['metrics.capture=["return"]'])
    path = tmp_path / "acks.pcap"
    write_pcap(result, path, "return")
    cap = result.tables["capture"].filter(pl.col("kind") == 1)
    rows = tshark("-r", str(path), "-T", "fields", "-e", "tcp.flags.ae", "-e", "tcp.flags.cwr", "-e", "tcp.flags.ece")
    assert len(rows) == cap.height
    ace = [int(ae == "True" or ae == "1") * 4 + int(cwr == "True" or cwr == "1") * 2 + int(ece == "True" or ece == "1")
           for ae, cwr, ece in rows]
    assert ace == [(5 + c) % 8 for c in cap["cep"].to_list()]
    assert cap["cep"].max() > 0, "the L queue's step marked something"
