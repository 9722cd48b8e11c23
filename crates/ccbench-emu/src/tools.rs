//! Tiny UDP traffic programs for tests and checks (this machine has no
//! iperf3 or ping): a paced sender with a chosen TOS byte, a sink that
//! counts ECN codepoints as received (IP_RECVTOS), and an echo pair for RTT.
//! Each prints one JSON object on stdout.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use serde_json::json;

fn set_tos(s: &UdpSocket, tos: u8) -> Result<(), String> {
    let v = i32::from(tos);
    // SAFETY: valid fd and int.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_TOS,
            &v as *const i32 as *const libc::c_void,
            4,
        )
    };
    if r < 0 {
        return Err(format!("IP_TOS: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Send 1472 B datagrams (1514 B frames) to `dst` at `mbps` of frame bytes
/// for `secs`, with TOS byte `tos`; each carries its sequence number (u64,
/// big-endian) in its first 8 bytes.
pub fn blast(dst: &str, mbps: f64, secs: f64, tos: u8) -> Result<serde_json::Value, String> {
    let s = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
    set_tos(&s, tos)?;
    s.connect(dst).map_err(|e| format!("{dst}: {e}"))?;
    let gap = Duration::from_secs_f64(1514.0 * 8.0 / (mbps * 1e6));
    let mut buf = [0x5au8; 1472];
    let t0 = Instant::now();
    let end = Duration::from_secs_f64(secs);
    let (mut sent, mut err) = (0u64, 0u64);
    let mut next = Duration::ZERO;
    while next < end {
        let el = t0.elapsed();
        if el < next {
            std::thread::sleep(next - el);
        }
        buf[..8].copy_from_slice(&(sent + err).to_be_bytes());
        match s.send(&buf) {
            Ok(_) => sent += 1,
            Err(_) => err += 1,
        }
        next += gap;
    }
    Ok(json!({"sent": sent, "errors": err}))
}

/// Receive on `port` until `secs` have passed since the first datagram
/// (or `secs` + 5 s of nothing); count ECN codepoints and reordered
/// datagrams (RFC 4737: a sequence number below one already received).
pub fn sink(port: u16, secs: f64) -> Result<serde_json::Value, String> {
    let s = UdpSocket::bind(("0.0.0.0", port)).map_err(|e| e.to_string())?;
    let one = 1i32;
    // SAFETY: valid fd and int.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_RECVTOS,
            &one as *const i32 as *const libc::c_void,
            4,
        )
    };
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .map_err(|e| e.to_string())?;
    println!("{}", json!({"listening": port}));
    let mut ecn = [0u64; 4];
    let (mut pkts, mut bytes, mut reordered) = (0u64, 0u64, 0u64);
    let mut max_seq: Option<u64> = None;
    let t0 = Instant::now();
    let mut first: Option<Instant> = None;
    let mut buf = [0u8; 2048];
    let mut cbuf = [0u64; 16];
    loop {
        let limit = first.map_or(secs + 5.0, |f| secs + f.duration_since(t0).as_secs_f64());
        if t0.elapsed().as_secs_f64() > limit {
            break;
        }
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: zeroed msghdr then valid pointers.
        let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
        mh.msg_iov = &mut iov;
        mh.msg_iovlen = 1;
        mh.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        mh.msg_controllen = std::mem::size_of_val(&cbuf);
        // SAFETY: mh is valid.
        let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut mh, 0) };
        if n < 0 {
            continue; // timeout
        }
        first.get_or_insert_with(Instant::now);
        pkts += 1;
        if n >= 8 {
            let seq = u64::from_be_bytes(buf[..8].try_into().expect("8 bytes"));
            if max_seq.is_some_and(|m| seq < m) {
                reordered += 1;
            }
            max_seq = Some(max_seq.map_or(seq, |m| m.max(seq)));
        }
        bytes += n as u64;
        // SAFETY: walking the control buffer the kernel filled.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&mh);
            while !c.is_null() {
                if (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_TOS {
                    let tos = *libc::CMSG_DATA(c);
                    ecn[usize::from(tos & 3)] += 1;
                }
                c = libc::CMSG_NXTHDR(&mh, c);
            }
        }
    }
    Ok(
        json!({"pkts": pkts, "bytes": bytes, "reordered": reordered, "not_ect": ecn[0], "ect1": ecn[1], "ect0": ecn[2], "ce": ecn[3]}),
    )
}

