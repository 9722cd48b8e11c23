//! Scenario files (TOML): the whole truth of one run. Units are written as
//! people write them (`"100Mbit"`, `"25ms"`, `"1000p"`); every parameter has
//! its Linux/RFC default; unknown keys and bad values are errors naming
//! file, line, key and what is allowed. `--set key.path=value` overrides
//! edit the document before it is read (see [`overrides`]).

pub mod build;
pub mod error;
pub mod file_name;
pub mod limits;
pub mod overrides;
pub mod shapes;
pub mod timeline;

pub use timeline::RateStep;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cc::{CcConfig, CcKind, EcnMode};
use crate::forwarder::Forwarder;
use crate::packet::Ecn;
use crate::metrics::MetricsConfig;
use crate::qdisc::QdiscConfig;
use crate::tcp::TcpConfig;
use crate::units::{Bytes, Dur, Rate};
pub use error::{Problem, ScenarioError, Seg};
pub use file_name::file_name;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Simulated time to run (default with a `[test]`: its total length).
    #[serde(default)]
    pub duration: Dur,
    #[serde(default)]
    pub seed: u64,
    pub links: Vec<LinkSpec>,
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    /// A flent test shape whose flows are added to `flows`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<shapes::TestShape>,
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// Resource limits (memory, events); see [`limits`].
    #[serde(default, skip_serializing_if = "limits::Limits::is_default")]
    pub limits: limits::Limits,
    /// What live emulation runs in its namespaces (`ccbench emulate`);
    /// the simulator ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<Commands>,
}

/// `[commands]`: shell commands for live emulation, which gives each
/// `[[flows]]` entry its own client host (namespace) on that flow's route.
/// `server` commands start first in the server namespace (in order), then
/// `client` runs in the first flow's host and each `flows.ID` command in flow
/// ID's host; the run ends when they have all exited. Every command sees
/// `CCB_CLIENT_IP` (its host's address), `CCB_CLIENT_IPS` and `CCB_SERVER_IP`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Commands {
    #[serde(default)]
    pub server: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flows: BTreeMap<String, String>,
}

fn default_name() -> String {
    "scenario".into()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub id: String,
    /// Serialization rate; absent = unlimited (a pure delay line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// One-way propagation delay.
    #[serde(default)]
    pub delay: Dur,
    /// Random loss probability on arrival (netem `loss random`), 0..1.
    #[serde(default)]
    pub loss: f64,
    #[serde(default)]
    pub qdisc: QdiscConfig,
    /// Changes over time: `{ at, rate }` (a capacity drop, a varying link),
    /// `{ at, qdisc = {...} }` (`tc qdisc replace`) or `{ at, change = {...} }`
    /// (`tc qdisc change`, parameters merged onto the qdisc in force).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<RateStep>,
    /// Header rewriting on arrival: `{ ecn = "ect1", dscp = 0 }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<RewriteSpec>,
    /// A request-grant MAC in front of the link (a DOCSIS upstream): the
    /// qdisc's packets leave only with a grant (`qdisc/grant.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<crate::qdisc::grant::GrantConfig>,
    /// When packets leave the far end: `"exact"`, or `"emulator"` for the
    /// release timing of `ccbench-emu`'s forwarder (`forwarder.rs`). The
    /// live emulator ignores it: it has its own.
    #[serde(default, skip_serializing_if = "Forwarder::is_exact")]
    pub forwarder: Forwarder,
}

/// ECN codepoint names for `rewrite.ecn`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EcnName {
    NotEct,
    Ect0,
    Ect1,
    Ce,
}

impl EcnName {
    pub fn ecn(self) -> Ecn {
        match self {
            EcnName::NotEct => Ecn::NotEct,
            EcnName::Ect0 => Ecn::Ect0,
            EcnName::Ect1 => Ecn::Ect1,
            EcnName::Ce => Ecn::Ce,
        }
    }
}

