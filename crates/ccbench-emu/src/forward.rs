//! The forwarder: bridges the client hosts' interfaces (A, one per host) and
//! the server's (B) at L2 with AF_PACKET raw sockets and carries every frame
//! through an [`EmuPath`] per direction (A -> B "fwd", B -> A "rev"), in
//! real time, single threaded. A frame's route is its client host's: the
//! interface it came in on, or (towards the clients) its IPv4 destination.
//!
//! Frames live in a per-direction ring of 2^15 slots of 2048 B; `recvmmsg`
//! writes straight into the slots at the ring's tail (no copy) and the
//! core's [`Packet`] carries the slot's arrival number in `frame`. Qdiscs
//! drop packets without telling the owner, so slots are never "freed": a
//! slot is reused 2^15 arrivals later, and a packet whose slot was reused
//! before it left is counted in `ring_overruns` instead of being sent.
//! Output is batched with `sendmmsg` (PACKET_QDISC_BYPASS, as the anchor).
//!
//! Linux facts used (packet(7)): `PACKET_IGNORE_OUTGOING` so a socket does
//! not see its own transmissions, `PACKET_STATISTICS` for socket drops,
//! `MSG_TRUNC` in `msg_flags` for frames larger than a slot.

use std::ffi::CString;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use ccbench_core::packet::Packet;
use ccbench_core::units::SimTime;
use serde::Serialize;

use crate::frame;
use crate::path::{EmuPath, StageReport};

const SLOT: usize = 2048;
const RING_POW: u32 = 15;
const BATCH: usize = 64;

pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Accuracy figures and counters of one direction.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DirReport {
    pub rx_pkts: u64,
    pub rx_bytes: u64,
    pub truncated: u64,
    pub sock_rx_drops: u64,
    pub ring_overruns: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub tx_err: u64,
    pub ecn_rewrites: u64,
    pub configured_rate_bps: u64,
    /// Frame bytes over the span from the first to the last real write
    /// (the last frame's bytes excluded), bit/s.
    pub achieved_rate_bps: f64,
    pub achieved_over_configured: f64,
    pub tx_span_s: f64,
    pub timer_late_mean_us: f64,
    pub timer_late_max_us: f64,
    pub links: Vec<StageReport>,
    /// The flows seen, by index in `packets.bin`: "tcp SRC:PORT > DST:PORT".
    pub flows: Vec<String>,
}

struct Dir {
    name: &'static str,
    /// Input sockets; on the client side, socket k is route k's.
    in_fds: Vec<i32>,
    /// Towards the clients: client IPv4 address -> route.
    route_of_dst: Option<std::collections::HashMap<[u8; 4], usize>>,
    /// Per route, the socket its frames leave by.
    out_fds: Vec<i32>,
    path: EmuPath,
    ring: Vec<u8>,
    seq_of: Vec<u32>,
    seq: u32,
    due: Vec<(SimTime, Packet)>,
    r: DirReport,
    tx_first: u64,
    tx_last: u64,
    tx_last_len: u64,
    late_sum: u64,
    late_n: u64,
    late_max: u64,
    /// The latest time the path was advanced to (it never goes back).
    clock: SimTime,
    /// 5-tuple hash -> flow index (order of first arrival).
    flow_of: std::collections::HashMap<u32, u32>,
    /// The frames this direction sends, as a nanosecond pcap (`--pcap`).
    pcap: Option<io::BufWriter<std::fs::File>>,
    /// Per stage, the pcap of the frames it sends (`--pcap-link`), and the
    /// realtime of virtual time 0 (ns) to stamp them.
    link_pcaps: Vec<Option<io::BufWriter<std::fs::File>>>,
    rt_base: i128,
    /// Every SERIES_NS: (time, stage, [backlog pkts, bytes, drops, marks, bytes sent]).
    series: Vec<(u64, u16, [u64; 5])>,
}

/// The links' counters are sampled this often (the simulator's default metrics interval).
const SERIES_NS: u64 = 100_000_000;