/// Echo datagrams back to their sender, forever. A datagram of at least
/// 24 B goes back with bytes 8..24 replaced by the kernel's arrival stamp of
/// the request and the time just before the reply is sent (ns of
/// CLOCK_REALTIME, big-endian), so that `ping` can take this server's own
/// wake-up out of the RTT, as irtt does with its server timestamps.
pub fn echo(port: u16) -> Result<serde_json::Value, String> {
    let s = UdpSocket::bind(("0.0.0.0", port)).map_err(|e| e.to_string())?;
    let _ = crate::clock::enable_rx_stamps(s.as_raw_fd());
    let mut buf = [0u8; 2048];
    loop {
        // SAFETY: a zeroed sockaddr_storage is a valid empty address.
        let mut from: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let Some((n, stamp)) = recv_stamped(s.as_raw_fd(), &mut buf, Some(&mut from)) else { continue };
        if n >= 24 {
            let rx = stamp.unwrap_or(0) as i64;
            buf[8..16].copy_from_slice(&rx.to_be_bytes());
            buf[16..24].copy_from_slice(&(crate::clock::realtime_ns() as i64).to_be_bytes());
        }
        // SAFETY: buf holds n bytes; `from` is the address recvmsg filled in.
        unsafe {
            libc::sendto(
                s.as_raw_fd(),
                buf.as_ptr() as *const libc::c_void,
                n,
                0,
                &from as *const libc::sockaddr_storage as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_storage>() as u32,
            )
        };
    }
}

/// Receive one datagram into `buf` (and its sender into `from`); its length
/// and the kernel's arrival stamp (SO_TIMESTAMPNS, ns of CLOCK_REALTIME) if
/// there is one.
fn recv_stamped(fd: i32, buf: &mut [u8], from: Option<&mut libc::sockaddr_storage>) -> Option<(usize, Option<i128>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut ctl = [0u64; crate::clock::CTL_WORDS];
    // SAFETY: zeroed msghdr is valid; iov, ctl and from outlive the call.
    let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
    h.msg_iov = &mut iov;
    h.msg_iovlen = 1;
    h.msg_control = ctl.as_mut_ptr() as *mut libc::c_void;
    h.msg_controllen = std::mem::size_of_val(&ctl);
    if let Some(from) = from {
        h.msg_name = from as *mut libc::sockaddr_storage as *mut libc::c_void;
        h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as u32;
    }
    // SAFETY: h describes valid buffers.
    let n = unsafe { libc::recvmsg(fd, &mut h, 0) };
    if n < 0 {
        return None;
    }
    Some((n as usize, crate::clock::rx_stamp(&h)))
}

/// The time an echo server held a reply (its send stamp minus its arrival
/// stamp, bytes 8..24 of the reply), in ns, when it wrote both.
fn server_dwell(reply: &[u8]) -> Option<i128> {
    let word = |i: usize| Some(i64::from_be_bytes(reply.get(i..i + 8)?.try_into().ok()?));
    let (rx, tx) = (word(8)?, word(16)?);
    (rx > 0 && tx >= rx).then_some(i128::from(tx - rx))
}

