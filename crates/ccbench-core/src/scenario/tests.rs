use super::*;

const BASE: &str = r#"
name = "t"
duration = "2s"

[[links]]
id = "bottleneck"
rate = "10Mbit"
delay = "10ms"
qdisc = { kind = "fq_codel" }

[[flows]]
id = "f"
cc = "cubic"
path = ["bottleneck"]
"#;

fn err(text: &str) -> ScenarioError {
    match parse(text, "t.toml", &[]) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

#[test]
fn fills_linux_defaults() {
    let p = parse(BASE, "t.toml", &[]).unwrap();
    let QdiscConfig::FqCodel(q) = &p.scenario.links[0].qdisc else { panic!() };
    assert_eq!(q.target, Dur::from_millis(5));
    assert_eq!(q.limit, 10240);
    let f = &p.scenario.flows[0];
    assert_eq!(f.tcp.as_ref().unwrap().init_cwnd, 10);
    assert_eq!(f.cc_params.as_ref().unwrap()["beta"].as_integer(), Some(717));
    // The resolved text parses back to the same scenario.
    let again = parse(&p.scenario.to_toml(), "r.toml", &[]).unwrap();
    assert_eq!(again.scenario, p.scenario);
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let e = err(&BASE.replace("delay = \"10ms\"", "delay = \"10ms\"\nfoo = 1"));
    let p = &e.problems[0];
    assert_eq!(p.key, "links[0].foo");
    assert_eq!(p.line, Some(9));
    assert!(p.message.contains("unknown field"), "{p}");
    assert!(e.to_string().starts_with("t.toml:9:"), "{e}");
}

#[test]
fn bad_unit_and_negative_rate() {
    let e = err(&BASE.replace("10Mbit", "100MB"));
    assert_eq!(e.problems[0].key, "links[0].rate");
    assert_eq!(e.problems[0].line, Some(7));
    assert!(e.problems[0].message.contains("MB is") || e.problems[0].message.contains("unknown rate unit"));
    let e = err(&BASE.replace("10Mbit", "-5Mbit"));
    assert!(e.problems[0].message.contains("negative"), "{e}");
}

#[test]
fn unknown_link_and_every_problem_reported() {
    let t = BASE.replace("path = [\"bottleneck\"]", "path = [\"nope\"]\ndscp = 99");
    let e = err(&t);
    assert_eq!(e.problems.len(), 2, "{e}");
    assert!(e.to_string().contains("flows[0].path[0]: unknown link \"nope\""), "{e}");
    assert!(e.to_string().contains("flows[0].dscp"), "{e}");
}

#[test]
fn bad_qdisc_kind_and_cc_params() {
    let e = err(&BASE.replace("fq_codel", "fq_kodel"));
    assert!(e.to_string().contains("fq_kodel"), "{e}");
    let e = err(&BASE.replace("cc = \"cubic\"", "cc = \"cubic\"\ncc_params = { betta = 3 }"));
    assert!(e.to_string().contains("betta"), "{e}");
}

#[test]
fn overrides_by_index_and_id() {
    let p = parse(BASE, "t.toml", &["links.bottleneck.rate=50Mbit".into(), "duration=\"5s\"".into(), "flows.0.cc=reno".into()]).unwrap();
    assert_eq!(p.scenario.links[0].rate, Some(Rate(50_000_000)));
    assert_eq!(p.scenario.duration, Dur::from_secs(5));
    assert_eq!(p.scenario.flows[0].cc, Some(CcKind::Reno));
    let e = parse(BASE, "t.toml", &["links.nope.rate=1Mbit".into()]).err().unwrap();
    assert!(e.to_string().contains("no element with id \"nope\""), "{e}");
    // A bad value an override set names the override, not a file line.
    let e = parse(BASE, "t.toml", &["links.0.rate=fast".into()]).err().unwrap();
    assert_eq!((e.problems[0].file.as_str(), e.problems[0].line, e.problems[0].key.as_str()), ("--set", None, "links.0.rate"), "{e}");
    assert!(e.to_string().starts_with("--set: links.0.rate: expected a rate"), "{e}");
}

#[test]
fn rrul_shape_expands_to_flent_composition() {
    let text = r#"
name = "r"
[[links]]
id = "up"
rate = "10Mbit"
[[links]]
id = "down"
rate = "10Mbit"
[test]
name = "rrul"
up = ["up"]
down = ["down"]
length = "30s"
"#;
    let p = parse(text, "r.toml", &[]).unwrap();
    let s = &p.scenario;
    assert_eq!(s.duration, Dur::from_secs(40), "LENGTH + 2 x DELAY");
    assert!(s.test.is_none(), "the resolved scenario lists the flows");
    let tcp: Vec<_> = s.flows.iter().filter(|f| f.kind == FlowKind::Tcp).collect();
    assert_eq!(tcp.len(), 8);
    assert_eq!(tcp.iter().filter(|f| f.path == ["up"]).count(), 4);
    let dscps: Vec<u8> = tcp.iter().map(|f| f.dscp).collect();
    assert_eq!(dscps, [0, 8, 40, 46, 0, 8, 40, 46]);
    assert!(tcp.iter().all(|f| f.start == Dur::from_secs(5) && f.stop == Some(Dur::from_secs(35))));
    let probes: Vec<_> = s.flows.iter().filter(|f| f.kind == FlowKind::Ping).map(|f| f.id.as_str()).collect();
    assert_eq!(probes, ["ping_udp_EF", "ping_udp_BK", "ping_udp_BE", "ping_icmp"]);
    // Resolved text parses back to the same thing.
    assert_eq!(parse(&s.to_toml(), "x", &[]).unwrap().scenario, *s);
}

#[test]
fn tcp_nup_shape_uses_streams_and_checks_links() {
    let base = "[[links]]\nid = \"b\"\nrate = \"10Mbit\"\n[test]\nname = \"tcp_nup\"\nup = [\"b\"]\ndown = [\"nope\"]\nstreams = 4\n";
    let e = parse(base, "n.toml", &[]).err().unwrap();
    assert!(e.to_string().contains("test.down[0]: unknown link \"nope\""), "{e}");
    let p = parse(&base.replace("nope", "b"), "n.toml", &[]).unwrap();
    assert_eq!(p.scenario.flows[0].count, 4);
    assert_eq!(p.scenario.duration, Dur::from_secs(70));
}

#[test]
fn media_version_parses_round_trips_and_bad_values_are_located() {
    use crate::media::ScreamVersion as V;
    let media = |m: &str| BASE.replace("cc = \"cubic\"", &format!("kind = \"media\"\nmedia = {{ {m} }}"));
    let p = parse(&media("version = \"2024-10\""), "t.toml", &[]).unwrap();
    let m = p.scenario.flows[0].media.as_ref().unwrap();
    assert_eq!(m.version, crate::media::ScreamVersion::V2024_10_31);
    assert_eq!(m.version_params().feedback_interval, Dur::from_millis(5));
    let again = parse(&p.scenario.to_toml(), "r.toml", &[]).unwrap();
    assert_eq!(again.scenario, p.scenario);
    let e = err(&media("version = \"2023\""));
    assert_eq!(e.problems[0].key, "flows[0].media.version", "{e}");
    assert!(e.to_string().contains("2024-10-28"), "names the allowed values: {e}");
    assert!(e.to_string().contains("got \"2023\""), "names what it read: {e}");
    // The shell strips the quotes of --set ...version="2024-10-28": TOML reads a date.
    let set = |v: &str| parse(&media("rand = 0"), "t.toml", &[format!("flows.0.media.version={v}")]);
    for (v, want) in [("2024-10-28", V::V2024_10_28), ("2024-10-31", V::V2024_10_31), ("994f9a4", V::V2024_10_28)] {
        let p = set(v).unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(p.scenario.flows[0].media.as_ref().unwrap().version, want, "{v}");
    }
    let e = set("2024-11-01").err().unwrap().to_string();
    assert!(e.contains("got") && e.contains("2024-11-01") && e.contains("\"994f9a4\""), "{e}");
    let e = err(&media("l4s_alpha_gain = 2.0"));
    assert!(e.to_string().contains("flows[0].media.l4s_alpha_gain: must be in (0, 1]"), "{e}");
    let e = err(&media("feedback_interval = \"0ms\""));
    assert!(e.to_string().contains("flows[0].media.feedback_interval"), "{e}");
}

#[test]
fn socket_buffer_keys_have_linux_defaults_and_are_checked() {
    let p = parse(BASE, "t.toml", &[]).unwrap();
    let t = p.scenario.flows[0].tcp.as_ref().unwrap();
    // net.ipv4.tcp_wmem = 4096 16384 4194304, tcp_rmem = 4096 131072 6291456.
    assert_eq!((t.wmem_default.0, t.wmem_max.0), (16_384, 4_194_304));
    assert_eq!((t.rmem_default.0, t.rmem_max.0), (131_072, 6_291_456));
    // Host timing noise as measured on Linux hosts (tcp::TX_JITTER).
    assert_eq!((t.tx_jitter, t.tx_stall_prob, t.tx_stall), (Dur::from_micros(50), 0.0036, Dur::from_micros(2500)));
    assert_eq!((t.ack_jitter, t.ack_stall_prob, t.ack_stall), (Dur::from_micros(50), 0.0025, Dur::from_millis(1)));
    assert_eq!(p.scenario.flows[0].start_jitter, Some(Dur::from_millis(5)));
    let ok = parse(&format!("{BASE}tcp = {{ wmem_max = \"32mb\", rmem_max = 1000000 }}\n"), "t.toml", &[]).unwrap();
    let t = ok.scenario.flows[0].tcp.as_ref().unwrap();
    assert_eq!((t.wmem_max.0, t.rmem_max.0), (32 << 20, 1_000_000));
    let e = err(&format!("{BASE}tcp = {{ wmem_max = \"1kb\", tx_jitter = \"1s\" }}\n"));
    let keys: Vec<&str> = e.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["flows[0].tcp.tx_jitter", "flows[0].tcp.wmem_max"], "{e}");
    assert!(e.problems[1].message.contains("at least 2 MTU (3000 bytes), got 1024"), "{e}");
    let e = err(&format!("{BASE}tcp = {{ tx_stall_prob = 0.6, tx_stall = \"101ms\" }}\n"));
    let keys: Vec<&str> = e.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["flows[0].tcp.tx_stall_prob", "flows[0].tcp.tx_stall"], "{e}");
    assert!(parse(&format!("{BASE}tcp = {{ tx_stall_prob = 0.5, tx_stall = \"100ms\" }}\n"), "t.toml", &[]).is_ok());
    let e = err(&format!("{BASE}tcp = {{ ack_jitter = \"101ms\", ack_stall_prob = -0.1, ack_stall = \"1s\" }}\n"));
    let keys: Vec<&str> = e.problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["flows[0].tcp.ack_jitter", "flows[0].tcp.ack_stall_prob", "flows[0].tcp.ack_stall"], "{e}");
    assert!(e.problems[1].message.contains("must be 0..=0.5, got -0.1"), "{e}");
}

/// Copies are named `id.1`, `id.2`, ... and found back by name; host ids
/// count "client" 0, "server" 1, then other names in order of first use.
#[test]
fn flow_entries_by_copy_name_and_host_ids() {
    let text = "duration='1s'\n[[links]]\nid='l'\ndelay='1ms'\n\
                [[flows]]\nid='cubic'\ncount=3\npath=['l']\n\
                [[flows]]\nid='x'\nsrc='laptop'\ndst='nas'\npath=['l']\n\
                [[flows]]\nid='y'\nsrc='nas'\npath=['l']\n";
    let sc = parse(text, "t.toml", &[]).unwrap().scenario;
    assert_eq!([0, 2].map(|c| sc.flows[0].copy_name(c)), ["cubic.1", "cubic.3"]);
    assert_eq!(sc.flows[1].copy_name(0), "x");
    let found: Vec<_> = ["cubic", "cubic.1", "cubic.3", "cubic.4", "cubic.0", "x", "x.1", "y"].map(|n| sc.flow_entry(n)).into();
    assert_eq!(found, [Some(0), Some(0), Some(0), None, None, Some(1), None, Some(2)]);
    assert_eq!(sc.host_ids(), [(0, 1), (2, 3), (3, 1)]);
}