/// How long before a departure the loop stops sleeping and polls (busy) instead.
const SPIN_NS: u64 = 300_000;
/// Spinning may take at most 1/SPIN_SHARE of wall time (earned as time passes) ...
const SPIN_SHARE: i64 = 5;
/// ... saved up to this much.
const SPIN_BUDGET_MAX: i64 = 5_000_000;

use crate::clock::{enable_rx_stamps, monotonic_ns as clock_ns, realtime_ns, realtime_offset_ns, rx_stamp, CTL_WORDS};

fn setopt(fd: i32, level: i32, opt: i32, val: i32) -> io::Result<()> {
    // SAFETY: val lives across the call; size matches.
    let r =
        unsafe { libc::setsockopt(fd, level, opt, &val as *const i32 as *const libc::c_void, 4) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// An AF_PACKET socket bound to `ifname`, non-blocking.
pub fn open_if(ifname: &str) -> io::Result<i32> {
    let proto = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: plain syscalls with checked results.
    unsafe {
        let fd = libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            i32::from(proto),
        );
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let c = CString::new(ifname).map_err(|_| io::Error::other("bad interface name"))?;
        let idx = libc::if_nametoindex(c.as_ptr());
        if idx == 0 {
            return Err(io::Error::other(format!("no interface {ifname}")));
        }
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = idx as i32;
        if libc::bind(
            fd,
            &sll as *const _ as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        ) < 0
        {
            return Err(io::Error::last_os_error());
        }
        setopt(fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, 1)?;
        setopt(fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, 1)?;
        setopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 64 << 20)?;
        setopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 64 << 20)?;
        // Kernel arrival stamps: a packet's delay counts from when it reached
        // the socket, not from when the forwarder woke up to read it.
        enable_rx_stamps(fd)?;
        // Drop whatever arrived before the bind took effect.
        let mut tmp = [0u8; SLOT];
        while libc::recv(
            fd,
            tmp.as_mut_ptr() as *mut libc::c_void,
            SLOT,
            libc::MSG_DONTWAIT,
        ) > 0
        {}
        // Reset the drop counter.
        sock_drops(fd);
        Ok(fd)
    }
}

/// Frames the kernel dropped for this socket since the last call.
fn sock_drops(fd: i32) -> u64 {
    let mut st = libc::tpacket_stats {
        tp_packets: 0,
        tp_drops: 0,
    };
    let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: st/len are valid for the call.
    unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            &mut st as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    u64::from(st.tp_drops)
}

impl Dir {
    fn new(name: &'static str, in_fds: Vec<i32>, out_fds: Vec<i32>, path: EmuPath) -> Dir {
        debug_assert_eq!(out_fds.len(), path.routes());
        let cap = 1usize << RING_POW;
        let r = DirReport {
            configured_rate_bps: path.bottleneck_bps(),
            ..Default::default()
        };
        Dir {
            name,
            in_fds,
            route_of_dst: None,
            out_fds,
            path,
            ring: vec![0; cap * SLOT],
            seq_of: vec![u32::MAX; cap],
            seq: 0,
            due: Vec::with_capacity(4 * BATCH),
            r,
            tx_first: 0,
            tx_last: 0,
            tx_last_len: 0,
            late_sum: 0,
            late_n: 0,
            late_max: 0,
            clock: SimTime(0),
            flow_of: std::collections::HashMap::new(),
            pcap: None,
            link_pcaps: Vec::new(),
            rt_base: 0,
            series: Vec::new(),
        }
    }

    fn slot(seq: u32) -> usize {
        (seq as usize) & ((1 << RING_POW) - 1)
    }

    /// Receive what is waiting on every input `ready` says may have some
    /// (up to 4 batches each), timestamp it, and hand it to the path on its route.
    /// `ready[k]` is input k's poll entry.
    fn rx(&mut self, t0: u64, ready: &[libc::pollfd]) {
        for (input, p) in ready.iter().enumerate().take(self.in_fds.len()) {
            debug_assert_eq!(p.fd, self.in_fds[input]);
            if p.revents != 0 {
                self.rx_from(input, t0);
            }
        }
    }

