//! ccbench-emu: live emulation. ccbench's links and qdiscs (the simulator's
//! own code) carry real packets between Linux network namespaces.
//!
//! * [`frame`]: real IPv4 frames <-> the core's `Packet` (ECN, DSCP, tuple).
//! * [`path`]: one direction's links and routes on a virtual departure clock.
//! * [`forward`]: the AF_PACKET forwarder (`recvmmsg`/`sendmmsg`).
//! * [`netns`]: namespaces, veths, offloads, children, and their cleanup.
//! * [`tools`]: tiny UDP traffic programs the tests run in the namespaces.
//!
//! Linux only; everything but `frame` and `path` needs root.

pub mod clock;
pub mod forward;
pub mod frame;
pub mod netns;
pub mod path;
pub mod tools;

use ccbench_core::scenario::Scenario;
use ccbench_core::units::Dur;
use path::{EmuPath, Route, Stage};

/// The emulated network of a scenario: one client host (namespace) per
/// `[[flows]]` entry, in order, each with its route: the flow's `path`
/// (client to server) and `reverse` links, each behind the flow's own access
/// delay as the simulator builds it (`scenario/build.rs`). A link listed by
/// several flows is one stage, shared. An empty `reverse` passes frames
/// straight through. `hosts[k]` is flow entry k's id.
pub struct Network {
    pub fwd: EmuPath,
    pub rev: EmuPath,
    pub hosts: Vec<String>,
}

pub fn network_for(sc: &Scenario) -> Result<Network, String> {
    if sc.flows.is_empty() {
        return Err("the scenario has no [[flows]]: emulation routes each flow's client through its path and reverse".into());
    }
    let (mut fwd, mut rev) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for (flow, hosts) in sc.flows.iter().zip(sc.host_ids()) {
        let rev_delay = flow.access_delay_rev.unwrap_or(flow.access_delay);
        for ((stages, routes), ids, access, hosts) in [
            (&mut fwd, &flow.path, (flow.access_delay, "access"), hosts),
            (&mut rev, &flow.reverse, (rev_delay, "access_rev"), (hosts.1, hosts.0)),
        ] {
            let mut route = Route { stages: Vec::new(), hosts };
            if access.0 > Dur::ZERO {
                stages.push(Stage::access(sc.seed, &format!("{}.{}", flow.id, access.1), access.0));
                route.stages.push(stages.len() - 1);
            }
            for id in ids {
                let i = match stages.iter().position(|s: &Stage| s.name() == id) {
                    Some(i) => i,
                    None => {
                        let spec = sc.links.iter().find(|l| &l.id == id).ok_or(format!("unknown link {id:?}"))?;
                        stages.push(Stage::from_spec(sc.seed, spec));
                        stages.len() - 1
                    }
                };
                route.stages.push(i);
            }
            routes.push(route);
        }
    }
    let fwd_names: Vec<&str> = fwd.0.iter().map(Stage::name).collect();
    if let Some(both) = rev.0.iter().find(|s| fwd_names.contains(&s.name())) {
        return Err(format!(
            "link {:?} is on one flow's path and another's reverse: the emulator keeps the two directions apart",
            both.name()
        ));
    }
    Ok(Network {
        fwd: EmuPath::with_routes(fwd.0, fwd.1),
        rev: EmuPath::with_routes(rev.0, rev.1),
        hosts: sc.flows.iter().map(|f| f.id.clone()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbench_core::units::SimTime;

    fn scenario(flows: &str) -> Scenario {
        let text = format!(
            "name='t'\nduration='1s'\n[[links]]\nid='bn'\nrate='10Mbit'\ndelay='5ms'\n[[links]]\nid='ret'\ndelay='5ms'\n{flows}"
        );
        ccbench_core::scenario::parse(&text, "t.toml", &[]).unwrap().scenario
    }

    /// One client host per flow entry; links shared by id, access delays per
    /// flow (reverse defaulting to forward), host ids numbered as the simulator's.
    #[test]
    fn one_route_per_flow_over_shared_links() {
        let sc = scenario(
            "[[flows]]\nid='a'\npath=['bn']\nreverse=['ret']\n\
             [[flows]]\nid='b'\nsrc='laptop'\naccess_delay='20ms'\naccess_delay_rev='7ms'\npath=['bn']\nreverse=['ret']\n",
        );
        let net = network_for(&sc).unwrap();
        assert_eq!(net.hosts, ["a", "b"]);
        let names = |p: &EmuPath| p.stages.iter().map(|s| s.name().to_string()).collect::<Vec<_>>();
        assert_eq!(names(&net.fwd), ["bn", "b.access"]);
        assert_eq!(names(&net.rev), ["ret", "b.access_rev"]);
        assert_eq!(net.fwd.reports()[1].delay_ms, 20.0);
        assert_eq!(net.rev.reports()[1].delay_ms, 7.0);
        assert_eq!((net.fwd.routes(), net.rev.routes()), (2, 2));
        // Flow a's packets cross the bottleneck only, flow b's its access stage first, from host 2 ("laptop").
        let mut fwd = net.fwd;
        let mut out = Vec::new();
        for route in [0, 1] {
            let p = ccbench_core::packet::Packet { size: 1514, ..Default::default() };
            fwd.arrive(SimTime(route * 100_000_000), route as usize, p, &mut |_, _| {});
        }
        fwd.advance(SimTime(1_000_000_000), &mut |t, p| out.push((t, p.flow.0, p.src_host, p.dst_host)));
        let bn = 1_211_200 + 5_000_000;
        assert_eq!(out, [(SimTime(bn), 0, 0, 1), (SimTime(100_000_000 + 20_000_000 + bn), 1, 2, 1)]);
    }

    #[test]
    fn a_link_in_both_directions_is_refused() {
        let sc = scenario("[[flows]]\nid='a'\npath=['bn']\nreverse=['ret']\n[[flows]]\nid='b'\npath=['ret']\nreverse=['bn']\n");
        let err = network_for(&sc).err().unwrap();
        assert!(err.contains("\"ret\"") && err.contains("directions"), "{err}");
    }
}
