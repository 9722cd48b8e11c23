//! `ccbench-emu`: run commands through a scenario's links, live.
//!
//! ```text
//! ccbench-emu run SCENARIO.toml [-o DIR] [--set KEY=VAL]... [--server CMD]... [--no-rt] [--pcap] [--pcap-link LINK]... [-- CMD [ARG...]]
//!             (without `-- CMD`: the scenario's [commands] server/client)
//! ccbench-emu cleanup                      remove namespaces of killed runs
//! ccbench-emu udp-blast DST:PORT MBPS SECS [TOS] | udp-sink PORT SECS
//!             udp-echo PORT | udp-ping DST:PORT COUNT INTERVAL_MS
//!             tcp-sink PORT | tcp-bulk DST:PORT CC SECS
//! ```
//! Internal: `forward`, `offload-off DEV`, `sysctl-set KEY VAL`.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ccbench_emu::forward::{self, STOP};
use ccbench_emu::netns::{self, Session};
use ccbench_emu::path::EmuPath;
use ccbench_emu::{paths_for, tools};

const USAGE: &str = "usage: ccbench-emu run SCENARIO.toml [-o DIR] [--set KEY=VAL]... [--server CMD]... [--no-rt] [--pcap] [--pcap-link LINK]... [-- CMD [ARG...]]
       ccbench-emu cleanup
       ccbench-emu udp-blast DST:PORT MBPS SECS [TOS] | udp-sink PORT SECS | udp-echo PORT | udp-ping DST:PORT COUNT INTERVAL_MS
       ccbench-emu tcp-sink PORT | tcp-bulk DST:PORT CC SECS";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match dispatch(&args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("ccbench-emu: {e}");
            ExitCode::from(2)
        }
    }
}

fn num<T: std::str::FromStr>(s: Option<&String>, what: &str) -> Result<T, String> {
    s.ok_or(format!("missing {what}\n{USAGE}"))?
        .parse()
        .map_err(|_| format!("bad {what}: {:?}", s.unwrap()))
}

fn print(v: Result<serde_json::Value, String>) -> Result<u8, String> {
    println!("{}", v?);
    Ok(0)
}

fn dispatch(a: &[String]) -> Result<u8, String> {
    let cmd = a.first().map(String::as_str).unwrap_or("");
    match cmd {
        "run" => run(&a[1..]),
        "forward" => forward_cmd(&a[1..]),
        "cleanup" => {
            netns::require_root()?;
            for n in netns::remove_stale() {
                println!("removed stale namespace {n}");
            }
            Ok(0)
        }
        "offload-off" => netns::offload_off(a.get(1).ok_or("offload-off DEV")?).map(|_| 0),
        "sysctl-set" => {
            let (k, v) = (
                a.get(1).ok_or("sysctl-set KEY VAL")?,
                a.get(2).ok_or("sysctl-set KEY VAL")?,
            );
            std::fs::write(Path::new("/proc/sys").join(k), v)
                .map_err(|e| format!("/proc/sys/{k}: {e}"))?;
            Ok(0)
        }
        "udp-blast" => print(tools::blast(
            a.get(1).ok_or(USAGE)?,
            num(a.get(2), "MBPS")?,
            num(a.get(3), "SECS")?,
            a.get(4).map_or(Ok(0), |_| num(a.get(4), "TOS"))?,
        )),
        "udp-sink" => print(tools::sink(num(a.get(1), "PORT")?, num(a.get(2), "SECS")?)),
        "udp-echo" => print(tools::echo(num(a.get(1), "PORT")?)),
        "udp-ping" => print(tools::ping(
            a.get(1).ok_or(USAGE)?,
            num(a.get(2), "COUNT")?,
            num(a.get(3), "INTERVAL_MS")?,
        )),
        "tcp-sink" => tools::tcp_sink(num(a.get(1), "PORT")?).map(|_| 0),
        "tcp-bulk" => print(tools::tcp_bulk(
            a.get(1).ok_or(USAGE)?,
            a.get(2).ok_or("tcp-bulk DST:PORT CC SECS")?,
            num(a.get(3), "SECS")?,
        )),
        _ => Err(USAGE.to_string()),
    }
}