    fn rx_from(&mut self, input: usize, t0: u64) {
        let fd = self.in_fds[input];
        for _ in 0..4 {
            let mut iov: [libc::iovec; BATCH] = [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; BATCH];
            // SAFETY: zeroed mmsghdr is a valid empty header.
            let mut mm: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
            let mut ctl = [[0u64; CTL_WORDS]; BATCH];
            for i in 0..BATCH {
                let s = Self::slot(self.seq.wrapping_add(i as u32));
                iov[i].iov_base = self.ring[s * SLOT..].as_mut_ptr() as *mut libc::c_void;
                iov[i].iov_len = SLOT;
                mm[i].msg_hdr.msg_iov = &mut iov[i];
                mm[i].msg_hdr.msg_iovlen = 1;
                mm[i].msg_hdr.msg_control = ctl[i].as_mut_ptr() as *mut libc::c_void;
                mm[i].msg_hdr.msg_controllen = CTL_WORDS * 8;
            }
            // Slots wrap at the ring's end: never hand out a batch across it
            // (iov entries point at separate slots, so wrapping is fine).
            // SAFETY: iov/mm are valid for BATCH entries.
            let n = unsafe {
                libc::recvmmsg(
                    fd,
                    mm.as_mut_ptr(),
                    BATCH as u32,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if n <= 0 {
                return;
            }
            let mono = clock_ns();
            let now = SimTime(mono - t0);
            // Realtime stamps to this clock: the offset read now (a clock
            // step between a packet's arrival and here shifts it, clamped).
            let offset = realtime_offset_ns() + t0 as i128;
            for m in mm.iter().take(n as usize) {
                let at = rx_stamp(&m.msg_hdr)
                    .map(|ts| SimTime((ts - offset).clamp(0, now.0 as i128) as u64))
                    .unwrap_or(now)
                    .max(self.clock);
                self.clock = at;
                let seq = self.seq;
                self.seq = self.seq.wrapping_add(1);
                let len = m.msg_len as usize;
                let s = Self::slot(seq);
                self.seq_of[s] = seq;
                if !(14..=SLOT).contains(&len) || m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                    self.r.truncated += 1;
                    self.seq_of[s] = u32::MAX;
                    continue;
                }
                self.r.rx_pkts += 1;
                self.r.rx_bytes += len as u64;
                let fr = &self.ring[s * SLOT..s * SLOT + len];
                let p = frame::to_packet(fr, seq);
                if !self.flow_of.contains_key(&p.tuple) {
                    self.flow_of.insert(p.tuple, self.r.flows.len() as u32);
                    self.r.flows.push(frame::describe(fr));
                }
                // Towards the clients an unknown destination (none with static ARP) takes the first route.
                let route = match &self.route_of_dst {
                    Some(m) => frame::ipv4_dst(fr).and_then(|a| m.get(&a).copied()).unwrap_or(0),
                    None => input,
                };
                let Dir { path, due, .. } = self;
                path.advance(at, &mut |t, p| due.push((t, p)));
                path.arrive(at, route, p, &mut |t, p| due.push((t, p)));
            }
            if (n as usize) < BATCH {
                return;
            }
        }
    }

    /// Write the frames the captured links started sending since the last
    /// call, stamped with their virtual departure time and with the ECN and
    /// DSCP they carried then. Call before `tx`: the ring still holds them.
    fn drain_taps(&mut self) {
        for (i, st) in self.path.stages.iter_mut().enumerate() {
            let Some(Some(w)) = self.link_pcaps.get_mut(i) else { continue };
            for (t, p) in st.tapped.drain(..) {
                let s = Self::slot(p.frame);
                if self.seq_of[s] != p.frame {
                    continue; // overrun: the frame is gone (counted at tx)
                }
                let mut copy = [0u8; SLOT];
                let fr = &mut copy[..p.size as usize];
                fr.copy_from_slice(&self.ring[s * SLOT..s * SLOT + p.size as usize]);
                if frame::inspect(fr).ipv4 && fr[15] != p.tos() {
                    frame::set_tos(fr, p.tos());
                }
                if pcap_record(w, self.rt_base + i128::from(t.0), fr).is_err() {
                    self.link_pcaps[i] = None; // a full disk stops the capture, not the forwarding
                    break;
                }
            }
        }
    }

    /// Send every packet that is due, in batches (one socket per batch).
    fn tx(&mut self, now_ns: u64, t0: u64) {
        self.drain_taps();
        let mut iov: [libc::iovec; BATCH] = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; BATCH];
        // SAFETY: zeroed mmsghdr is a valid empty header.
        let mut mm: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        let now = now_ns - t0;
        let mut k = 0;
        while k < self.due.len() {
            let mut n = 0;
            let out_fd = self.out_fds[self.due[k].1.flow.0 as usize];
            while k < self.due.len() && n < BATCH && self.out_fds[self.due[k].1.flow.0 as usize] == out_fd {
                let (t, p) = self.due[k];
                k += 1;
                let s = Self::slot(p.frame);
                if self.seq_of[s] != p.frame {
                    self.r.ring_overruns += 1;
                    continue;
                }
                self.seq_of[s] = u32::MAX;
                let len = p.size as usize;
                let fr = &mut self.ring[s * SLOT..s * SLOT + len];
                if frame::inspect(fr).ipv4 && fr[15] != p.tos() && frame::set_tos(fr, p.tos()) {
                    self.r.ecn_rewrites += 1;
                }
                let late = now.saturating_sub(t.0);
                self.late_sum += late;
                self.late_n += 1;
                self.late_max = self.late_max.max(late);
                iov[n].iov_base = fr.as_mut_ptr() as *mut libc::c_void;
                iov[n].iov_len = len;
                mm[n].msg_hdr.msg_iov = &mut iov[n];
                mm[n].msg_hdr.msg_iovlen = 1;
                n += 1;
            }
            let mut sent = 0;
            while sent < n {
                // SAFETY: entries sent..n are valid headers.
                let r = unsafe {
                    libc::sendmmsg(out_fd, mm[sent..].as_mut_ptr(), (n - sent) as u32, 0)
                };
                if r > 0 {
                    let stamp = self.pcap.as_ref().map(|_| realtime_ns());
                    for v in &iov[sent..sent + r as usize] {
                        self.r.tx_pkts += 1;
                        self.r.tx_bytes += v.iov_len as u64;
                        self.tx_last_len = v.iov_len as u64;
                        if let (Some(w), Some(ts)) = (self.pcap.as_mut(), stamp) {
                            // SAFETY: iov entries point at live ring slots of iov_len bytes.
                            let fr = unsafe {
                                std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len)
                            };
                            if pcap_record(w, ts, fr).is_err() {
                                self.pcap = None; // a full disk stops the capture, not the forwarding
                            }
                        }
                    }
                    if self.tx_first == 0 {
                        self.tx_first = now_ns;
                    }
                    self.tx_last = now_ns;
                    sent += r as usize;
                } else {
                    self.r.tx_err += 1;
                    sent += 1;
                }
            }
        }
        self.due.clear();
    }

    fn report(&mut self) -> DirReport {
        self.r.sock_rx_drops += self.in_fds.iter().map(|&fd| sock_drops(fd)).sum::<u64>();
        let mut r = self.r.clone();
        if self.tx_last > self.tx_first {
            let span = (self.tx_last - self.tx_first) as f64 / 1e9;
            r.tx_span_s = span;
            r.achieved_rate_bps = (r.tx_bytes - self.tx_last_len) as f64 * 8.0 / span;
            if r.configured_rate_bps > 0 {
                r.achieved_over_configured = r.achieved_rate_bps / r.configured_rate_bps as f64;
            }
        }
        if self.late_n > 0 {
            r.timer_late_mean_us = self.late_sum as f64 / self.late_n as f64 / 1e3;
        }
        r.timer_late_max_us = self.late_max as f64 / 1e3;
        r.links = self.path.reports();
        r
    }
}

