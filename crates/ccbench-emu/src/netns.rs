//! The emulation session: a router namespace between the server and one
//! client namespace per scenario flow entry (host k),
//!
//! ```text
//! ccb-<pid>-cli  [c0 10.201.0.1]  ==veth== [rc0] ccb-<pid>-rtr [rs] ==veth== [s0 10.201.0.2] ccb-<pid>-srv
//! ccb-<pid>-cli1 [c0 10.201.0.11] ==veth== [rc1]    forwarder (fwd: rcK -> rs, rev: rs -> rcK)
//! ...
//! ```
//!
//! with IPv6 off, static ARP, and TX checksum/TSO/GSO/GRO off on every veth
//! (ETHTOOL ioctls, as `ethtool -K dev tx off tso off gso off gro off`:
//! AF_PACKET would forward CHECKSUM_PARTIAL frames with unfinished
//! checksums, and coalesced GRO frames cannot be re-sent at MTU size).
//! The forwarder bridges frames unchanged (MAC addresses included), so each
//! client knows the server's MAC and the server each client's.
//!
//! Cleanup: [`Session`]'s `Drop` kills its children (by pid / process
//! group) and deletes its namespaces (their veths go with them), so normal
//! exit, errors and SIGINT/SIGTERM (which stop the wait loop) all clean up.
//! Children get `PR_SET_PDEATHSIG = SIGKILL`, so they die with a SIGKILLed
//! session; its namespaces are then removed by the next session's
//! [`remove_stale`], which deletes `ccb-<pid>-*` namespaces whose pid is
//! gone (and leaves live sessions alone).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

pub const IP_SERVER: &str = "10.201.0.2";
/// At most this many client hosts (addresses 10.201.0.11 up to .250 after the first).
pub const MAX_CLIENTS: usize = 241;

/// Client host `k`'s address: 10.201.0.1 for the first, 10.201.0.(10 + k) after.
pub fn client_ip(k: usize) -> Ipv4Addr {
    assert!(k < MAX_CLIENTS, "client host {k} of at most {MAX_CLIENTS}");
    Ipv4Addr::new(10, 201, 0, if k == 0 { 1 } else { (10 + k) as u8 })
}

/// The router's side of client host `k`'s veth.
pub fn router_if(k: usize) -> String {
    format!("rc{k}")
}

/// Fail unless we are root, naming what needs it.
pub fn require_root() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("ccbench emulate needs root (network namespaces, veth devices, AF_PACKET sockets): run it with sudo".into());
    }
    if Command::new("ip")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        return Err(
            "the `ip` command is missing: install it with `apt-get install -y iproute2`".into(),
        );
    }
    Ok(())
}

fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "ip {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether `pid` is a running ccbench-emu session (a reused pid of another
/// program does not keep a stale namespace alive).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "ccbench-emu")
}

/// Our namespaces currently present: (name, owner pid).
pub fn list_ours() -> Vec<(String, i32)> {
    let Ok(out) = ip(&["netns", "list"]) else {
        return Vec::new();
    };
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|n| {
            let rest = n.strip_prefix("ccb-")?;
            let pid = rest.split('-').next()?.parse().ok()?;
            Some((n.to_string(), pid))
        })
        .collect()
}

/// Delete `ccb-<pid>-*` namespaces left by sessions that no longer run.
/// Returns the names removed.
pub fn remove_stale() -> Vec<String> {
    let mut gone = Vec::new();
    for (name, pid) in list_ours() {
        if !alive(pid) && ip(&["netns", "del", &name]).is_ok() {
            gone.push(name);
        }
    }
    gone
}

fn child_setup(cmd: &mut Command, new_group: bool) {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if new_group {
                libc::setpgid(0, 0);
            }
            Ok(())
        });
    }
}

pub struct Session {
    pub tag: String,
    /// Client namespaces, host k at index k.
    pub clis: Vec<String>,
    pub rtr: String,
    pub srv: String,
    created: Vec<String>,
    children: Vec<Child>,
}

impl Session {
    /// Build the topology with `clients` client hosts. On error, what was
    /// created is removed (Drop).
    pub fn create(self_exe: &str, clients: usize) -> Result<Session, String> {
        if !(1..=MAX_CLIENTS).contains(&clients) {
            return Err(format!("the emulator makes 1 to {MAX_CLIENTS} client hosts (one per [[flows]] entry), not {clients}"));
        }
        let tag = format!("ccb-{}", std::process::id());
        let mut s = Session {
            clis: (0..clients).map(|k| if k == 0 { format!("{tag}-cli") } else { format!("{tag}-cli{k}") }).collect(),
            rtr: format!("{tag}-rtr"),
            srv: format!("{tag}-srv"),
            tag,
            created: Vec::new(),
            children: Vec::new(),
        };
        let mut all = s.clis.clone();
        all.extend([s.rtr.clone(), s.srv.clone()]);
        for ns in all {
            ip(&["netns", "add", &ns])?;
            s.created.push(ns.clone());
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            for key in [
                "net/ipv6/conf/all/disable_ipv6",
                "net/ipv6/conf/default/disable_ipv6",
            ] {
                s.exec_ok(&ns, &[self_exe, "sysctl-set", key, "1"])?;
            }
        }
        let mut ends = vec![(s.srv.clone(), "s0".to_string()), (s.rtr.clone(), "rs".to_string())];
        ip(&["link", "add", "s0", "netns", &s.srv, "type", "veth", "peer", "name", "rs", "netns", &s.rtr])?;
        for (k, cli) in s.clis.iter().enumerate() {
            let rc = router_if(k);
            ip(&["link", "add", "c0", "netns", cli, "type", "veth", "peer", "name", &rc, "netns", &s.rtr])?;
            ends.extend([(cli.clone(), "c0".to_string()), (s.rtr.clone(), rc)]);
        }
        for (ns, dev) in &ends {
            ip(&["-n", ns, "link", "set", dev, "mtu", "1500", "up"])?;
            s.exec_ok(ns, &[self_exe, "offload-off", dev])?;
        }
        ip(&["-n", &s.srv, "addr", "add", &format!("{IP_SERVER}/24"), "dev", "s0"])?;
        let mac_s = s.exec_out(&s.srv, &["cat", "/sys/class/net/s0/address"])?;
        for (k, cli) in s.clis.iter().enumerate() {
            let ip_c = client_ip(k).to_string();
            ip(&["-n", cli, "addr", "add", &format!("{ip_c}/24"), "dev", "c0"])?;
            let mac_c = s.exec_out(cli, &["cat", "/sys/class/net/c0/address"])?;
            ip(&["-n", cli, "neigh", "replace", IP_SERVER, "lladdr", mac_s.trim(), "dev", "c0", "nud", "permanent"])?;
            ip(&["-n", &s.srv, "neigh", "replace", &ip_c, "lladdr", mac_c.trim(), "dev", "s0", "nud", "permanent"])?;
        }
        Ok(s)
    }