/// Send `count` 64 B probes every `interval_ms` to an echo server and report
/// RTT statistics in ms. A reply's time is the kernel's arrival stamp, as
/// ping(8) takes it: this process's own wake-up is not part of the RTT; nor
/// is the echo server's, when it reports how long it held the probe (as
/// `echo` does; `server_dwell_*` says how long that was).
pub fn ping(dst: &str, count: u32, interval_ms: f64) -> Result<serde_json::Value, String> {
    let s = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
    s.connect(dst).map_err(|e| format!("{dst}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    // Without stamps (an old kernel) the RTT is taken when the reply is read.
    let _ = crate::clock::enable_rx_stamps(s.as_raw_fd());
    let (mut rtts, mut dwells) = (Vec::new(), Vec::new());
    let mut buf = [0u8; 64];
    for seq in 0..count {
        let t = Instant::now();
        let mut msg = [0u8; 64];
        msg[..4].copy_from_slice(&seq.to_be_bytes());
        let sent = crate::clock::realtime_ns();
        let _ = s.send(&msg);
        while let Some((n, stamp)) = recv_stamped(s.as_raw_fd(), &mut buf, None) {
            if n >= 4 && buf[..4] == seq.to_be_bytes() {
                let dwell = server_dwell(&buf[..n]);
                dwells.extend(dwell.map(|d| d as f64 / 1e6));
                rtts.push(match stamp {
                    Some(at) => (at - sent - dwell.unwrap_or(0)) as f64 / 1e6,
                    None => t.elapsed().as_secs_f64() * 1e3,
                });
                break;
            }
        }
        let el = t.elapsed().as_secs_f64() * 1e3;
        if el < interval_ms {
            std::thread::sleep(Duration::from_secs_f64((interval_ms - el) / 1e3));
        }
    }
    dwells.sort_by(f64::total_cmp);
    let mut v = rtts;
    v.sort_by(f64::total_cmp);
    let q = |p: f64| at_rank(&v, p);
    let mean = if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    };
    Ok(
        json!({"sent": count, "received": v.len(), "mean_ms": mean, "min_ms": q(0.0), "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": q(1.0),
               "server_dwell_p50_ms": at_rank(&dwells, 0.5), "server_dwell_max_ms": at_rank(&dwells, 1.0)}),
    )
}

/// The sample of rank ⌊p·n⌋ of sorted `v` (the last for p = 1), NaN if there is none.
fn at_rank(v: &[f64], p: f64) -> f64 {
    match v.len() {
        0 => f64::NAN,
        n => v[((p * n as f64) as usize).min(n - 1)],
    }
}

/// Accept one TCP connection on `port`, read until EOF, report the bytes,
/// goodput (first byte to EOF) and the connection's congestion control,
/// then answer "done" and close (which tells the sender). With `cc` the
/// listener runs that congestion control, which its connections inherit:
/// Linux answers an AccECN SYN with AccECN only when the listener's
/// algorithm asks for it (`TCP_CONG_NEEDS_ACCECN`), so a Prague receiver
/// needs it.
pub fn tcp_sink(port: u16, cc: Option<&str>) -> Result<serde_json::Value, String> {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    let l = std::net::TcpListener::bind(("0.0.0.0", port)).map_err(|e| e.to_string())?;
    if let Some(cc) = cc {
        set_cc(l.as_raw_fd(), cc)?;
    }
    let (mut s, _) = l.accept().map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    let t0 = Instant::now();
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => bytes += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let v = json!({"bytes": bytes, "secs": secs, "goodput_mbps": bytes as f64 * 8.0 / secs / 1e6,
                   "cc": cc_of(s.as_raw_fd())});
    println!("{v}");
    let _ = std::io::stdout().flush();
    let _ = s.write_all(b"done");
    Ok(v)
}

fn tcp_info(fd: i32) -> libc::tcp_info {
    // SAFETY: zeroed tcp_info is valid; len matches.
    unsafe {
        let mut ti: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut ti as *mut _ as *mut libc::c_void,
            &mut len,
        );
        ti
    }
}