/// What the forwarder writes on exit.
#[derive(Debug, Serialize)]
pub struct ForwarderReport {
    pub duration_s: f64,
    pub realtime: bool,
    /// Whether idle CPUs were held out of sleep states (`/dev/cpu_dma_latency` at 0).
    pub cpu_latency_hold: bool,
    pub fwd: DirReport,
    pub rev: DirReport,
}

pub struct Options {
    /// The client hosts' interfaces, host k's at index k (route k).
    pub if_a: Vec<String>,
    pub if_b: String,
    pub realtime: bool,
    /// A file created once the sockets are open.
    pub ready: Option<String>,
    /// Where to write the per-packet records at the end (`packets.bin`).
    pub records: Option<String>,
    /// A directory for `fwd.pcap` and `rev.pcap`: every frame sent, as sent.
    pub pcap: Option<String>,
    /// Links whose frames go to `<link>.pcap` in `pcap_dir` as each starts
    /// sending them (`--pcap-link`).
    pub pcap_links: Vec<String>,
    pub pcap_dir: Option<String>,
}

/// Every stage of both directions records its state at `t` (ns since start).
fn sample_links(dirs: &mut [Dir], t: u64) {
    for d in dirs.iter_mut() {
        for (i, st) in d.path.stages.iter().enumerate() {
            d.series.push((t, i as u16, st.sample()));
        }
    }
}

