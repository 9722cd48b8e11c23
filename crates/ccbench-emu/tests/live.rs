//! Live emulation tests: real packets between namespaces. They need root and
//! `ip` (iproute2) and fail, never skip, without them. Timing-sensitive: run
//! serially and optimized (`cargo test --release -p ccbench-emu --test live --
//! --test-threads=1`: the forwarder's timing is what they measure;
//! a lock serializes them anyway). Each run is bounded by a timeout and the
//! session removes its namespaces whatever happens.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());
const EXE: &str = env!("CARGO_BIN_EXE_ccbench-emu");

fn prereqs() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "the live emulation tests need root (namespaces, AF_PACKET)"
    );
    assert!(
        Command::new("ip").arg("-V").output().is_ok(),
        "`ip` is missing: apt-get install -y iproute2"
    );
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ccb-emu-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn scenario(d: &Path, fwd_link: &str) -> PathBuf {
    let p = d.join("s.toml");
    let text = format!(
        "name = 't'\nduration = '10s'\n[[links]]\n{fwd_link}\n[[links]]\nid = 'ret'\ndelay = '10ms'\n\
         [[flows]]\nid = 'f'\nkind = 'ping'\npath = ['bn']\nreverse = ['ret']\n"
    );
    std::fs::write(&p, text).unwrap();
    p
}

/// `udp-blast ARGS` (Mbit/s, seconds[, TOS]) from the client to a `udp-sink`
/// that stops 4 s after its first datagram; the sink's report (its text).
fn blast_through_sink(d: &Path, scen: &Path, args: &str) -> String {
    let sink = format!("{EXE} udp-sink 9000 4 > {}", d.join("sink.json").display());
    let client = format!("{EXE} udp-blast 10.201.0.2:9000 {args} && sleep 2");
    let out = emulate(
        d,
        scen,
        &[&sink],
        &["sh", "-c", &client],
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(100));
    std::fs::read_to_string(d.join("sink.json")).unwrap_or_default()
}

/// Run `ccbench-emu run` with a hard timeout; returns its output.
fn emulate(d: &Path, scen: &Path, server: &[&str], client: &[&str], limit: Duration) -> Output {
    let mut cmd = Command::new(EXE);
    cmd.arg("run").arg(scen).arg("-o").arg(d.join("out"));
    for s in server {
        cmd.args(["--server", s]);
    }
    cmd.arg("--")
        .args(client)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            // SAFETY: our own child; SIGTERM lets it clean up.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let out = child.wait_with_output().unwrap();
            panic!(
                "emulation timed out; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn summary(d: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(d.join("out/summary.json")).unwrap()).unwrap()
}

fn last_json(out: &[u8]) -> Value {
    let s = String::from_utf8_lossy(out);
    serde_json::from_str(
        s.lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .expect("a JSON line"),
    )
    .unwrap()
}

fn ours(pid: u32) -> Vec<String> {
    let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("ccb-{pid}-")))
        .map(String::from)
        .collect()
}