/// A link's `rewrite` key: set the ECN field of every arriving packet (an
/// iptables-style mangle: Not-ECT and CE packets get it too) and/or its DSCP.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewriteSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<EcnName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    #[default]
    Tcp,
    Ping,
    /// Real-time video over RTP under SCReAM v2 with RFC 8888 feedback.
    Media,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub id: String,
    #[serde(default)]
    pub kind: FlowKind,
    /// Link ids from sender to receiver.
    pub path: Vec<String>,
    /// Link ids from receiver back to sender (ACKs, replies).
    #[serde(default)]
    pub reverse: Vec<String>,
    #[serde(default)]
    pub start: Dur,
    /// Each copy starts up to this much later than `start` (uniform, drawn
    /// from the flow's seeded RNG stream): run-to-run variation that the
    /// seed controls, as testbed start times vary. 0 = exact start.
    /// Default: [`TCP_START_JITTER`] for TCP flows, 0 for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_jitter: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Dur>,
    /// Copies of this flow (ids get `.1`, `.2`, ... suffixes); 0 leaves the
    /// flow out (a sweep's "0 flows" column).
    #[serde(default = "one")]
    pub count: u32,
    /// "Add one flow every T": copy i starts at start + i·T.
    #[serde(default)]
    pub start_step: Dur,
    /// Extra one-way delay of this flow's own access link, each direction
    /// (gives flows different base RTTs over a shared bottleneck).
    #[serde(default)]
    pub access_delay: Dur,
    /// Override the access delay on the reverse direction only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_delay_rev: Option<Dur>,
    #[serde(default)]
    pub dscp: u8,
    /// Host the sender runs on (default "client"); replies come from `dst`.
    /// Host-fair qdiscs (Cake's dual/triple isolation) group flows by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// Host the receiver runs on (default "server").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
    // -- TCP --
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<CcKind>,
    /// Algorithm parameters, e.g. `{ hystart = false }` for CUBIC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_params: Option<toml::Table>,
    /// Bytes to transfer; absent = unlimited bulk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Bytes>,
    /// ECN: `false`/`"off"`, `true`/`"on"` (the algorithm's own mode),
    /// `"classic"` (RFC 3168), `"ect0"`/`"ect1"` (Accurate ECN with that
    /// codepoint on every packet). Absent: on for DCTCP and Prague, off
    /// for the others (Linux; `EcnSetting::tcp_mode_for`). Pings send the
    /// codepoint given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<EcnSetting>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpConfig>,
    // -- media --
    /// SCReAM and encoder parameters (the BW test tool's options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<crate::media::MediaConfig>,
    /// Named time intervals the summary reports this flow's goodput over
    /// (e.g. "while 2 TCP flows compete").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<IntervalSpec>,
    // -- ping --
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Dur>,
    /// Probe size in bytes on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
}

fn one() -> u32 {
    1
}

fn is_zero(d: &Dur) -> bool {
    *d == Dur::ZERO
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntervalSpec {
    pub name: String,
    pub from: Dur,
    pub to: Dur,
}

/// Default `start_jitter` of a TCP flow: two bulk senders started
/// together through the kernel harness (`ccbench emulate`) sent their first
/// data 2.4–2.6 ms apart, in either order (8 of 11 pairs; the others 7 ms).
pub const TCP_START_JITTER: Dur = Dur::from_millis(5);

/// A flow's `ecn` key.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EcnSetting {
    Off,
    On,
    Classic,
    Ect0,
    Ect1,
}

impl EcnSetting {
    const NAMES: [(&'static str, EcnSetting); 5] = [
        ("off", EcnSetting::Off),
        ("on", EcnSetting::On),
        ("classic", EcnSetting::Classic),
        ("ect0", EcnSetting::Ect0),
        ("ect1", EcnSetting::Ect1),
    ];
    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, v)| *v == self).unwrap().0
    }
    /// A TCP flow's ECN mode: `setting` if given, else on (the
    /// algorithm's own mode) for an algorithm that needs ECN (Linux
    /// `TCP_CONG_NEEDS_ECN`: DCTCP, Prague) and off for the others, as a
    /// Linux host with the default `tcp_ecn` = 2 negotiates it.
    pub fn tcp_mode_for(setting: Option<EcnSetting>, algo: &crate::cc::AnyCc) -> EcnMode {
        use crate::cc::CongestionControl;
        let default = if algo.needs_ecn() { EcnSetting::On } else { EcnSetting::Off };
        setting.unwrap_or(default).tcp_mode(algo.ecn_mode())
    }
    /// The TCP ECN mode, given what the algorithm asks for when ECN is on.
    pub fn tcp_mode(self, algo: EcnMode) -> EcnMode {
        match self {
            EcnSetting::Off => EcnMode::Off,
            EcnSetting::On => algo,
            EcnSetting::Classic => EcnMode::Classic,
            EcnSetting::Ect0 => EcnMode::Accurate(Ecn::Ect0),
            EcnSetting::Ect1 => EcnMode::Accurate(Ecn::Ect1),
        }
    }
    /// The setting that names a mode exactly (for the resolved scenario).
    pub fn of_mode(m: EcnMode) -> EcnSetting {
        match m {
            EcnMode::Off => EcnSetting::Off,
            EcnMode::Classic => EcnSetting::Classic,
            EcnMode::Accurate(Ecn::Ect1) => EcnSetting::Ect1,
            EcnMode::Accurate(_) => EcnSetting::Ect0,
        }
    }
    /// The codepoint a media flow sends: ECT(1) is SCReAM's L4S mode
    /// (`-ect 1`), ECT(0) its classic-ECN mode (`-ect 0`).
    pub fn media_ecn(self) -> Ecn {
        match self {
            EcnSetting::Off => Ecn::NotEct,
            EcnSetting::On | EcnSetting::Ect1 => Ecn::Ect1,
            EcnSetting::Classic | EcnSetting::Ect0 => Ecn::Ect0,
        }
    }
    /// The codepoint a probe sends.
    pub fn probe_ecn(self) -> Ecn {
        match self {
            EcnSetting::Off => Ecn::NotEct,
            EcnSetting::Ect1 => Ecn::Ect1,
            _ => Ecn::Ect0,
        }
    }
}