/// Write the links' periodic samples to `path`: 56-byte little-endian
/// records (t_ns u64, stage u16, direction u8, pad u8, pad u32, then backlog
/// packets, backlog bytes, drops, marks, bytes sent as u64).
fn write_link_series(path: &std::path::Path, dirs: &[Dir]) -> io::Result<()> {
    use std::io::Write;
    let mut w = io::BufWriter::new(std::fs::File::create(path)?);
    for (d, dir) in dirs.iter().enumerate() {
        for (t, i, v) in &dir.series {
            w.write_all(&t.to_le_bytes())?;
            w.write_all(&i.to_le_bytes())?;
            w.write_all(&[d as u8, 0, 0, 0, 0, 0])?;
            for x in v {
                w.write_all(&x.to_le_bytes())?;
            }
        }
    }
    w.flush()
}

/// Write every stage's dequeue records to `path`: 28-byte little-endian
/// records (t_ns u64, sojourn_ns u64, stage u16, direction u8 (bit 0: 0
/// forward, 1 reverse; bit 1: the last link of the packet's route), class
/// u8, flow u32 (index into the direction's `flows`),
/// frame bytes u32), in stage order; ccbench's Python side turns them (and
/// `links.bin`) into the simulator's Parquet tables.
fn write_records(path: &std::path::Path, dirs: &[Dir]) -> io::Result<()> {
    use std::io::Write;
    let mut w = io::BufWriter::new(std::fs::File::create(path)?);
    for (d, dir) in dirs.iter().enumerate() {
        for (i, st) in dir.path.stages.iter().enumerate() {
            for r in &st.records {
                let flow = dir.flow_of.get(&r.tuple).copied().unwrap_or(u32::MAX);
                w.write_all(&r.t_ns.to_le_bytes())?;
                w.write_all(&r.sojourn_ns.to_le_bytes())?;
                w.write_all(&(i as u16).to_le_bytes())?;
                w.write_all(&[d as u8 | u8::from(r.last) << 1, r.class])?;
                w.write_all(&flow.to_le_bytes())?;
                w.write_all(&r.size.to_le_bytes())?;
            }
        }
    }
    w.flush()
}

/// Ask the kernel's PM QoS for zero CPU wake-up latency while the returned
/// file stays open (as cyclictest does): idle CPUs then poll instead of
/// entering sleep states — on a VM, halting the vCPU — whose wake-up would
/// be added to departures and to the hosts' replies (README, "Timing on a
/// virtual machine"). The kernel drops the request when the file closes,
/// at exit or SIGKILL alike, so nothing needs cleaning up.
fn hold_cpu_latency() -> Option<std::fs::File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).open("/dev/cpu_dma_latency").ok()?;
    f.write_all(&0i32.to_ne_bytes()).ok()?;
    Some(f)
}

