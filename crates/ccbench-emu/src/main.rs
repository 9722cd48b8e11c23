//! `ccbench-emu`: run commands through a scenario's links, live.
//!
//! ```text
//! ccbench-emu run SCENARIO.toml [-o DIR] [--set KEY=VAL]... [--server CMD]... [--flow ID=CMD]... [--no-rt] [--pcap] [--pcap-link LINK]... [-- CMD [ARG...]]
//!             (without `-- CMD` and `--flow`: the scenario's [commands])
//! ccbench-emu cleanup                      remove namespaces of killed runs
//! ccbench-emu udp-blast DST:PORT MBPS SECS [TOS] | udp-sink PORT SECS
//!             udp-echo PORT | udp-ping DST:PORT COUNT INTERVAL_MS
//!             tcp-sink PORT [CC] | tcp-bulk DST:PORT CC SECS
//! ```
//! Internal: `forward`, `offload-off DEV`, `sysctl-set KEY VAL`.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ccbench_emu::forward::{self, STOP};
use ccbench_emu::netns::{self, Session};
use ccbench_emu::path::EmuPath;
use ccbench_emu::{network_for, tools};

const USAGE: &str = "usage: ccbench-emu run SCENARIO.toml [-o DIR] [--set KEY=VAL]... [--server CMD]... [--flow ID=CMD]... [--no-rt] [--pcap] [--pcap-link LINK]... [-- CMD [ARG...]]
       ccbench-emu cleanup
       ccbench-emu udp-blast DST:PORT MBPS SECS [TOS] | udp-sink PORT SECS | udp-echo PORT | udp-ping DST:PORT COUNT INTERVAL_MS
       ccbench-emu tcp-sink PORT [CC] | tcp-bulk DST:PORT CC SECS";

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
        "tcp-sink" => tools::tcp_sink(num(a.get(1), "PORT")?, a.get(2).map(String::as_str)).map(|_| 0),
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

/// `forward --scenario F --a IF[,IF...] --b IF --stats OUT [--ready FILE] [--records FILE] [--set K=V]... [--no-rt]`
/// (`--a`: the client hosts' interfaces, host k's k-th)
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
    let net = network_for(&sc)?;
    let opt = forward::Options {
        if_a: ia.ok_or("--a")?.split(',').map(String::from).collect(),
        if_b: ib.ok_or("--b")?,
        realtime: rt,
        ready,
        records,
        pcap,
        pcap_links,
        pcap_dir,
    };
    let rep = forward::run(&opt, net.fwd, net.rev).map_err(|e| format!("forwarder: {e}"))?;
    let js = serde_json::to_string_pretty(&rep).expect("report serializes");
    match stats {
        Some(p) => std::fs::write(&p, js).map_err(|e| format!("{p}: {e}"))?,
        None => println!("{js}"),
    }
    Ok(0)
}