fn load(file: &str, sets: &[String]) -> Result<ccbench_core::scenario::Scenario, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    let parsed = ccbench_core::scenario::parse(&text, file, sets).map_err(|e| e.to_string())?;
    Ok(parsed.scenario)
}

/// `forward --scenario F --a IF --b IF --stats OUT [--ready FILE] [--records FILE] [--set K=V]... [--no-rt]`
fn forward_cmd(a: &[String]) -> Result<u8, String> {
    let (mut file, mut ia, mut ib, mut stats, mut ready) = (None, None, None, None, None);
    let (mut records, mut pcap, mut pcap_dir) = (None, None, None);
    let (mut sets, mut pcap_links) = (Vec::new(), Vec::new());
    let mut rt = true;
    let mut it = a.iter();
    while let Some(o) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{o} needs a value"));
        match o.as_str() {
            "--scenario" => file = Some(val()?),
            "--a" => ia = Some(val()?),
            "--b" => ib = Some(val()?),
            "--stats" => stats = Some(val()?),
            "--ready" => ready = Some(val()?),
            "--records" => records = Some(val()?),
            "--pcap" => pcap = Some(val()?),
            "--pcap-link" => pcap_links.push(val()?),
            "--pcap-dir" => pcap_dir = Some(val()?),
            "--set" => sets.push(val()?),
            "--no-rt" => rt = false,
            _ => return Err(format!("forward: unknown option {o}")),
        }
    }
    let sc = load(&file.ok_or("forward needs --scenario")?, &sets)?;
    let (fwd, rev) = paths_for(&sc)?;
    let opt = forward::Options {
        if_a: ia.ok_or("--a")?,
        if_b: ib.ok_or("--b")?,
        realtime: rt,
        ready,
        records,
        pcap,
        pcap_links,
        pcap_dir,
    };
    let rep = forward::run(&opt, fwd, rev).map_err(|e| format!("forwarder: {e}"))?;
    let js = serde_json::to_string_pretty(&rep).expect("report serializes");
    match stats {
        Some(p) => std::fs::write(&p, js).map_err(|e| format!("{p}: {e}"))?,
        None => println!("{js}"),
    }
    Ok(0)
}