/// A nanosecond pcap file (magic a1b23c4d) of Ethernet frames.
fn pcap_open(path: &std::path::Path) -> io::Result<io::BufWriter<std::fs::File>> {
    use std::io::Write;
    let mut w = io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    w.write_all(&0xa1b2_3c4du32.to_le_bytes())?;
    w.write_all(&2u16.to_le_bytes())?;
    w.write_all(&4u16.to_le_bytes())?;
    w.write_all(&[0u8; 8])?; // thiszone, sigfigs
    w.write_all(&65_535u32.to_le_bytes())?; // snaplen
    w.write_all(&1u32.to_le_bytes())?; // LINKTYPE_ETHERNET
    Ok(w)
}

fn pcap_record(w: &mut impl io::Write, realtime_ns: i128, fr: &[u8]) -> io::Result<()> {
    let (sec, ns) = (realtime_ns / 1_000_000_000, realtime_ns % 1_000_000_000);
    w.write_all(&(sec as u32).to_le_bytes())?;
    w.write_all(&(ns as u32).to_le_bytes())?;
    w.write_all(&(fr.len() as u32).to_le_bytes())?;
    w.write_all(&(fr.len() as u32).to_le_bytes())?;
    w.write_all(fr)
}

/// Run until SIGINT/SIGTERM, then return the report.
pub fn run(opt: &Options, fwd: EmuPath, rev: EmuPath) -> io::Result<ForwarderReport> {
    // SAFETY: installing a handler that only stores an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_stop as *const () as libc::sighandler_t);
        libc::prctl(libc::PR_SET_TIMERSLACK, 1u64);
    }
    let (mut realtime, mut latency_hold) = (false, None);
    if opt.realtime {
        latency_hold = hold_cpu_latency();
        let sp = libc::sched_param { sched_priority: 50 };
        // SAFETY: valid sched_param.
        realtime = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &sp) } == 0;
        if !realtime {
            eprintln!(
                "ccbench-emu: SCHED_FIFO not available ({}); timing will be noisier",
                io::Error::last_os_error()
            );
        }
    }
    if fwd.routes() != opt.if_a.len() || rev.routes() != opt.if_a.len() {
        return Err(io::Error::other(format!(
            "{} client interfaces for {} routes", opt.if_a.len(), fwd.routes()
        )));
    }
    let fa = opt.if_a.iter().map(|i| open_if(i)).collect::<io::Result<Vec<i32>>>()?;
    let fb = open_if(&opt.if_b)?;
    let mut dirs = [
        Dir::new("fwd", fa.clone(), vec![fb; fa.len()], fwd),
        Dir::new("rev", vec![fb], fa.clone(), rev),
    ];
    dirs[1].route_of_dst = Some(
        (0..fa.len())
            .map(|k| (crate::netns::client_ip(k).octets(), k))
            .collect(),
    );
    if let Some(dir) = &opt.pcap {
        for d in dirs.iter_mut() {
            d.pcap = Some(pcap_open(
                &std::path::Path::new(dir).join(format!("{}.pcap", d.name)),
            )?);
        }
    }
    EmuPath::check_links([&dirs[0].path, &dirs[1].path], &opt.pcap_links).map_err(io::Error::other)?;
    let pcap_dir = std::path::Path::new(opt.pcap_dir.as_deref().unwrap_or("."));
    for link in &opt.pcap_links {
        for d in dirs.iter_mut() {
            if let Some(i) = d.path.stages.iter().position(|st| st.name() == link) {
                d.path.stages[i].tap = true;
                d.link_pcaps.resize_with(d.path.stages.len(), || None);
                // A link id may be any string: as a file name it stays inside the directory.
                let name = ccbench_core::scenario::file_name(link);
                d.link_pcaps[i] = Some(pcap_open(&pcap_dir.join(format!("{name}.pcap")))?);
                break;
            }
        }
    }
    // Fault in and lock the rings and histograms now, so no page fault
    // lands in the middle of the run (the anchor's linkemu does the same).
    // SAFETY: plain syscall; failure only costs timing accuracy.
    unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if let Some(r) = &opt.ready {
        std::fs::write(r, b"ready\n")?;
    }

    let t0 = clock_ns();
    let rt_base = realtime_offset_ns() + i128::from(t0);
    for d in dirs.iter_mut() {
        d.rt_base = rt_base;
    }
    let mut pfd: Vec<libc::pollfd> = fa
        .iter()
        .chain([&fb])
        .map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: libc::POLLIN })
        .collect();
    // Spin budget (ns), the loop's last wake-up, whether this wait spins.
    let (mut budget, mut last) = (0i64, t0);
    let mut next_sample = 0u64;
    let mut spinning;
    while !STOP.load(Ordering::Relaxed) {
        // Samples due since the last pass, before this wake-up's arrivals: the
        // loop sleeps until the next packet event, not for samples (waking for
        // them cost the unloaded RTT), and nothing changes while it sleeps.
        let woke = clock_ns() - t0;
        while woke >= next_sample {
            sample_links(&mut dirs, next_sample);
            next_sample += SERIES_NS;
        }
        let (from_clients, from_server) = pfd.split_at(fa.len());
        dirs[0].rx(t0, from_clients);
        dirs[1].rx(t0, from_server);
        let now = clock_ns();
        for d in dirs.iter_mut() {
            let Dir { path, due, .. } = d;
            d.clock = d.clock.max(SimTime(now - t0));
            path.advance(d.clock, &mut |t, p| due.push((t, p)));
            d.tx(now, t0);
        }
        let next = dirs.iter().filter_map(|d| d.path.next_event()).min();
        let now = clock_ns() - t0;
        let ts;
        let tp = match next {
            Some(t) if t.0 <= now => {
                // No poll this pass: look at every input next time.
                pfd.iter_mut().for_each(|p| p.revents = libc::POLLIN);
                continue;
            }
            Some(t) => {
                // Sleep until SPIN_NS before the event, then poll without
                // blocking: a timer wake-up is ~0.1 ms late on average on a
                // VM, which would add to every delay. Spinning is budgeted
                // (SPIN_SHARE of wall time): under load the departure clock
                // keeps the rate exact anyway, and a SCHED_FIFO task that
                // spins without end gets throttled by the kernel.
                let dt = t.0 - now;
                let dt = if budget > 0 {
                    dt.saturating_sub(SPIN_NS)
                } else {
                    dt
                };
                spinning = dt == 0;
                ts = libc::timespec {
                    tv_sec: (dt / 1_000_000_000) as i64,
                    tv_nsec: (dt % 1_000_000_000) as i64,
                };
                &ts as *const libc::timespec
            }
            None => {
                spinning = false;
                std::ptr::null()
            }
        };
        // SAFETY: pfd and ts are valid for the call.
        unsafe { libc::ppoll(pfd.as_mut_ptr(), pfd.len() as libc::nfds_t, tp, std::ptr::null()) };
        let after = clock_ns();
        let elapsed = (after - last) as i64;
        last = after;
        budget = (budget - if spinning { elapsed } else { 0 } + elapsed / SPIN_SHARE)
            .min(SPIN_BUDGET_MAX);
    }
    let end = clock_ns() - t0;
    sample_links(&mut dirs, end); // the state at the stop
    let dur = end as f64 / 1e9;
    if let Some(p) = &opt.records {
        let p = std::path::Path::new(p);
        write_records(p, &dirs)?;
        write_link_series(&p.with_file_name("links.bin"), &dirs)?;
    }
    for d in dirs.iter_mut() {
        d.drain_taps();
        if let Some(mut w) = d.pcap.take() {
            use std::io::Write;
            w.flush()?;
        }
        for mut w in d.link_pcaps.drain(..).flatten() {
            use std::io::Write;
            w.flush()?;
        }
    }
    let [mut a, mut b] = dirs;
    let _ = (a.name, b.name);
    Ok(ForwarderReport {
        duration_s: dur,
        realtime,
        cpu_latency_hold: latency_hold.is_some(),
        fwd: a.report(),
        rev: b.report(),
    })
}
