//! Turn a validated [`Scenario`] into a ready-to-run [`Sim`]: links and
//! their qdiscs, per-flow access links, endpoints, and RNG streams derived
//! from the seed and each component's name.

use std::collections::BTreeMap;

use super::{EcnSetting, FlowKind, LinkSpec, Scenario, PING_INTERVAL, PING_SIZE};
use crate::cc::CongestionControl;
use crate::media::rfc8888::MediaReceiver;
use crate::media::sender::MediaSender;
use crate::packet::Ecn;
use crate::flow::{Endpoints, Flow, Ping};
use crate::link::Link;
use crate::packet::{Dir, FlowId, LinkId, Packet};
use crate::qdisc::fifo::PfifoConfig;
use crate::qdisc::AnyQdisc;
use crate::rng::SimRng;
use crate::sim::Sim;
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::TcpSender;
use crate::tcp::HostQueue;

use crate::units::{Dur, SimTime};

/// The RTT a SYN/SYN-ACK exchange would measure on an idle path:
/// propagation, the delay a qdisc adds when idle (netem), and serialization
/// of a 74 B SYN on every link, both ways. `specs` are the scenario's links,
/// the first entries of `links`.
fn syn_rtt(links: &[Link], specs: &[LinkSpec], fwd: &[LinkId], rev: &[LinkId]) -> Dur {
    fwd.iter()
        .chain(rev)
        .map(|l| {
            let link = &links[l.0 as usize];
            let qdisc = specs.get(l.0 as usize).map_or(Dur::ZERO, |s| s.qdisc.idle_delay());
            link.delay + qdisc + link.rate.tx_time(74)
        })
        .fold(Dur::ZERO, |a, b| a + b)
}

/// Build the simulator for a validated, resolved scenario.
pub fn build(s: &Scenario) -> Sim {
    let mut links: Vec<Link> = Vec::new();
    let mut by_id: BTreeMap<&str, LinkId> = BTreeMap::new();
    for l in &s.links {
        let mut link = l.build_link(s.seed);
        link.capture = s.metrics.capture.iter().any(|c| c == &l.id);
        by_id.insert(&l.id, LinkId(links.len() as u32));
        links.push(link);
    }
    let mut flows = Vec::new();
    for (spec, (src_host, dst_host)) in s.flows.iter().zip(s.host_ids()) {
        for copy in 0..spec.count {
            let name = spec.copy_name(copy);
            let fid = FlowId(flows.len() as u32);
            let mut fwd: Vec<LinkId> = spec.path.iter().map(|id| by_id[id.as_str()]).collect();
            let mut rev: Vec<LinkId> = spec.reverse.iter().map(|id| by_id[id.as_str()]).collect();
            let rev_delay = spec.access_delay_rev.unwrap_or(spec.access_delay);
            if spec.access_delay > Dur::ZERO {
                fwd.insert(0, LinkId(links.len() as u32));
                links.push(Link::access(s.seed, &format!("{name}.access"), spec.access_delay));
            }
            if rev_delay > Dur::ZERO {
                rev.insert(0, LinkId(links.len() as u32));
                links.push(Link::access(s.seed, &format!("{name}.access_rev"), rev_delay));
            }
            let mut start = SimTime::ZERO + spec.start + spec.start_step * u64::from(copy);
            let start_jitter = spec.start_jitter.unwrap_or(Dur::ZERO);
            if start_jitter > Dur::ZERO {
                // Its own stream, so turning jitter on leaves every other draw alone.
                let mut rng = SimRng::for_component(s.seed, &format!("start_jitter:{name}"));
                start += Dur::from_nanos(rng.next_u64() % (start_jitter.nanos() + 1));
            }
            let stop = spec.stop.map_or(SimTime::NEVER, |d| SimTime::ZERO + d);
            let tmpl = |dir: Dir| Packet {
                flow: fid,
                dscp: spec.dscp,
                dir,
                tuple: fid.0 * 2 + u32::from(dir == Dir::Rev),
                src_host: if dir == Dir::Fwd { src_host } else { dst_host },
                dst_host: if dir == Dir::Fwd { dst_host } else { src_host },
                ..Default::default()
            };
            let mut rx_host = None;
            let (ep, cc_name, ecn_name) = match spec.kind {
                FlowKind::Tcp => {
                    let tcfg = spec.tcp.clone().unwrap_or_default();
                    let cc = spec.cc_config().expect("validated");
                    let cc_name = cc.kind().name();
                    let mut algo = cc.build();
                    algo.set_rng(SimRng::for_component(s.seed, &format!("cc:{name}")));
                    let mode = EcnSetting::tcp_mode_for(spec.ecn, &algo);
                    let syn = syn_rtt(&links, &s.links, &fwd, &rev);
                    let mut tx = TcpSender::new(tcfg.clone(), algo, mode, tmpl(Dir::Fwd), spec.bytes.map(|b| b.0), start, Some(syn));
                    tx.set_rng(SimRng::for_component(s.seed, &format!("tcp:{name}")));
                    rx_host = HostQueue::new(tcfg.ack_noise(), SimRng::for_component(s.seed, &format!("tcp-rx:{name}"))).map(Box::new);
                    let mut rx = TcpReceiver::new(&tcfg, mode);
                    rx.set_syn_rtt(syn);
                    if tx.cc.sce() {
                        rx.enable_sce();
                    }
                    (Endpoints::Tcp { tx: Box::new(tx), rx }, cc_name, mode.name())
                }
                FlowKind::Media => {
                    let cfg = spec.media.clone().unwrap_or_default();
                    let ect = spec.ecn.unwrap_or(EcnSetting::Off).media_ecn();
                    let rng = SimRng::for_component(s.seed, &format!("flow:{name}"));
                    let tx = MediaSender::new(&cfg, ect, tmpl(Dir::Fwd), rng, start);
                    let rx = MediaReceiver::new(&cfg);
                    let ecn_name = match ect {
                        Ecn::Ect1 => "l4s",
                        Ecn::NotEct => "off",
                        _ => "classic",
                    };
                    (Endpoints::Media { tx: Box::new(tx), rx: Box::new(rx) }, "scream", ecn_name)
                }
                FlowKind::Ping => (
                    Endpoints::Ping(Ping {
                        interval: spec.interval.unwrap_or(PING_INTERVAL),
                        size: spec.size.unwrap_or(PING_SIZE),
                        seq: 0,
                        next_at: SimTime::NEVER,
                        active: false,
                        sent: 0,
                        received: 0,
                        ecn: spec.ecn.unwrap_or(EcnSetting::Off).probe_ecn(),
                    }),
                    "",
                    "off",
                ),
            };
            flows.push(Flow {
                name,
                cc_name,
                ecn_name,
                fwd,
                rev,
                ep,
                start,
                stop,
                rev_tmpl: tmpl(Dir::Rev),
                fwd_tmpl: tmpl(Dir::Fwd),
                rx_host,
                timer_at: [SimTime::NEVER; 2],
                last_delivered: 0,
                last_received: 0,
                last_acked: (0, 0),
                delivered_at_warmup: 0,
                finished_at: None,
                intervals: spec.intervals.iter().map(|iv| (iv.name.clone(), SimTime::ZERO + iv.from, SimTime::ZERO + iv.to)).collect(),
            });
        }
    }
    let mut sim = Sim::new(s.name.clone(), s.seed, s.duration, links, flows, s.metrics.clone());
    let g = &mut sim.guard;
    g.memory_limit = s.limits.memory.0;
    g.disk_limit = s.limits.disk.0;
    g.events_limit = s.limits.events;
    g.static_bytes = super::limits::state_bytes(s);
    if !s.metrics.capture.is_empty() {
        g.arrival_bytes += crate::metrics::ROW_BYTES[6] as i64;
    }
    sim
}