/// Saturate a rate-limited pfifo link with UDP at 1.3x its rate for 5 s and
/// measure the forwarder's real output rate (frame bytes between the first
/// and last write).
fn rate_check(mbit: u32) {
    prereqs();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir(&format!("rate{mbit}"));
    let s = scenario(&d, &format!("id = 'bn'\nrate = '{mbit}Mbit'\ndelay = '5ms'\nqdisc = {{ kind = 'pfifo', limit = {} }}", mbit * 10));
    let offered = format!("{}", f64::from(mbit) * 1.3);
    let out = emulate(
        &d,
        &s,
        &[&format!("{EXE} udp-sink 9000 6")],
        &[EXE, "udp-blast", "10.201.0.2:9000", &offered, "5"],
        Duration::from_secs(40),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sm = summary(&d);
    let f = &sm["emulator"]["fwd"];
    let ratio = f["achieved_over_configured"].as_f64().unwrap();
    eprintln!(
        "{mbit} Mbit/s: achieved/configured {ratio:.5} over {:.2} s, tx {} pkts, late mean {} us max {} us, sock drops {}, drops {}, utilization {}",
        f["tx_span_s"], f["tx_pkts"], f["timer_late_mean_us"], f["timer_late_max_us"], f["sock_rx_drops"], f["links"][0]["drops_overlimit"],
        f["links"][0]["utilization"]
    );
    assert!(f["tx_span_s"].as_f64().unwrap() > 4.5);
    assert!(
        f["links"][0]["drops_overlimit"].as_u64().unwrap() > 0,
        "the link was not saturated"
    );
    assert_eq!(f["ring_overruns"], 0);
    assert!(
        (ratio - 1.0).abs() <= 0.005,
        "achieved/configured = {ratio}"
    );
}

#[test]
fn rate_10mbit_within_half_percent() {
    rate_check(10);
}

#[test]
fn rate_100mbit_within_half_percent() {
    rate_check(100);
}

/// 10 ms each way: the UDP echo RTT's median is within 0.5 ms of 20 ms and
/// no probe comes back faster than configured.
#[test]
fn unloaded_rtt_matches_configured() {
    prereqs();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir("rtt");
    let s = scenario(&d, "id = 'bn'\nrate = '100Mbit'\ndelay = '10ms'");
    let out = emulate(
        &d,
        &s,
        &[&format!("{EXE} udp-echo 7000")],
        &[EXE, "udp-ping", "10.201.0.2:7000", "100", "20"],
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = last_json(&out.stdout);
    eprintln!("rtt: {r}");
    assert_eq!(r["received"], 100);
    // Configured: 2 x 10 ms + serialization of a 106 B frame at 100 Mbit/s.
    let configured = 20.0 + 106.0 * 8.0 / 100e6 * 1e3;
    assert!(r["min_ms"].as_f64().unwrap() >= configured - 0.01, "{r}");
    assert!(
        (r["p50_ms"].as_f64().unwrap() - configured).abs() <= 0.5,
        "{r}"
    );
}

/// DualPI2 (the simulator's code) marks a real ECT(1) flow that overloads
/// it, and the CE marks arrive at the receiving socket with valid IPv4
/// checksums (the kernel drops bad ones before IP_RECVTOS sees them).
#[test]
fn dualpi2_marks_reach_the_receiver() {
    prereqs();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir("dualpi2");
    let s = scenario(
        &d,
        "id = 'bn'\nrate = '10Mbit'\ndelay = '5ms'\nqdisc = { kind = 'dualpi2' }",
    );
    // The sink (server) stops 4 s after its first datagram; the client
    // blasts ECT(1) at 12 Mbit/s for 3 s and then waits for it.
    let sink_text = blast_through_sink(&d, &s, "12 3 1");
    let sm = summary(&d);
    let link = &sm["emulator"]["fwd"]["links"][0];
    let marks = link["marks"].as_u64().unwrap();
    let rewrites = sm["emulator"]["fwd"]["ecn_rewrites"].as_u64().unwrap();
    eprintln!("dualpi2: link {link}\nsink {sink_text}");
    assert!(marks > 50, "DualPI2 marked only {marks}");
    assert!(
        rewrites >= marks.saturating_sub(1),
        "rewrites {rewrites} < marks {marks}"
    );
    let sink = last_json(sink_text.as_bytes());
    let ce = sink["ce"].as_u64().unwrap();
    assert!(
        ce > 50 && ce <= marks,
        "receiver saw {ce} CE of {marks} marks"
    );
    assert_eq!(
        sink["ect1"].as_u64().unwrap() + ce,
        sink["pkts"].as_u64().unwrap(),
        "only ECT(1) and CE arrive"
    );
    assert_eq!(
        sink["pkts"].as_u64().unwrap(),
        link["tx_pkts"].as_u64().unwrap(),
        "every forwarded datagram was accepted"
    );
}

/// Processes whose parent is `pid`: (pid, argv[0..]).
fn children(pid: u32) -> Vec<(u32, String)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
        let ppid: u32 = after
            .split_whitespace()
            .nth(1)
            .and_then(|x| x.parse().ok())
            .unwrap_or(0);
        if ppid == pid {
            let cmd = std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .unwrap_or_default()
                .replace('\0', " ");
            v.push((p, cmd));
        }
    }
    v
}

