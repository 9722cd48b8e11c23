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
