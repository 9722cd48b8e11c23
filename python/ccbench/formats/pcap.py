"""Export a run's packet capture as a libpcap file for Wireshark, tshark or tcptrace.

The core records the headers of every packet that starts transmission on a
link named in ``metrics.capture`` (the ``capture`` table, see
:mod:`ccbench.simulate.results`), i.e. after its queue: packets the qdisc dropped are
not there. :func:`write_pcap` writes one link's rows, or several links merged
in time order, with synthetic but valid headers. Payload bytes are not
captured: each record holds the headers only (``incl_len`` < ``orig_len``), as
with a short snaplen. Checksums are correct for a zero-filled payload (zeros
add nothing to the one's-complement sum), so the IP header checksum verifies.

Formats (each cited again where it is built):

- libpcap file format (draft-ietf-opsawg-pcap; wiki.wireshark.org/Development/LibpcapFileFormat):
  nanosecond magic 0xa1b23c4d, version 2.4, LINKTYPE_ETHERNET (1)
- IPv4: RFC 791 §3.1; Internet checksum: RFC 1071
- TCP: RFC 9293 §3.1 (formerly RFC 793); ECE/CWR: RFC 3168 §6.1;
  timestamps: RFC 7323 §3; SACK: RFC 2018 §3
- ICMP echo: RFC 792

Synthetic addressing, deterministic. ``e`` is the row's ``endpoint`` (the flow's
index counting every copy and ping in scenario order):

==========  ===========================  =================  =================
host        IPv4 address                 TCP port           MAC
==========  ===========================  =================  =================
sender      10.(2·(e//256)).(e%256).1    40000 + e % 25536  02:00:00:00:00:01
receiver    10.(2·(e//256)+1).(e%256).1  5201               02:00:00:00:00:02
==========  ===========================  =================  =================

so flows 0-255 are 10.0.e.1 → 10.1.e.1; direction 1 (ACKs, echo replies)
swaps source and destination. Sequence numbers count bytes: the sender's ISN
is ``SENDER_ISN`` and segment ``s`` starts at byte ``SENDER_ISN + 1 + s·MSS``
(RFC 9293 §3.4: the first data byte is ISN+1); the receiver sends no data, so
its ACKs carry ``RECEIVER_ISN + 1``. MSS = ``flows[].tcp.mtu`` − 52 of the
resolved scenario. TSval is the simulated time in ms; TSecr is 0 (the capture
does not record it). Echo id = ``e``, sequence = the probe's sequence.
Limitations: a SACK block ending at a short last segment is rounded up to a
whole MSS; AccECN's ACE counter (``cep``) is not encoded in the header bits.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from ccbench.simulate.results import Result

__all__ = ["LinkRef", "RECEIVER_ISN", "SENDER_ISN", "write_pcap"]

LinkRef = int | str  # a link id, or an index into summary["links"]

SENDER_ISN = 1_000_000_000
RECEIVER_ISN = 2_000_000_000
TCP_IP_HDR = 52  # IPv4 + TCP + timestamps option: MSS = MTU - 52, as in the core
MAX_ENDPOINTS = 128 * 256  # addresses 10.0.0.1 .. 10.255.255.1

# capture.kind values (crates/ccbench-core/src/metrics/capture.rs)
DATA, ACK, PROBE, REPLY = 0, 1, 2, 3
# capture.flags bits
FLAG_ECE, FLAG_CWR, FLAG_PSH = 1, 2, 8

# libpcap: global header (magic, version 2.4, thiszone, sigfigs, snaplen,
# LINKTYPE_ETHERNET) and record header (ts_sec, ts_nsec, incl_len, orig_len).
PCAP_MAGIC_NS = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
_GLOBAL = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")

_MAC_SENDER = bytes.fromhex("020000000001")  # locally administered (IEEE 802, U/L bit)
_MAC_RECEIVER = bytes.fromhex("020000000002")
_ETHERTYPE_IPV4 = b"\x08\x00"
_ETH_HDR = 14

# RFC 791 §3.1: version/IHL, TOS, total length, identification, flags/fragment
# offset, TTL, protocol, header checksum, source, destination.
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_IP_DF = 0x4000
_IP_TTL = 64
_PROTO_ICMP, _PROTO_TCP, _PROTO_EXPERIMENT = 1, 6, 253  # 253: RFC 3692 experimentation
# RFC 9293 §3.1: ports, seq, ack, data offset, flags, window, checksum, urgent.
_TCP = struct.Struct("!HHIIBBHHH")
_TCP_PSH, _TCP_ACK, _TCP_ECE, _TCP_CWR = 0x08, 0x10, 0x40, 0x80
_TCP_WINDOW = 65535
_PORT_SENDER, _PORT_RECEIVER = 40000, 5201
# RFC 792: type, code, checksum, identifier, sequence number.
_ICMP = struct.Struct("!BBHHH")
_ICMP_ECHO_REPLY, _ICMP_ECHO = 0, 8

_COLUMNS = ("time_ns", "endpoint", "dir", "size", "ecn", "dscp", "kind", "seq", "ack", "flags", "cep", "nsack",
            "sack0_start", "sack0_end", "sack1_start", "sack1_end", "sack2_start", "sack2_end")


#: Capture rows read at a time: the capture is streamed from its table to
#: the file, never held whole (10 Gbit/s for 30 s is ~25 million rows).
BATCH_ROWS = 1 << 16


def write_pcap(result: Result, path: str | os.PathLike[str],
               link: LinkRef | Sequence[LinkRef] | None = None, snaplen: int = 128) -> int:
    """Write the packets captured on ``link`` to ``path`` as a pcap; return how many.

    ``link`` is a link id or an index into ``summary["links"]``; it may be
    omitted when exactly one link was captured. A list of links merges them in
    time order, e.g. a path's forward and return links to see data and ACKs
    together as a host would. Raises ValueError for a link that does not exist
    or was not captured.

    The capture table is read :data:`BATCH_ROWS` rows at a time (the core
    records it in time order, every link together), so memory stays flat
    however large the capture.
    """
    import polars as pl

    if snaplen < _ETH_HDR:
        raise ValueError(f"snaplen must be at least {_ETH_HDR} bytes, got {snaplen}")
    scenario = _scenario(result)
    links = link if isinstance(link, (list, tuple)) else [link]
    indices = [_link_index(result, scenario, one) for one in links]
    tcp = _tcp_by_endpoint(scenario)
    capture = result.tables.lazy("capture")

    def rows() -> Iterator[tuple[Any, ...]]:
        offset = 0
        while True:
            # Sliced before filtering, so that the reader skips the row groups before `offset`.
            chunk = capture.slice(offset, BATCH_ROWS).collect()
            if chunk.height == 0:
                return
            offset += chunk.height
            yield from chunk.filter(pl.col("link").is_in(indices)).select(_COLUMNS).iter_rows()

    n = last = 0
    with open(path, "wb") as f:
        f.write(_GLOBAL.pack(PCAP_MAGIC_NS, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET))
        for time_ns, frame, orig_len in _frames(rows(), tcp):
            if time_ns < last:
                raise ValueError("the capture table is not in time order (not written by ccbench?)")
            last = time_ns
            data = frame[:snaplen]
            f.write(_RECORD.pack(time_ns // 1_000_000_000, time_ns % 1_000_000_000, len(data), orig_len))
            f.write(data)
            n += 1
    return n


def _frames(rows: Iterator[tuple[Any, ...]], tcp: list[_Tcp | None]) -> Iterator[tuple[int, bytes, int]]:
    """(time in ns, Ethernet frame without payload, frame length on the wire) per capture row."""
    ip_id: dict[tuple[int, int], int] = {}  # per sending host: RFC 791 §3.2 identification
    for time_ns, e, rev, size, ecn, dscp, kind, seq, ack, flags, cep, nsack, *sack in rows:
        if e >= MAX_ENDPOINTS:
            raise ValueError(f"endpoint {e}: at most {MAX_ENDPOINTS} flows have pcap addresses")
        sender = bytes((10, 2 * (e >> 8), e & 0xFF, 1))
        receiver = bytes((10, 2 * (e >> 8) + 1, e & 0xFF, 1))
        src, dst = (receiver, sender) if rev else (sender, receiver)
        if kind in (PROBE, REPLY):
            proto = _PROTO_ICMP
            l4 = _icmp(_ICMP_ECHO_REPLY if kind == REPLY else _ICMP_ECHO, e & 0xFFFF, seq & 0xFFFF)
        elif kind in (DATA, ACK) and e < len(tcp) and (conn := tcp[e]) is not None:
            proto = _PROTO_TCP
            l4 = _tcp_header(e, rev, kind, seq, ack, flags, sack[: 2 * nsack], time_ns, conn, cep)
        else:
            proto, l4 = _PROTO_EXPERIMENT, b""
        ip_len = max(size - _ETH_HDR, 20 + len(l4))  # only a ping smaller than its headers is widened
        if proto == _PROTO_TCP:
            l4 = _with_checksum(l4, 16, _pseudo_header(src, dst, proto, ip_len - 20))
        elif proto == _PROTO_ICMP:
            l4 = _with_checksum(l4, 2)  # RFC 792: over the ICMP message; the absent payload is zeros
        ident = ip_id.get((e, rev), 0)
        ip_id[(e, rev)] = (ident + 1) & 0xFFFF
        tos = (dscp << 2) | ecn  # RFC 2474 §3 DSCP, RFC 3168 §5 ECN field
        ip = _IPV4.pack(0x45, tos, ip_len, ident, _IP_DF, _IP_TTL, proto, 0, src, dst)
        ip = _with_checksum(ip, 10)  # RFC 791 §3.1: over the header only
        eth = (_MAC_SENDER + _MAC_RECEIVER) if rev else (_MAC_RECEIVER + _MAC_SENDER)  # dst, src
        yield time_ns, eth + _ETHERTYPE_IPV4 + ip + l4, ip_len + _ETH_HDR


def _tcp_header(e: int, rev: int, kind: int, seq: int, ack: int, flags: int, sack: list[int],
                time_ns: int, conn: _Tcp, cep: int) -> bytes:
    """TCP header and options of one segment, checksum 0."""
    mss = conn.mss
    def sender_byte(segment: int) -> int:
        return (SENDER_ISN + 1 + segment * mss) & 0xFFFFFFFF

    bits = _TCP_ACK  # every segment after the handshake carries ACK (RFC 9293 §3.10.7.4)
    if kind == DATA:
        seq_no, ack_no = sender_byte(seq), RECEIVER_ISN + 1
        bits |= (_TCP_PSH if flags & FLAG_PSH else 0) | (_TCP_CWR if flags & FLAG_CWR else 0)  # RFC 3168 §6.1.2
    else:
        seq_no, ack_no = RECEIVER_ISN + 1, sender_byte(ack)
        bits |= _TCP_ECE if flags & FLAG_ECE else 0  # RFC 3168 §6.1.3
    ae = 0
    if conn.accecn:
        # RFC 9768 §3.2.2: the ACE field (AE, CWR, ECE) carries the CE packet
        # counter r.cep mod 8, which starts at 5; the data sender receives no
        # data, so its own counter stays 5.
        ace = (5 + (cep if kind == ACK else 0)) % 8
        ae = ace >> 2
        bits = (bits & ~(_TCP_CWR | _TCP_ECE)) | (_TCP_CWR if ace & 2 else 0) | (_TCP_ECE if ace & 1 else 0)
    # RFC 7323 §3.2: NOP, NOP, kind 8, length 10, TSval, TSecr (as Linux lays it out).
    options = struct.pack("!BBBBII", 1, 1, 8, 10, (time_ns // 1_000_000) & 0xFFFFFFFF, 0)
    if sack:
        # RFC 2018 §3: NOP, NOP, kind 5, length 2 + 8n, then n (left edge, right edge) pairs.
        options += struct.pack(f"!BBBB{len(sack)}I", 1, 1, 5, 2 + 4 * len(sack), *map(sender_byte, sack))
    sport, dport = _PORT_SENDER + e % 25536, _PORT_RECEIVER
    if rev:
        sport, dport = dport, sport
    offset = (20 + len(options)) // 4  # data offset in 32-bit words
    return _TCP.pack(sport, dport, seq_no, ack_no, offset << 4 | ae, bits, _TCP_WINDOW, 0, 0) + options


def _icmp(icmp_type: int, ident: int, seq: int) -> bytes:
    return _ICMP.pack(icmp_type, 0, 0, ident, seq)


def _pseudo_header(src: bytes, dst: bytes, proto: int, length: int) -> bytes:
    """RFC 9293 §3.1: source, destination, zero, protocol, TCP length (header + payload)."""
    return src + dst + struct.pack("!BBH", 0, proto, length)


def _with_checksum(header: bytes, at: int, prefix: bytes = b"") -> bytes:
    """``header`` with the RFC 1071 Internet checksum of ``prefix + header`` stored at byte ``at``."""
    data = prefix + header
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))  # every header here has even length
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return header[:at] + struct.pack("!H", ~total & 0xFFFF) + header[at + 2:]


def _link_index(result: Result, scenario: dict[str, Any], link: LinkRef | None) -> int:
    """Index into summary["links"] of the link to export (see write_pcap)."""
    import polars as pl

    names = [entry["id"] for entry in result.summary.get("links", [])]
    wanted = scenario.get("metrics", {}).get("capture", [])
    # The links the table holds, without loading it (a column scan).
    held = result.tables.lazy("capture").select(pl.col("link").unique()).collect(engine="streaming")["link"]
    captured = sorted({names.index(n) for n in wanted if n in names} | set(held.to_list()))
    choices = ", ".join(repr(names[i]) for i in captured if i < len(names)) or "none"
    if link is None:
        if len(captured) == 1:
            return captured[0]
        if not captured:
            raise ValueError('no link was captured: run with metrics.capture = ["<link id>"]')
        raise ValueError(f"several links were captured ({choices}): pass link= one of them")
    if isinstance(link, bool) or not isinstance(link, (int, str)):
        raise TypeError(f"link must be a link id or index, got {link!r}")
    if isinstance(link, str):
        if link not in names:
            raise ValueError(f"no link {link!r}; links: {', '.join(map(repr, names))}")
        index = names.index(link)
    elif not 0 <= link < len(names):
        raise ValueError(f"link index {link} out of range: there are {len(names)} links")
    else:
        index = link
    if index not in captured:
        raise ValueError(f"link {names[index]!r} was not captured (captured: {choices})")
    return index


def _scenario(result: Result) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise RuntimeError("pcap export needs Python 3.11+ (tomllib) or the tomli package") from None
    doc: dict[str, Any] = tomllib.loads(result.scenario_toml)
    return doc


class _Tcp(NamedTuple):
    mss: int
    #: Accurate ECN feedback (the resolved scenario's ecn = "ect0" / "ect1").
    accecn: bool


def _tcp_by_endpoint(scenario: dict[str, Any]) -> list[_Tcp | None]:
    """Each flow copy's TCP parameters in arena order (count copies, pings included); None for pings."""
    out: list[_Tcp | None] = []
    for spec in scenario.get("flows", []):
        conn = None
        if spec.get("kind", "tcp") == "tcp":
            conn = _Tcp(spec.get("tcp", {}).get("mtu", 1500) - TCP_IP_HDR, spec.get("ecn") in ("ect0", "ect1"))
        out += [conn] * int(spec.get("count", 1))
    return out
