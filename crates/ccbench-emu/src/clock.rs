//! Clocks and kernel packet timestamps, shared by the forwarder and the tools.

/// Control buffer for one received message's timestamp (a cmsghdr and a timespec), in u64s.
pub const CTL_WORDS: usize = 8;

/// A clock in ns.
fn read(clock: libc::clockid_t) -> i128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
}

/// CLOCK_MONOTONIC in ns: the forwarder's time base.
pub fn monotonic_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC) as u64
}

/// CLOCK_REALTIME in ns: what SO_TIMESTAMPNS stamps packets with.
pub fn realtime_ns() -> i128 {
    read(libc::CLOCK_REALTIME)
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC in ns, to carry a packet's kernel
/// stamp onto the forwarder's clock. Two plain reads put whatever separates
/// them (a preemption, a VM's stolen time: tens of µs) into the offset and
/// so move every packet of the batch that much earlier; the realtime read is
/// bracketed by two monotonic ones instead, and the tightest of a few
/// brackets is kept.
pub fn realtime_offset_ns() -> i128 {
    offset_from(|| read(libc::CLOCK_MONOTONIC), realtime_ns)
}

fn offset_from(mut mono: impl FnMut() -> i128, mut real: impl FnMut() -> i128) -> i128 {
    const TRIES: usize = 4;
    const TIGHT_NS: i128 = 2_000; // a bracket this narrow is as good as any
    let mut best = (i128::MAX, 0);
    for _ in 0..TRIES {
        let (a, r, b) = (mono(), real(), mono());
        if b - a < best.0 {
            best = (b - a, r - (a + b) / 2);
        }
        if best.0 <= TIGHT_NS {
            break;
        }
    }
    best.1
}

/// Ask the kernel to stamp every message `fd` receives (SO_TIMESTAMPNS).
pub fn enable_rx_stamps(fd: i32) -> std::io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `one` lives across the call; the size matches.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &one as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as u32,
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The SCM_TIMESTAMPNS of a received message (socket option SO_TIMESTAMPNS),
/// in ns of CLOCK_REALTIME.
pub fn rx_stamp(h: &libc::msghdr) -> Option<i128> {
    // SAFETY: the control buffer was filled by the kernel; CMSG_* walk it
    // within msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some(ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scripted clocks: the first bracket straddles a 30 µs stall, the
    /// second does not; the offset is the second's, to its midpoint.
    #[test]
    fn the_offset_skips_a_bracket_with_a_stall_in_it() {
        let mono = [1_000_000, 1_030_100, 2_000_000, 2_000_200];
        let real = [9_001_030_000, 9_002_000_150];
        let (mut m, mut r) = (mono.into_iter(), real.into_iter());
        let off = offset_from(|| m.next().unwrap(), || r.next().unwrap());
        assert_eq!(off, 9_002_000_150 - 2_000_100);
        assert_eq!(m.next(), None, "stopped at the first tight bracket");
    }

    /// With every bracket wide it tries four and keeps the narrowest.
    #[test]
    fn the_offset_keeps_the_narrowest_bracket() {
        let widths = [50_000, 9_000, 30_000, 12_000];
        let mono: Vec<i128> = (0..4)
            .flat_map(|i| [(i + 1) * 1_000_000, (i + 1) * 1_000_000 + widths[i as usize]])
            .collect();
        let real = [7_000_000_000, 8_000_000_000, 9_000_000_000, 10_000_000_000];
        let (mut m, mut r) = (mono.into_iter(), real.into_iter());
        let off = offset_from(|| m.next().unwrap(), || r.next().unwrap());
        assert_eq!(off, 8_000_000_000 - (2_000_000 + 4_500));
        assert_eq!(r.next(), None, "all four tried");
    }

    #[test]
    fn the_offset_is_realtime_minus_monotonic() {
        let off = realtime_offset_ns();
        let direct = realtime_ns() - read(libc::CLOCK_MONOTONIC);
        assert!((direct - off).abs() < 1_000_000, "{direct} vs {off}");
    }
}