impl Serialize for EcnSetting {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for EcnSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = EcnSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false, or one of \"off\", \"on\", \"classic\", \"ect0\", \"ect1\"")
            }
            fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<EcnSetting, E> {
                Ok(if b { EcnSetting::On } else { EcnSetting::Off })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<EcnSetting, E> {
                EcnSetting::NAMES.iter().find(|(n, _)| *n == v).map(|(_, e)| *e).ok_or_else(|| {
                    E::custom(format!("unknown ECN setting \"{v}\"; allowed: true, false, \"off\", \"on\", \"classic\", \"ect0\", \"ect1\""))
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// Default ping: one probe every 100 ms, 98 B on the wire (56 B payload,
/// ICMP + IPv4 + Ethernet headers, like `ping`'s default).
pub const PING_INTERVAL: Dur = Dur::from_millis(100);
pub const PING_SIZE: u32 = 98;

/// A scenario parsed from text, with the source kept for error locations.
pub struct Parsed {
    pub scenario: Scenario,
    /// The text after overrides (what was actually read).
    pub text: String,
    pub file: String,
    /// Legal values that are probably not meant (a `"100Mbps"` rate is
    /// 800 Mbit/s as in tc): printed by the front end, never fatal.
    pub warnings: Vec<Problem>,
}

/// Parse scenario text, apply `key.path=value` overrides, validate, and
/// fill in every default. `file` names the source in error messages.
pub fn parse(text: &str, file: &str, overrides: &[String]) -> Result<Parsed, ScenarioError> {
    parse_opts(text, file, overrides, false)
}

/// As [`parse`]; `streamed`: the run will write its tables to disk as it
/// goes (see [`crate::run_with_spill`]), so the memory estimate leaves them out.
pub fn parse_opts(text: &str, file: &str, overrides: &[String], streamed: bool) -> Result<Parsed, ScenarioError> {
    let orig = text;
    let (text, applied) = overrides::apply(text, file, overrides)?;
    // Problems are located in the file as written; those about a value an
    // override set name the override (`--set: links.x.rate: ...`, the form
    // of an override that could not be applied) instead of a file line.
    let blame = |mut p: Problem| {
        if let Some(o) = applied.iter().rev().find(|o| o.covers(&p.key)) {
            // Name the value in the scenario's terms when the override's
            // spelling differs (an id for an index, or a key inside it).
            if p.key.replace('[', ".").replace(']', "") != o.written {
                p.message = format!("{}: {}", p.key, p.message);
            }
            p.file = "--set".into();
            p.line = None;
            p.col = None;
            p.key = o.written.clone();
        }
        p
    };
    let fail = |problems: Vec<Problem>| ScenarioError { problems: problems.into_iter().map(blame).collect() };
    let src = error::Source::new(orig, file);
    let at = |path: &[Seg], msg: String| src.problem(path, msg);
    let scenario = read(&text, &src).map_err(|e| fail(e.problems))?;
    let problems = validate(&scenario, &at);
    if !problems.is_empty() {
        return Err(fail(problems));
    }
    let scenario = resolve(scenario);
    let mut problems = Vec::new();
    if scenario.metrics.warmup >= scenario.duration {
        problems.push(at(
            &[Seg::Key("metrics".into()), Seg::Key("warmup".into())],
            format!("must be shorter than the run ({}), or nothing would be measured", scenario.duration),
        ));
    }
    problems.extend(limits::timeless_flows(&scenario).into_iter().map(|(path, m)| at(&path, m)));
    problems.extend(limits::check(&scenario, streamed).into_iter().map(|(path, m)| at(&path, m)));
    if !problems.is_empty() {
        return Err(fail(problems));
    }
    let root: toml::Table = toml::from_str(&text).unwrap_or_default();
    let warnings = limits::warnings(&scenario, &root).into_iter().map(|(path, m)| blame(at(&path, m))).collect();
    Ok(Parsed { scenario, text, file: file.to_string(), warnings })
}

fn serde_path(p: &serde_path_to_error::Path) -> Vec<Seg> {
    use serde_path_to_error::Segment;
    p.iter()
        .filter_map(|s| match s {
            Segment::Seq { index } => Some(Seg::Index(*index)),
            Segment::Map { key } => Some(Seg::Key(key.clone())),
            Segment::Enum { .. } | Segment::Unknown => None,
        })
        .collect()
}

/// Read the document section by section (each link and flow on its own),
/// so that one bad value does not hide the problems after it.
/// `text` is what overrides made of the file `orig` (where problems are located).
fn read(text: &str, orig: &error::Source) -> Result<Scenario, ScenarioError> {
    let one = |p: Problem| ScenarioError { problems: vec![p] };
    let root: toml::Table =
        toml::from_str(text).map_err(|e: toml::de::Error| one(toml_problem(&error::Source::new(text, orig.file), &e, &[])))?;
    let mut problems = Vec::new();
    // Sections read element-wise; everything else is read as one table.
    let mut rest = toml::Table::new();
    let mut links = Vec::new();
    let mut flows = Vec::new();
    for (key, value) in root {
        match (key.as_str(), value) {
            ("links" | "flows", toml::Value::Array(items)) => {
                for (i, item) in items.into_iter().enumerate() {
                    let base = vec![Seg::Key(key.clone()), Seg::Index(i)];
                    if key == "links" {
                        links.extend(de::<LinkSpec>(orig, item, base, &mut problems));
                    } else {
                        flows.extend(de::<FlowSpec>(orig, item, base, &mut problems));
                    }
                }
                rest.insert(key, toml::Value::Array(Vec::new()));
            }
            (_, value) => {
                rest.insert(key, value);
            }
        }
    }
    let head = de::<Scenario>(orig, toml::Value::Table(rest), Vec::new(), &mut problems);
    match head {
        Some(mut s) if problems.is_empty() => {
            s.links = links;
            s.flows = flows;
            Ok(s)
        }
        _ => {
            problems.sort_by_key(|p| (p.line.unwrap_or(usize::MAX), p.col));
            Err(ScenarioError { problems })
        }
    }
}

/// Deserialize one section, recording a located problem on failure.
fn de<T: serde::de::DeserializeOwned>(src: &error::Source, v: toml::Value, base: Vec<Seg>, problems: &mut Vec<Problem>) -> Option<T> {
    match serde_path_to_error::deserialize::<_, T>(v) {
        Ok(x) => Some(x),
        Err(e) => {
            let mut path = base;
            path.extend(serde_path(e.path()));
            problems.push(toml_problem(src, e.inner(), &path));
            None
        }
    }
}

/// A problem from the TOML reader: syntax errors carry a span; data errors
/// carry the serde path.
fn toml_problem(src: &error::Source, e: &toml::de::Error, path: &[Seg]) -> Problem {
    let mut message = e.message().trim().to_string();
    let mut path = path.to_vec();
    // "unknown field `foo`, expected one of ...": point at the key itself.
    if let Some(rest) = message.strip_prefix("unknown field `") {
        if let Some(k) = rest.split('`').next() {
            if path.last() != Some(&Seg::Key(k.to_string())) {
                path.push(Seg::Key(k.to_string()));
            }
        }
    }
    // Serde's wording for internally tagged enums names the tag values.
    if message.starts_with("unknown variant") {
        message = message.replace("unknown variant", "unknown value");
    }
    let (line, col) = match e.span() {
        Some(sp) => {
            let (l, c) = src.line_col(sp.start);
            (Some(l), Some(c))
        }
        None => (None, None),
    };
    let mut p = src.problem(&path, message);
    if p.line.is_none() {
        p.line = line;
        p.col = col;
    }
    p
}

/// Checks serde cannot express: references between sections, ranges,
/// options that only apply to one kind of flow. Collects every problem.
fn validate(s: &Scenario, at: &dyn Fn(&[Seg], String) -> Problem) -> Vec<Problem> {
    let k = |s: &str| Seg::Key(s.to_string());
    let mut out = Vec::new();
    if s.duration == Dur::ZERO && s.test.is_none() {
        out.push(at(&[k("duration")], "must be given and greater than 0".into()));
    }
    if s.metrics.interval < limits::MIN_METRICS_INTERVAL {
        out.push(at(&[k("metrics"), k("interval")], format!("must be at least {}, got {}", limits::MIN_METRICS_INTERVAL, s.metrics.interval)));
    }
    if s.duration > limits::MAX_DURATION {
        out.push(at(&[k("duration")], format!("must be at most {} (11.6 days of simulated time), got {}", limits::MAX_DURATION, s.duration)));
    }
    if s.limits.memory.0 < 1 << 20 {
        out.push(at(&[k("limits"), k("memory")], "must be at least 1mb".into()));
    }
    if s.links.is_empty() {
        out.push(at(&[], "a scenario needs at least one [[links]] entry".into()));
    }
    if let Some(c) = &s.commands {
        if c.client.as_ref().is_some_and(|c| c.trim().is_empty()) || (c.client.is_none() && c.flows.is_empty()) {
            out.push(at(&[k("commands"), k("client")], "must be a shell command (what the first flow's client host runs), unless commands.flows gives one per flow".into()));
        }
        for (id, cmd) in &c.flows {
            if !s.flows.iter().any(|f| &f.id == id) {
                let ids = error::some_of(s.flows.iter().map(|f| f.id.clone()));
                out.push(at(&[k("commands"), k("flows"), k(id)], format!("no flow has id \"{id}\" (flows: {ids})")));
            } else if cmd.trim().is_empty() {
                out.push(at(&[k("commands"), k("flows"), k(id)], "must be a shell command, not empty".into()));
            }
        }
        for (i, srv) in c.server.iter().enumerate() {
            if srv.trim().is_empty() {
                out.push(at(&[k("commands"), k("server"), Seg::Index(i)], "must be a shell command, not empty".into()));
            }
        }
    }
    if s.flows.is_empty() && s.test.is_none() {
        out.push(at(&[], "a scenario needs at least one [[flows]] entry or a [test]".into()));
    }
    let mut ids = std::collections::BTreeSet::new();
    for (i, l) in s.links.iter().enumerate() {
        let p = |key: &str| vec![k("links"), Seg::Index(i), k(key)];
        if !ids.insert(l.id.as_str()) {
            out.push(at(&p("id"), format!("duplicate link id \"{}\"", l.id)));
        }
        if l.rate == Some(Rate(0)) {
            out.push(at(&p("rate"), "must be greater than 0 (omit the key for an unlimited link)".into()));
        }
        if !(0.0..=1.0).contains(&l.loss) {
            out.push(at(&p("loss"), format!("must be a probability between 0 and 1, got {}", l.loss)));
        }
        for (j, st) in l.schedule.iter().enumerate() {
            if st.rate == Some(Rate(0)) {
                out.push(at(&[k("links"), Seg::Index(i), k("schedule"), Seg::Index(j), k("rate")], "must be greater than 0".into()));
            }
        }
        if let Err(errs) = timeline::resolve(&l.qdisc, &l.schedule) {
            for (j, key, m) in errs {
                out.push(at(&[k("links"), Seg::Index(i), k("schedule"), Seg::Index(j), k(key)], m));
            }
        }
        if let Some(d) = l.rewrite.as_ref().and_then(|r| r.dscp) {
            if d > 63 {
                out.push(at(&[k("links"), Seg::Index(i), k("rewrite"), k("dscp")], format!("must be 0..63, got {d}")));
            }
        }
        if let Err(m) = l.qdisc.validate() {
            out.push(at(&p("qdisc"), m));
        }
        if let Some(Err(m)) = l.grant.as_ref().map(|g| g.validate()) {
            out.push(at(&p("grant"), m));
        }
        if l.rate.is_none() && l.schedule.iter().any(|st| st.rate.is_some()) {
            out.push(at(&p("schedule"), "a rate schedule needs a starting `rate`".into()));
        }
    }
    for (j, c) in s.metrics.capture.iter().enumerate() {
        if !ids.contains(c.as_str()) {
            out.push(at(&[k("metrics"), k("capture"), Seg::Index(j)], format!("unknown link \"{c}\"")));
        }
    }
    if let Some(t) = &s.test {
        for (key, list) in [("up", &t.up), ("down", &t.down)] {
            if list.is_empty() {
                out.push(at(&[k("test"), k(key)], "needs at least one link".into()));
            }
            for (j, id) in list.iter().enumerate() {
                if !ids.contains(id.as_str()) {
                    out.push(at(&[k("test"), k(key), Seg::Index(j)], format!("unknown link \"{id}\"")));
                }
            }
        }
        if t.start_jitter > Dur::ZERO && t.start_jitter >= t.length {
            out.push(at(&[k("test"), k("start_jitter")], format!("must be shorter than the test's length ({})", t.length)));
        }
        if matches!(t.name, shapes::ShapeName::TcpNup | shapes::ShapeName::TcpNdown) && t.streams.unwrap_or(1) == 0 {
            out.push(at(&[k("test"), k("streams")], "must be at least 1".into()));
        }
        for f in t.flows() {
            if s.flows.iter().any(|g| g.id == f.id) {
                out.push(at(&[k("test")], format!("adds flow \"{}\", which [[flows]] already has", f.id)));
            }
        }
    }
    // Each copy is a sender and receiver of a few KiB: bound them all.
    let copies: u64 = s.flows.iter().map(|f| u64::from(f.count)).sum();
    if copies > u64::from(limits::MAX_COUNT) && s.flows.iter().all(|f| f.count <= limits::MAX_COUNT) {
        out.push(at(&[k("flows")], format!("{copies} flows in all (counting `count` copies); at most {} are allowed", limits::MAX_COUNT)));
    }
    let mut fids = std::collections::BTreeSet::new();
    for (i, f) in s.flows.iter().enumerate() {
        let p = |key: &str| vec![k("flows"), Seg::Index(i), k(key)];
        if !fids.insert(f.id.as_str()) {
            out.push(at(&p("id"), format!("duplicate flow id \"{}\"", f.id)));
        }
        if f.path.is_empty() {
            out.push(at(&p("path"), "a flow needs at least one link on its path".into()));
        }
        for (key, list) in [("path", &f.path), ("reverse", &f.reverse)] {
            for (j, id) in list.iter().enumerate() {
                if !ids.contains(id.as_str()) {
                    let known = error::some_of(s.links.iter().map(|l| format!("\"{}\"", l.id)));
                    out.push(at(&[k("flows"), Seg::Index(i), k(key), Seg::Index(j)], format!("unknown link \"{id}\" (links are: {known})")));
                }
            }
        }
        if f.count > limits::MAX_COUNT {
            out.push(at(&p("count"), format!("must be 0..={}, got {}", limits::MAX_COUNT, f.count)));
        }
        if f.dscp > 63 {
            out.push(at(&p("dscp"), format!("must be 0..63, got {}", f.dscp)));
        }
        if let Some(stop) = f.stop {
            if stop <= f.start + f.start_jitter.unwrap_or(Dur::ZERO) {
                out.push(at(&p("stop"), "must be after `start` (plus `start_jitter`)".into()));
            }
        }
        let only = |key: &str, kind: &str| at(&p(key), format!("applies only to {kind} flows"));
        if f.media.is_some() && f.kind != FlowKind::Media {
            out.push(only("media", "media"));
        }
        for (j, iv) in f.intervals.iter().enumerate() {
            if iv.to <= iv.from {
                out.push(at(&[k("flows"), Seg::Index(i), k("intervals"), Seg::Index(j), k("to")], "must be after `from`".into()));
            }
        }
        match f.kind {
            FlowKind::Tcp => {
                if f.interval.is_some() {
                    out.push(only("interval", "ping"));
                }
                if f.size.is_some() {
                    out.push(only("size", "ping"));
                }
                if let Some(t) = &f.tcp {
                    if !(576..=65535).contains(&t.mtu) {
                        out.push(at(&[k("flows"), Seg::Index(i), k("tcp"), k("mtu")], format!("must be 576..65535, got {}", t.mtu)));
                    }
                    // An initial window is sent at once: bound it like a
                    // receive window of 65535 segments.
                    if !(1..=65535).contains(&t.init_cwnd) {
                        out.push(at(&[k("flows"), Seg::Index(i), k("tcp"), k("init_cwnd")], format!("must be 1..=65535, got {}", t.init_cwnd)));
                    }
                    for (key, (jitter, prob, stall)) in [("tx", (t.tx_jitter, t.tx_stall_prob, t.tx_stall)), ("ack", (t.ack_jitter, t.ack_stall_prob, t.ack_stall))] {
                        let path = |name: &str| [k("flows"), Seg::Index(i), k("tcp"), k(&format!("{key}_{name}"))];
                        let limit = crate::units::Dur::from_millis(100);
                        if jitter > limit {
                            out.push(at(&path("jitter"), format!("must be at most 100ms, got {jitter}")));
                        }
                        if !(0.0..=0.5).contains(&prob) {
                            out.push(at(&path("stall_prob"), format!("must be 0..=0.5, got {prob}")));
                        }
                        if stall > limit {
                            out.push(at(&path("stall"), format!("must be at most 100ms, got {stall}")));
                        }
                    }
                    // Linux clamps socket buffers to at least SOCK_MIN_SNDBUF/RCVBUF
                    // (4608/2304 B); we ask for room for two full segments.
                    let min_buf = 2 * u64::from(t.mtu);
                    // wmem_default is exempt: the send buffer expands at
                    // establishment (tcp_init_buffer_space), so 16 KiB works
                    // with jumbo frames as it does in Linux.
                    for (key, v) in [("wmem_max", t.wmem_max), ("rmem_default", t.rmem_default), ("rmem_max", t.rmem_max)] {
                        if v.0 < min_buf {
                            out.push(at(&[k("flows"), Seg::Index(i), k("tcp"), k(key)], format!("must be at least 2 MTU ({min_buf} bytes), got {}", v.0)));
                        }
                    }
                }
                if let Err(e) = f.cc_config() {
                    out.push(at(&p("cc_params"), e));
                }
            }
            FlowKind::Media => {
                for (key, set) in [("cc", f.cc.is_some()), ("cc_params", f.cc_params.is_some()), ("bytes", f.bytes.is_some()), ("tcp", f.tcp.is_some()), ("interval", f.interval.is_some()), ("size", f.size.is_some())] {
                    if set {
                        out.push(at(&p(key), "does not apply to media flows".into()));
                    }
                }
                if let Some(m) = &f.media {
                    if !(m.fps > 0.0 && m.fps <= 1000.0) {
                        out.push(at(&[k("flows"), Seg::Index(i), k("media"), k("fps")], format!("must be in (0, 1000], got {}", m.fps)));
                    }
                    if !(0.0..=200.0).contains(&m.rand) {
                        out.push(at(&[k("flows"), Seg::Index(i), k("media"), k("rand")], format!("must be 0..200 (percent), got {}", m.rand)));
                    }
                    if !(100..=9000).contains(&m.mtu) {
                        out.push(at(&[k("flows"), Seg::Index(i), k("media"), k("mtu")], format!("must be 100..9000 bytes, got {}", m.mtu)));
                    }
                    if m.min_rate > m.max_rate {
                        out.push(at(&[k("flows"), Seg::Index(i), k("media"), k("min_rate")], "must not exceed max_rate".into()));
                    }
                    if m.l4s_alpha_gain.is_some_and(|g| !(g > 0.0 && g <= 1.0)) {
                        let g = m.l4s_alpha_gain.unwrap_or_default();
                        out.push(at(&[k("flows"), Seg::Index(i), k("media"), k("l4s_alpha_gain")], format!("must be in (0, 1], got {g}")));
                    }
                    if m.feedback_interval.is_some_and(|d| d == crate::units::Dur::ZERO || d > crate::units::Dur::from_secs(1)) {
                        out.push(at(&[k("flows"), Seg::Index(i), k("media"), k("feedback_interval")], "must be in (0, 1s]".into()));
                    }
                }
            }
            FlowKind::Ping => {
                for key in ["cc", "cc_params", "bytes", "tcp"] {
                    let set = match key {
                        "cc" => f.cc.is_some(),
                        "cc_params" => f.cc_params.is_some(),
                        "bytes" => f.bytes.is_some(),
                        _ => f.tcp.is_some(),
                    };
                    if set {
                        out.push(only(key, "tcp"));
                    }
                }
                if let Some(iv) = f.interval {
                    if iv < limits::MIN_PING_INTERVAL {
                        out.push(at(&p("interval"), format!("must be at least {}, got {iv}", limits::MIN_PING_INTERVAL)));
                    }
                }
                if let Some(sz) = f.size {
                    if !(28..=65535).contains(&sz) {
                        out.push(at(&p("size"), format!("must be 28..65535 bytes, got {sz}")));
                    }
                }
            }
        }
    }
    out
}

/// Fill in every default so the resolved scenario states all parameters.
fn resolve(mut s: Scenario) -> Scenario {
    if let Some(t) = s.test.take() {
        if s.duration == Dur::ZERO {
            s.duration = t.total();
        }
        s.flows.extend(t.flows());
    }
    for l in &mut s.links {
        l.qdisc.resolve();
        for q in l.schedule.iter_mut().filter_map(|st| st.qdisc.as_mut()) {
            q.resolve();
        }
    }
    for f in &mut s.flows {
        match f.kind {
            FlowKind::Tcp => {
                let cfg = f.cc_config().expect("validated");
                f.cc = Some(cfg.kind());
                f.cc_params = Some(cfg.params_table());
                f.ecn = Some(EcnSetting::of_mode(EcnSetting::tcp_mode_for(f.ecn, &cfg.build())));
                f.tcp.get_or_insert_with(TcpConfig::default);
                f.start_jitter.get_or_insert(TCP_START_JITTER);
            }
            FlowKind::Media => {
                f.ecn.get_or_insert(EcnSetting::Off);
                f.media.get_or_insert_with(Default::default);
            }
            FlowKind::Ping => {
                f.ecn.get_or_insert(EcnSetting::Off);
                f.interval.get_or_insert(PING_INTERVAL);
                f.size.get_or_insert(PING_SIZE);
            }
        }
    }
    s
}

impl Scenario {
    /// The resolved scenario as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("scenario serializes")
    }

    /// Per `[[flows]]` entry, the ids of its sender's and receiver's hosts
    /// (`src`, default "client"; `dst`, default "server"), numbered in order
    /// of first use from "client" 0 and "server" 1: what packets carry as
    /// `src_host`/`dst_host` for host-fair qdiscs (Cake).
    pub fn host_ids(&self) -> Vec<(u16, u16)> {
        fn id<'a>(names: &mut Vec<&'a str>, name: &'a str) -> u16 {
            let i = names.iter().position(|n| *n == name).unwrap_or_else(|| {
                names.push(name);
                names.len() - 1
            });
            i as u16
        }
        let mut names = vec!["client", "server"];
        let mut ids = Vec::with_capacity(self.flows.len());
        for f in &self.flows {
            let src = id(&mut names, f.src.as_deref().unwrap_or("client"));
            ids.push((src, id(&mut names, f.dst.as_deref().unwrap_or("server"))));
        }
        ids
    }

    /// The `[[flows]]` entry a flow belongs to, by the entry's id or a
    /// copy's (see [`FlowSpec::copy_name`]).
    pub fn flow_entry(&self, name: &str) -> Option<usize> {
        self.flows.iter().position(|f| f.id == name || (f.count > 1 && (0..f.count).any(|c| f.copy_name(c) == name)))
    }
}

impl FlowSpec {
    /// Copy `copy`'s flow id: the entry's id, with `.1`, `.2`, ... when
    /// `count` makes several.
    pub fn copy_name(&self, copy: u32) -> String {
        if self.count == 1 { self.id.clone() } else { format!("{}.{}", self.id, copy + 1) }
    }

    /// The flow's congestion control with its parameters (`cc` + `cc_params`).
    pub fn cc_config(&self) -> Result<CcConfig, String> {
        let kind = self.cc.unwrap_or_default();
        let Some(params) = &self.cc_params else { return Ok(CcConfig::default_for(kind)) };
        let mut t = params.clone();
        t.insert("algo".into(), toml::Value::String(kind.name().into()));
        toml::Value::Table(t).try_into::<CcConfig>().map_err(|e| format!("{} ({})", e.message().trim(), kind.name()))
    }
}

#[cfg(test)]
mod tests;