    fn exec_out(&self, ns: &str, argv: &[&str]) -> Result<String, String> {
        let mut a = vec!["netns", "exec", ns];
        a.extend_from_slice(argv);
        ip(&a)
    }

    fn exec_ok(&self, ns: &str, argv: &[&str]) -> Result<(), String> {
        self.exec_out(ns, argv).map(|_| ())
    }

    /// Start `argv` in namespace `ns` (own process group, dies with us).
    /// It sees `CCB_SERVER_IP`, `CCB_CLIENT_IP` (`client`'s address: a
    /// client host's own, the first client's elsewhere) and `CCB_CLIENT_IPS`
    /// (every client's, space-separated, host order).
    pub fn spawn(&mut self, ns: &str, client: usize, argv: &[String], stdout: Stdio) -> Result<usize, String> {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns]).args(argv).stdout(stdout);
        let all: Vec<String> = (0..self.clis.len()).map(|k| client_ip(k).to_string()).collect();
        cmd.env("CCB_CLIENT_IP", client_ip(client).to_string())
            .env("CCB_CLIENT_IPS", all.join(" "))
            .env("CCB_SERVER_IP", IP_SERVER);
        child_setup(&mut cmd, true);
        let c = cmd
            .spawn()
            .map_err(|e| format!("cannot start {argv:?} in {ns}: {e}"))?;
        self.children.push(c);
        Ok(self.children.len() - 1)
    }

    pub fn child(&mut self, i: usize) -> &mut Child {
        &mut self.children[i]
    }

    /// SIGTERM child `i`'s process group, then SIGKILL after `grace`.
    pub fn stop(&mut self, i: usize, grace: Duration) -> Option<std::process::ExitStatus> {
        let c = &mut self.children[i];
        if let Ok(Some(st)) = c.try_wait() {
            return Some(st);
        }
        let pid = c.id() as i32;
        // SAFETY: signalling our own child's group.
        unsafe { libc::kill(-pid, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < grace {
            if let Ok(Some(st)) = c.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: as above.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        c.wait().ok()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for i in 0..self.children.len() {
            self.stop(i, Duration::from_secs(2));
        }
        for ns in self.created.drain(..) {
            let _ = ip(&["netns", "del", &ns]);
        }
    }
}

/// Install SIGINT/SIGTERM handlers that set [`crate::forward::STOP`].
pub fn catch_signals() {
    extern "C" fn h(_: libc::c_int) {
        crate::forward::STOP.store(true, Ordering::SeqCst);
    }
    // SAFETY: the handler only stores an atomic.
    unsafe {
        libc::signal(libc::SIGINT, h as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, h as *const () as libc::sighandler_t);
    }
}

/// Turn off TX checksum, TSO, GSO and GRO on `dev` in the current
/// namespace (legacy ETHTOOL_S* commands of `linux/ethtool.h`).
pub fn offload_off(dev: &str) -> Result<(), String> {
    const ETHTOOL_STXCSUM: u32 = 0x17;
    const ETHTOOL_STSO: u32 = 0x1f;
    const ETHTOOL_SGSO: u32 = 0x24;
    const ETHTOOL_SGRO: u32 = 0x2c;
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    // SAFETY: ioctl on a fresh datagram socket with a valid ifreq.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(format!("socket: {}", std::io::Error::last_os_error()));
        }
        for cmd in [ETHTOOL_STXCSUM, ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO] {
            let mut v = EthtoolValue { cmd, data: 0 };
            let mut ifr: libc::ifreq = std::mem::zeroed();
            for (d, s) in ifr
                .ifr_name
                .iter_mut()
                .zip(dev.bytes().take(libc::IFNAMSIZ - 1))
            {
                *d = s as libc::c_char;
            }
            ifr.ifr_ifru.ifru_data = &mut v as *mut EthtoolValue as *mut libc::c_char;
            if libc::ioctl(fd, libc::SIOCETHTOOL, &mut ifr) < 0 {
                let e = std::io::Error::last_os_error();
                libc::close(fd);
                return Err(format!("ETHTOOL {cmd:#x} on {dev}: {e}"));
            }
        }
        libc::close(fd);
    }
    Ok(())
}
