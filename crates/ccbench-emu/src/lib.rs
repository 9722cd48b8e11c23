//! ccbench-emu: live emulation. ccbench's links and qdiscs (the simulator's
//! own code) carry real packets between Linux network namespaces.
//!
//! * [`frame`]: real IPv4 frames <-> the core's `Packet` (ECN, DSCP, tuple).
//! * [`path`]: one direction's links on a virtual departure clock.
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
use path::{EmuPath, Stage};

/// The two directions of a scenario's first flow: its `path` (client to
/// server) and its `reverse` links, each behind the flow's access delay as
/// the simulator builds it (`scenario/build.rs`). An empty `reverse` passes
/// frames straight through.
pub fn paths_for(sc: &Scenario) -> Result<(EmuPath, EmuPath), String> {
    let flow = sc
        .flows
        .first()
        .ok_or("the scenario has no [[flows]]: emulation uses the first flow's path and reverse")?;
    let link = |id: &String| -> Result<Stage, String> {
        let spec = sc
            .links
            .iter()
            .find(|l| &l.id == id)
            .ok_or(format!("unknown link {id:?}"))?;
        Ok(Stage::from_spec(sc.seed, spec))
    };
    let mut fwd = Vec::new();
    if flow.access_delay > Dur::ZERO {
        fwd.push(Stage::delay_only(
            sc.seed,
            &format!("{}.access", flow.id),
            flow.access_delay,
        ));
    }
    for id in &flow.path {
        fwd.push(link(id)?);
    }
    let mut rev = Vec::new();
    let rev_delay = flow.access_delay_rev.unwrap_or(flow.access_delay);
    if rev_delay > Dur::ZERO {
        rev.push(Stage::delay_only(
            sc.seed,
            &format!("{}.access_rev", flow.id),
            rev_delay,
        ));
    }
    for id in &flow.reverse {
        rev.push(link(id)?);
    }
    Ok((EmuPath::new(fwd), EmuPath::new(rev)))
}