fn run(a: &[String]) -> Result<u8, String> {
    // `-- CMD` and `--flow` on the command line, else the scenario's [commands].
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
    let (mut sets, mut servers, mut pcap_links, mut flow_cmds) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut rt, mut pcap) = (true, false);
    let mut it = opts.iter();
    while let Some(o) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{o} needs a value"));
        match o.as_str() {
            "-o" | "--out" => out = PathBuf::from(val()?),
            "--set" => sets.push(val()?),
            "--server" => servers.push(val()?),
            "--flow" => {
                let v = val()?;
                let (id, cmd) = v.split_once('=').ok_or(format!("--flow {v:?}: give ID=COMMAND"))?;
                flow_cmds.push((id.to_string(), cmd.to_string()));
            }
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
    let sh = |c: &str| vec!["sh".to_string(), "-c".to_string(), c.to_string()];
    // (host, argv) of every client command.
    let mut clients: Vec<(usize, Vec<String>)> = Vec::new();
    if !cli_client.is_empty() {
        clients.push((0, cli_client.clone()));
    }
    for (id, cmd) in &flow_cmds {
        let ids: Vec<&str> = sc.flows.iter().map(|f| f.id.as_str()).collect();
        let host = sc.flow_entry(id).ok_or(format!("--flow {id}=...: no flow {id:?} in {file} (flows: {})", ids.join(", ")))?;
        clients.push((host, sh(cmd)));
    }
    if clients.is_empty() {
        let Some(c) = &sc.commands else {
            return Err(format!("{file}: no command to run: give `-- CMD`, `--flow ID=CMD` or a [commands] section (client = \"...\")\n{USAGE}"));
        };
        servers.extend(c.server.iter().cloned());
        clients.extend(c.client.iter().map(|cmd| (0, sh(cmd))));
        for (id, cmd) in &c.flows {
            clients.push((sc.flow_entry(id).expect("validated with the scenario"), sh(cmd)));
        }
    }
    let net = network_for(&sc)?;
    EmuPath::check_links([&net.fwd, &net.rev], &pcap_links).map_err(|e| format!("{file}: {e}"))?;
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

    let mut s = Session::create(&exe, net.hosts.len())?;
    let ifs: Vec<String> = (0..net.hosts.len()).map(netns::router_if).collect();
    let mut fargv: Vec<String> = vec![
        exe.clone(),
        "forward".into(),
        "--scenario".into(),
        abs_file.to_string_lossy().into_owned(),
        "--a".into(),
        ifs.join(","),
    ];
    fargv.extend(["--b", "rs", "--stats"].map(String::from));
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
    let fw = s.spawn(&rtr, 0, &fargv, Stdio::null())?;
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
        s.spawn(&srv, 0, &sh(cmd), Stdio::inherit())?;
    }
    if !servers.is_empty() {
        std::thread::sleep(Duration::from_millis(300));
    }
    let mut running = Vec::new();
    for (host, argv) in &clients {
        let ns = s.clis[*host].clone();
        running.push(s.spawn(&ns, *host, argv, Stdio::inherit())?);
    }
    // Until every client command has exited.
    let mut codes: Vec<Option<std::process::ExitStatus>> = vec![None; running.len()];
    let failure = loop {
        if STOP.load(Ordering::Relaxed) {
            break Some("interrupted".to_string());
        }
        for (code, &c) in codes.iter_mut().zip(&running) {
            if code.is_none() {
                *code = s.child(c).try_wait().ok().flatten();
            }
        }
        if codes.iter().all(Option::is_some) {
            break None;
        }
        if let Ok(Some(st)) = s.child(fw).try_wait() {
            break Some(format!("the forwarder exited during the run ({st})"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    for &c in &running {
        s.stop(c, Duration::from_secs(2));
    }
    s.stop(fw, Duration::from_secs(5));
    let emu: serde_json::Value = std::fs::read_to_string(&stats)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    let exit = |st: &Option<std::process::ExitStatus>| st.and_then(|st| st.code());
    // The run's exit code: the first failing client's, else 0.
    let status = codes.iter().find(|st| exit(st) != Some(0)).map_or(Some(0), exit);
    let mut namespaces = s.clis.clone();
    namespaces.extend([s.rtr.clone(), s.srv.clone()]);
    let summary = serde_json::json!({
        "scenario": sc.name,
        "mode": "emulated",
        "command": cli_client,
        "servers": servers,
        "exit_code": if failure.is_none() { status } else { None },
        "failure": failure,
        "namespaces": namespaces,
        "hosts": net.hosts.iter().enumerate().map(|(k, id)| serde_json::json!({
            "flow": id, "namespace": s.clis[k], "ip": netns::client_ip(k).to_string(),
        })).collect::<Vec<_>>(),
        "clients": clients.iter().zip(&codes).map(|((host, argv), st)| serde_json::json!({
            "host": host, "command": argv, "exit_code": exit(st),
        })).collect::<Vec<_>>(),
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
    Ok(status.map_or(1, |c| u8::try_from(c).unwrap_or(1)))
}
