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
/// for `secs`, with TOS byte `tos`.
pub fn blast(dst: &str, mbps: f64, secs: f64, tos: u8) -> Result<serde_json::Value, String> {
    let s = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
    set_tos(&s, tos)?;
    s.connect(dst).map_err(|e| format!("{dst}: {e}"))?;
    let gap = Duration::from_secs_f64(1514.0 * 8.0 / (mbps * 1e6));
    let buf = [0x5au8; 1472];
    let t0 = Instant::now();
    let end = Duration::from_secs_f64(secs);
    let (mut sent, mut err) = (0u64, 0u64);
    let mut next = Duration::ZERO;
    while next < end {
        let el = t0.elapsed();
        if el < next {
            std::thread::sleep(next - el);
        }
        match s.send(&buf) {
            Ok(_) => sent += 1,
            Err(_) => err += 1,
        }
        next += gap;
    }
    Ok(json!({"sent": sent, "errors": err}))
}

/// Receive on `port` until `secs` have passed since the first datagram
/// (or `secs` + 5 s of nothing); count ECN codepoints.
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
    let (mut pkts, mut bytes) = (0u64, 0u64);
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
        json!({"pkts": pkts, "bytes": bytes, "not_ect": ecn[0], "ect1": ecn[1], "ect0": ecn[2], "ce": ecn[3]}),
    )
}

/// Echo datagrams back to their sender, forever.
pub fn echo(port: u16) -> Result<serde_json::Value, String> {
    let s = UdpSocket::bind(("0.0.0.0", port)).map_err(|e| e.to_string())?;
    let mut buf = [0u8; 2048];
    loop {
        if let Ok((n, from)) = s.recv_from(&mut buf) {
            let _ = s.send_to(&buf[..n], from);
        }
    }
}

/// Send `count` 64 B probes every `interval_ms` to an echo server and report
/// RTT statistics in ms.
pub fn ping(dst: &str, count: u32, interval_ms: f64) -> Result<serde_json::Value, String> {
    let s = UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
    s.connect(dst).map_err(|e| format!("{dst}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    let mut rtts = Vec::new();
    let mut buf = [0u8; 64];
    for seq in 0..count {
        let t = Instant::now();
        let mut msg = [0u8; 64];
        msg[..4].copy_from_slice(&seq.to_be_bytes());
        let _ = s.send(&msg);
        while let Ok(n) = s.recv(&mut buf) {
            if n >= 4 && buf[..4] == seq.to_be_bytes() {
                rtts.push(t.elapsed().as_secs_f64() * 1e3);
                break;
            }
        }
        let el = t.elapsed().as_secs_f64() * 1e3;
        if el < interval_ms {
            std::thread::sleep(Duration::from_secs_f64((interval_ms - el) / 1e3));
        }
    }
    let mut v = rtts.clone();
    v.sort_by(f64::total_cmp);
    let q = |p: f64| {
        if v.is_empty() {
            f64::NAN
        } else {
            v[((p * v.len() as f64) as usize).min(v.len() - 1)]
        }
    };
    let mean = if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    };
    Ok(
        json!({"sent": count, "received": v.len(), "mean_ms": mean, "min_ms": q(0.0), "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": v.last().copied().unwrap_or(f64::NAN)}),
    )
}