fn run(a: &[String]) -> Result<u8, String> {
    // `-- CMD` on the command line, else the scenario's [commands].
    let split = a.iter().position(|s| s == "--");
    let (opts, cli_client) = match split {
        Some(i) => (&a[..i], a[i + 1..].to_vec()),
        None => (a, Vec::new()),
    };
    if split.is_some() && cli_client.is_empty() {
        return Err(format!("no command after --\n{USAGE}"));
    }
    let mut file = None;
    let mut out = PathBuf::from("emu-out");
    let (mut sets, mut servers, mut pcap_links) = (Vec::new(), Vec::new(), Vec::new());
    let (mut rt, mut pcap) = (true, false);
    let mut it = opts.iter();
    while let Some(o) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{o} needs a value"));
        match o.as_str() {
            "-o" | "--out" => out = PathBuf::from(val()?),
            "--set" => sets.push(val()?),
            "--server" => servers.push(val()?),
            "--no-rt" => rt = false,
            "--pcap" => pcap = true,
            "--pcap-link" => pcap_links.push(val()?),
            s if !s.starts_with('-') && file.is_none() => file = Some(s.to_string()),
            _ => return Err(format!("run: unknown option {o}\n{USAGE}")),
        }
    }
    let file = file.ok_or(format!("run needs a scenario file\n{USAGE}"))?;
    netns::require_root()?;
    let sc = load(&file, &sets)?;
    let client: Vec<String> = if !cli_client.is_empty() {
        cli_client
    } else if let Some(c) = &sc.commands {
        servers.extend(c.server.iter().cloned());
        vec!["sh".into(), "-c".into(), c.client.clone()]
    } else {
        return Err(format!("{file}: no command to run: give `-- CMD` or a [commands] section (client = \"...\")\n{USAGE}"));
    };
    let client = &client[..];
    let (fwd, rev) = paths_for(&sc)?;
    EmuPath::check_links([&fwd, &rev], &pcap_links).map_err(|e| format!("{file}: {e}"))?;
    for n in netns::remove_stale() {
        eprintln!("ccbench-emu: removed stale namespace {n} (a killed run)");
    }
    netns::catch_signals();
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let out = out.canonicalize().map_err(|e| e.to_string())?;
    let exe = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .to_string_lossy()
        .into_owned();
    let abs_file = Path::new(&file)
        .canonicalize()
        .map_err(|e| format!("{file}: {e}"))?;
    let stats = out.join("forwarder.json");
    let ready = out.join(".ready");
    let _ = std::fs::remove_file(&stats);
    let _ = std::fs::remove_file(&ready);

    let mut s = Session::create(&exe)?;
    let mut fargv: Vec<String> = vec![
        exe.clone(),
        "forward".into(),
        "--scenario".into(),
        abs_file.to_string_lossy().into_owned(),
    ];
    fargv.extend(["--a", "rc", "--b", "rs", "--stats"].map(String::from));
    fargv.push(stats.to_string_lossy().into_owned());
    fargv.push("--ready".into());
    fargv.push(ready.to_string_lossy().into_owned());
    let records = out.join("packets.bin");
    let _ = std::fs::remove_file(&records);
    fargv.push("--records".into());
    fargv.push(records.to_string_lossy().into_owned());
    if pcap {
        fargv.push("--pcap".into());
        fargv.push(out.to_string_lossy().into_owned());
    }
    for link in &pcap_links {
        fargv.extend(["--pcap-link".into(), link.clone()]);
    }
    if !pcap_links.is_empty() {
        fargv.extend(["--pcap-dir".into(), out.to_string_lossy().into_owned()]);
    }
    for k in &sets {
        fargv.push("--set".into());
        fargv.push(k.clone());
    }
    if !rt {
        fargv.push("--no-rt".into());
    }
    let rtr = s.rtr.clone();
    let fw = s.spawn(&rtr, &fargv, Stdio::null())?;
    let t = Instant::now();
    while !ready.exists() {
        if let Ok(Some(st)) = s.child(fw).try_wait() {
            return Err(format!("the forwarder failed to start ({st})"));
        }
        if t.elapsed() > Duration::from_secs(10) {
            return Err("the forwarder did not become ready within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let srv = s.srv.clone();
    for cmd in &servers {
        s.spawn(
            &srv,
            &["sh".into(), "-c".into(), cmd.clone()],
            Stdio::inherit(),
        )?;
    }
    if !servers.is_empty() {
        std::thread::sleep(Duration::from_millis(300));
    }
    let cli = s.cli.clone();
    let c = s.spawn(&cli, client, Stdio::inherit())?;
    let (status, failure) = loop {
        if STOP.load(Ordering::Relaxed) {
            break (None, Some("interrupted".to_string()));
        }
        if let Ok(Some(st)) = s.child(c).try_wait() {
            break (Some(st), None);
        }
        if let Ok(Some(st)) = s.child(fw).try_wait() {
            break (
                None,
                Some(format!("the forwarder exited during the run ({st})")),
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    s.stop(c, Duration::from_secs(2));
    s.stop(fw, Duration::from_secs(5));
    let emu: serde_json::Value = std::fs::read_to_string(&stats)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    let summary = serde_json::json!({
        "scenario": sc.name,
        "mode": "emulated",
        "command": client,
        "servers": servers,
        "exit_code": status.and_then(|st| st.code()),
        "failure": failure,
        "namespaces": [s.cli, s.rtr, s.srv],
        "emulator": emu,
    });
    drop(s); // tear down before reporting
    let sp = out.join("summary.json");
    std::fs::write(&sp, serde_json::to_string_pretty(&summary).expect("json"))
        .map_err(|e| format!("{}: {e}", sp.display()))?;
    if let Some(f) = failure {
        return Err(format!(
            "{f}; namespaces removed, partial summary in {}",
            sp.display()
        ));
    }
    let code = status.and_then(|st| st.code()).unwrap_or(1);
    Ok(u8::try_from(code).unwrap_or(1))
}