fn wait_for<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let t = Instant::now();
    loop {
        if let Some(x) = f() {
            return x;
        }
        assert!(t.elapsed() < limit, "timed out");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Start a session whose client sleeps; return it once its forwarder is up.
fn start_sleeping(d: &Path) -> std::process::Child {
    let s = scenario(d, "id = 'bn'\nrate = '10Mbit'\ndelay = '5ms'");
    let c = Command::new(EXE)
        .arg("run")
        .arg(&s)
        .arg("-o")
        .arg(d.join("out"))
        .args(["--", "sleep", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = c.id();
    wait_for(Duration::from_secs(15), || {
        children(pid)
            .iter()
            .any(|(_, cmd)| cmd.starts_with("sleep"))
            .then_some(())
    });
    assert_eq!(ours(pid).len(), 3);
    c
}

fn kill9(pid: u32) {
    // SAFETY: a process this test started (or its child).
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

fn wait_exit(mut c: std::process::Child, limit: Duration) -> (std::process::ExitStatus, String) {
    let st = wait_for(limit, || c.try_wait().unwrap());
    let mut err = String::new();
    use std::io::Read;
    c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (st, err)
}

#[test]
fn cleanup_after_sigkill_of_the_forwarder() {
    prereqs();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir("kill-fw");
    let c = start_sleeping(&d);
    let pid = c.id();
    let fw = children(pid)
        .into_iter()
        .find(|(_, cmd)| cmd.contains(" forward "))
        .expect("forwarder");
    kill9(fw.0);
    let (st, err) = wait_exit(c, Duration::from_secs(15));
    assert!(!st.success());
    assert!(err.contains("forwarder exited"), "{err}");
    assert!(ours(pid).is_empty(), "namespaces left: {:?}", ours(pid));
}

#[test]
fn cleanup_after_sigkill_of_a_child() {
    prereqs();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir("kill-child");
    let c = start_sleeping(&d);
    let pid = c.id();
    let sl = children(pid)
        .into_iter()
        .find(|(_, cmd)| cmd.starts_with("sleep"))
        .unwrap();
    kill9(sl.0);
    let (st, _) = wait_exit(c, Duration::from_secs(15));
    assert!(!st.success(), "a killed client is not success");
    assert!(ours(pid).is_empty(), "namespaces left: {:?}", ours(pid));
    assert!(children(pid).is_empty());
}

#[test]
fn cleanup_after_sigterm_and_after_sigkill_of_the_session() {
    prereqs();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // SIGTERM: the session tears down by itself.
    let d = dir("term");
    let c = start_sleeping(&d);
    let pid = c.id();
    // SAFETY: our child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let (st, err) = wait_exit(c, Duration::from_secs(15));
    assert!(!st.success());
    assert!(err.contains("interrupted"), "{err}");
    assert!(ours(pid).is_empty());
    // SIGKILL: children die with it (PDEATHSIG); the next start (here
    // `cleanup`) removes the namespaces.
    let d = dir("kill-session");
    let c = start_sleeping(&d);
    let pid = c.id();
    let kids: Vec<u32> = children(pid).into_iter().map(|(p, _)| p).collect();
    kill9(pid);
    let (_, _) = wait_exit(c, Duration::from_secs(5));
    wait_for(Duration::from_secs(5), || {
        kids.iter()
            .all(|k| !std::path::Path::new(&format!("/proc/{k}")).exists())
            .then_some(())
    });
    assert_eq!(
        ours(pid).len(),
        3,
        "a SIGKILLed session cannot clean up itself"
    );
    let out = Command::new(EXE).arg("cleanup").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("ccb-{pid}-rtr")));
    assert!(ours(pid).is_empty());
}

/// The simulator's reordered fraction (RFC 4737) for datagrams every `gap`
/// through the netem `qdisc`, driven by the same Rust qdisc the forwarder
/// runs (polled every 10 µs, as a link would dequeue it).
fn simulated_reordering(qdisc: &str, gap: Duration, n: u64) -> f64 {
    use ccbench_core::packet::Packet;
    use ccbench_core::qdisc::{Cx, Qdisc, QdiscConfig, QdiscStats};
    use ccbench_core::rng::SimRng;
    use ccbench_core::units::SimTime;
    let cfg: QdiscConfig = toml::from_str(qdisc).unwrap();
    let mut rng = SimRng::for_component(1, "reorder");
    let mut q = cfg.build(&mut rng);
    let mut stats = QdiscStats::default();
    let (mut max_seq, mut reordered, mut seen) = (None::<SimTime>, 0u64, 0u64);
    let mut sent = 0u64;
    let mut now = SimTime::ZERO;
    let step = 10_000u64;
    while seen < n {
        let next = SimTime(sent * gap.as_nanos() as u64);
        if sent < n && next <= now {
            // The send time is the sequence number.
            let p = Packet {
                size: 1514,
                enq_at: now,
                sent_at: next,
                ..Default::default()
            };
            q.enqueue(
                p,
                &mut Cx {
                    now,
                    rng: &mut rng,
                    stats: &mut stats,
                },
            );
            sent += 1;
        }
        while let Some(p) = q.dequeue(&mut Cx {
            now,
            rng: &mut rng,
            stats: &mut stats,
        }) {
            let seq = p.sent_at;
            if max_seq.is_some_and(|m| seq < m) {
                reordered += 1;
            }
            max_seq = Some(max_seq.map_or(seq, |m| m.max(seq)));
            seen += 1;
        }
        now = SimTime(now.0 + step);
    }
    reordered as f64 / n as f64
}

/// netem jitter larger than the datagram gap reorders real packets as the
/// simulator's netem does: 10 Mbit/s of 1514 B datagrams (1.21 ms apart)
/// through `delay 10ms 2ms` (uniform ±2 ms). The receiver counts
/// datagrams arriving below the highest sequence seen (RFC 4737).
#[test]
fn netem_jitter_reorders_real_packets_as_simulated() {
    prereqs();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let qdisc = "kind = 'netem'\ndelay = '10ms'\njitter = '2ms'";
    let sim = simulated_reordering(qdisc, Duration::from_nanos(1_211_200), 2000);
    let d = dir("reorder");
    let s = scenario(
        &d,
        "id = 'bn'\nqdisc = { kind = 'netem', delay = '10ms', jitter = '2ms' }",
    );
    let sink_text = blast_through_sink(&d, &s, "10 3");
    let sink = last_json(sink_text.as_bytes());
    let pkts = sink["pkts"].as_u64().unwrap();
    let live = sink["reordered"].as_u64().unwrap() as f64 / pkts as f64;
    eprintln!("netem reordering: live {live:.3} of {pkts}, simulated {sim:.3}");
    assert!(pkts > 2000, "{pkts} datagrams arrived");
    assert!(sim > 0.1, "the configuration must reorder: {sim}");
    assert!(
        (live - sim).abs() < 0.05,
        "live {live:.3} vs simulated {sim:.3}"
    );
}

/// `[commands]` in the scenario replaces `--server`/`-- CMD`: the server,
/// client and per-flow commands run in their namespaces, the run lasts until
/// the last of them exits (the client's exits at once), and the datagrams arrive.
#[test]
fn scenario_commands_run_without_a_command_line() {
    prereqs();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let d = dir("commands");
    let sink = d.join("sink.json");
    let text = format!(
        "name = 't'\nduration = '10s'\n[[links]]\nid = 'bn'\nrate = '10Mbit'\ndelay = '5ms'\n[[links]]\nid = 'ret'\ndelay = '5ms'\n\
         [[flows]]\nid = 'f'\nkind = 'ping'\npath = ['bn']\nreverse = ['ret']\n\
         [commands]\nserver = [\"{EXE} udp-sink 9000 2 > {}\"]\nclient = \"true\"\n\
         flows = {{ f = \"sleep 0.5; {EXE} udp-blast $CCB_SERVER_IP:9000 5 1 && sleep 2\" }}\n",
        sink.display()
    );
    let scen = d.join("s.toml");
    std::fs::write(&scen, text).unwrap();
    let out = Command::new(EXE)
        .arg("run")
        .arg(&scen)
        .arg("-o")
        .arg(d.join("out"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(100));
    let got = last_json(
        std::fs::read_to_string(&sink)
            .unwrap_or_default()
            .as_bytes(),
    );
    let pkts = got["pkts"].as_u64().unwrap();
    assert!(pkts > 300, "{pkts} datagrams arrived");
    // A blank client command is refused before any namespace exists.
    std::fs::write(
        &scen,
        std::fs::read_to_string(&scen)
            .unwrap()
            .replace("client = \"", "client = \" \" #"),
    )
    .unwrap();
    let out = Command::new(EXE).arg("run").arg(&scen).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("commands.client"),
        "{err}"
    );
}

/// `tcp-sink PORT CC` runs CC on its listener, and the connection it accepts
/// inherits it whatever the sender runs: how a Prague receiver answers
/// AccECN (docs/scream-real.md). On loopback, so no namespace is needed.
#[test]
fn a_sinks_algorithm_reaches_the_connection_it_accepts() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for listener in ["reno", "cubic"] {
        let sink = Command::new(EXE)
            .args(["tcp-sink", "5391", listener])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let bulk = Command::new(EXE)
            .args(["tcp-bulk", "127.0.0.1:5391", "bbr", "0.3"])
            .output()
            .unwrap();
        assert!(bulk.status.success(), "{}", String::from_utf8_lossy(&bulk.stderr));
        let got = last_json(&sink.wait_with_output().unwrap().stdout);
        assert_eq!(got["cc"], listener, "{got}");
        assert!(got["bytes"].as_u64().unwrap() > 0, "{got}");
    }
}