/// What a scenario link becomes besides its qdisc config; shared by the
/// simulator and the live emulator so both build a link the same way.
impl super::LinkSpec {
    /// The runtime link of this `[[links]]` entry: its qdisc (behind its
    /// `grant` gate), schedule and header rewrite.
    pub fn build_link(&self, seed: u64) -> Link {
        let mut link = Link::new(seed, &self.id, self.rate, self.delay, self.loss, &self.qdisc, false);
        if self.grant.is_some() {
            let inner = std::mem::replace(&mut link.qdisc, AnyQdisc::Fifo(PfifoConfig::default().build()));
            link.qdisc = self.gate(inner);
        }
        link.schedule = self.steps().into();
        link.rewrite = self.rewrite();
        link.forwarder = self.forwarder;
        link
    }
    /// The qdisc behind the link's `grant` gate, if it has one.
    fn gate(&self, q: AnyQdisc) -> AnyQdisc {
        match &self.grant {
            Some(g) => AnyQdisc::Granted(Box::new(g.wrap(q))),
            None => q,
        }
    }
    /// The link's schedule in time order: rate steps, replacements and
    /// changes (each change merged onto the qdisc in force). Validated
    /// scenarios only.
    fn steps(&self) -> Vec<(SimTime, crate::link::LinkStep)> {
        let steps = super::timeline::resolve(&self.qdisc, &self.schedule).expect("schedules are validated with the scenario");
        steps.into_iter().map(|(at, st)| (SimTime::ZERO + at, st)).collect()
    }
    /// The header rewrite at the link's entrance.
    fn rewrite(&self) -> crate::link::Rewrite {
        self.rewrite.as_ref().map_or_else(Default::default, |r| crate::link::Rewrite { ecn: r.ecn.map(|e| e.ecn()), dscp: r.dscp })
    }
}