/// Set socket `fd`'s congestion control.
fn set_cc(fd: i32, cc: &str) -> Result<(), String> {
    // SAFETY: a plain setsockopt on a caller's socket with a valid buffer.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr() as *const libc::c_void,
            cc.len() as u32,
        )
    };
    if r < 0 {
        return Err(format!(
            "TCP_CONGESTION {cc}: {} (see /proc/sys/net/ipv4/tcp_available_congestion_control)",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Socket `fd`'s congestion control.
fn cc_of(fd: i32) -> String {
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: valid buffer and length.
    unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    String::from_utf8_lossy(&name[..len as usize])
        .trim_end_matches('\0')
        .to_string()
}

/// A bulk TCP sender with congestion control `cc` set *before* connect
/// (so the socket never runs the namespace default; cf. the kernel anchor's
/// note on iperf3 `-C`). Sends for `secs`, samples `tcpi_rtt` every 100 ms,
/// then waits for the sink's report and prints sender figures.
pub fn tcp_bulk(dst: &str, cc: &str, secs: f64) -> Result<serde_json::Value, String> {
    use std::io::{Read, Write};
    use std::os::fd::FromRawFd;
    let addr: std::net::SocketAddrV4 = dst
        .parse()
        .map_err(|_| format!("bad address {dst} (want IPv4:PORT)"))?;
    // SAFETY: plain socket calls with checked results; the fd is handed to TcpStream.
    let mut s = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        set_cc(fd, cc)?;
        let sa = libc::sockaddr_in {
            sin_family: libc::AF_INET as u16,
            sin_port: addr.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(addr.ip().octets()),
            },
            sin_zero: [0; 8],
        };
        // Retry while the sink starts listening.
        let mut tries = 0;
        while libc::connect(
            fd,
            &sa as *const _ as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as u32,
        ) < 0
        {
            tries += 1;
            if tries > 50 {
                return Err(format!(
                    "connect {dst}: {}",
                    std::io::Error::last_os_error()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        std::net::TcpStream::from_raw_fd(fd)
    };
    let fd = s.as_raw_fd();
    let used = cc_of(fd);
    let buf = vec![0u8; 1 << 16];
    // A blocked write waits until a third of the send buffer is free (up to
    // a quarter of a second at 50 Mbit/s with Linux's 4 MB tcp_wmem), longer
    // the longer the queue: sampling only between writes would weigh short
    // round trips more than long ones. Writes time out instead, so the
    // samples keep the 100 ms clock and their mean is the mean over time.
    s.set_write_timeout(Some(Duration::from_millis(10))).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let mut next_sample = Duration::ZERO;
    let mut rtts = Vec::new();
    let mut trace = Vec::new();
    let mut sent = 0u64;
    while t0.elapsed().as_secs_f64() < secs {
        match s.write(&buf) {
            Ok(n) => sent += n as u64,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(e.to_string()),
        }
        if t0.elapsed() >= next_sample {
            let ti = tcp_info(fd);
            if ti.tcpi_rtt > 0 {
                rtts.push(f64::from(ti.tcpi_rtt) / 1e3);
            }
            // (s, cwnd, packets in flight, ssthresh, sRTT ms, snd_wnd bytes,
            // pacing and delivery rate Mbit/s, min RTT ms)
            trace.push(json!([
                (t0.elapsed().as_secs_f64() * 1e3).round() / 1e3,
                ti.tcpi_snd_cwnd,
                ti.tcpi_unacked
                    .saturating_sub(ti.tcpi_sacked + ti.tcpi_lost)
                    + ti.tcpi_retrans,
                ti.tcpi_snd_ssthresh,
                f64::from(ti.tcpi_rtt) / 1e3,
                ti.tcpi_snd_wnd,
                ti.tcpi_pacing_rate as f64 * 8e-6,
                ti.tcpi_delivery_rate as f64 * 8e-6,
                f64::from(ti.tcpi_min_rtt) / 1e3
            ]));
            // A host stall past several sample times takes one sample.
            while next_sample <= t0.elapsed() {
                next_sample += Duration::from_millis(100);
            }
        }
    }
    let ti = tcp_info(fd);
    s.shutdown(std::net::Shutdown::Write)
        .map_err(|e| e.to_string())?;
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    let srtt = if rtts.is_empty() {
        f64::NAN
    } else {
        rtts.iter().sum::<f64>() / rtts.len() as f64
    };
    let hystart = std::fs::read_to_string("/proc/net/netstat").ok().and_then(|t| hystart_exit(&t));
    // Time limited by the receive window and by the send buffer, of the time busy (tcp_info, µs).
    let v = json!({"cc": used, "hystart": hystart, "sent_bytes": sent, "secs": secs, "retransmits": ti.tcpi_total_retrans,
                   "srtt_mean_ms": srtt, "srtt_samples": rtts.len(), "cwnd_last": ti.tcpi_snd_cwnd,
                   "busy_us": ti.tcpi_busy_time, "rwnd_limited_us": ti.tcpi_rwnd_limited,
                   "sndbuf_limited_us": ti.tcpi_sndbuf_limited,
                   "dsack_dups": ti.tcpi_dsack_dups, "reord_seen": ti.tcpi_reord_seen,
                   "delivered": ti.tcpi_delivered, "delivered_ce": ti.tcpi_delivered_ce,
                   "trace": {"columns": ["time_s", "cwnd", "in_flight", "ssthresh", "srtt_ms", "snd_wnd",
                                         "pacing_mbps", "delivery_mbps", "min_rtt_ms"],
                             "rows": trace}});
    let _ = std::io::stdout().flush();
    Ok(v)
}

/// Where HyStart ended slow start, from /proc/net/netstat's TcpExt counters
/// of this host's namespace (its one connection): `{"by", "cwnd", "count"}` from
/// TCPHystartTrainDetect/TrainCwnd or TCPHystartDelayDetect/DelayCwnd,
/// None if neither fired. An RTO restarts HyStart: after more than one
/// exit the counter holds their sum, so `cwnd` is null and `count` says why.
fn hystart_exit(netstat: &str) -> Option<serde_json::Value> {
    let mut lines = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let counter = |name: &str| {
        let i = names.split_whitespace().position(|n| n == name)?;
        values.split_whitespace().nth(i)?.parse::<u64>().ok()
    };
    [("ack-train", "TCPHystartTrainDetect", "TCPHystartTrainCwnd"), ("delay", "TCPHystartDelayDetect", "TCPHystartDelayCwnd")]
        .into_iter()
        .find_map(|(by, detect, cwnd)| counter(detect).filter(|&n| n > 0).map(|n| (by, n, cwnd)))
        .map(|(by, n, cwnd)| json!({"by": by, "cwnd": if n == 1 { counter(cwnd) } else { None }, "count": n}))
}

#[cfg(test)]
mod tests {
    use super::{hystart_exit, server_dwell};
    use serde_json::json;

    #[test]
    fn hystart_exit_reads_the_detector_and_cwnd_from_netstat() {
        let netstat = |train: u64, delay: u64| {
            format!(
                "TcpExt: SyncookiesSent TCPHystartTrainDetect TCPHystartTrainCwnd TCPHystartDelayDetect TCPHystartDelayCwnd\n\
                 TcpExt: 0 {} {} {} {}\nIpExt: InNoRoutes\nIpExt: 0\n",
                u64::from(train > 0),
                train,
                u64::from(delay > 0),
                delay
            )
        };
        assert_eq!(hystart_exit(&netstat(246, 0)), Some(json!({"by": "ack-train", "cwnd": 246, "count": 1})));
        assert_eq!(hystart_exit(&netstat(0, 503)), Some(json!({"by": "delay", "cwnd": 503, "count": 1})));
        let twice = netstat(0, 0).replace("TcpExt: 0 0 0 0 0", "TcpExt: 0 0 0 2 700");
        assert_eq!(hystart_exit(&twice), Some(json!({"by": "delay", "cwnd": null, "count": 2})));
        assert_eq!(hystart_exit(&netstat(0, 0)), None);
        assert_eq!(hystart_exit("IpExt: InNoRoutes\nIpExt: 0\n"), None);
    }

    fn reply(rx: i64, tx: i64) -> Vec<u8> {
        let mut r = vec![0u8; 64];
        r[8..16].copy_from_slice(&rx.to_be_bytes());
        r[16..24].copy_from_slice(&tx.to_be_bytes());
        r
    }

    #[test]
    fn dwell_is_the_servers_send_minus_arrival_stamp() {
        assert_eq!(server_dwell(&reply(1_000_000_000, 1_000_045_000)), Some(45_000));
        assert_eq!(server_dwell(&reply(7, 7)), Some(0));
    }

    #[test]
    fn no_dwell_without_both_stamps() {
        // A plain echo (the probe's zeros), a send before the arrival, a short reply.
        assert_eq!(server_dwell(&reply(0, 0)), None);
        assert_eq!(server_dwell(&reply(0, 5)), None);
        assert_eq!(server_dwell(&reply(10, 9)), None);
        assert_eq!(server_dwell(&reply(10, 20)[..23]), None);
    }
}
