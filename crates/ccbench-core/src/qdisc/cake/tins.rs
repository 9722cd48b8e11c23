//! Cake's Diffserv tins (Linux net/sched/sch_cake.c: the `diffserv3`,
//! `diffserv4`, `diffserv8`, `precedence`, `besteffort` DSCP → tin tables
//! and `cake_config_*`): which tin a DSCP selects, each tin's bandwidth
//! threshold (a fraction of the shaper rate) and its DRR weight for the
//! unshaped mode (`tin_quantum`).
//!
//! Units: rates in bytes/s (as sch_cake stores them).

use serde::{Deserialize, Serialize};

/// tc `besteffort` / `diffserv3` (default) / `diffserv4` / `diffserv8` /
/// `precedence`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Diffserv {
    Besteffort,
    #[default]
    Diffserv3,
    Diffserv4,
    Diffserv8,
    Precedence,
}

const PRECEDENCE: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        t[i] = (i / 8) as u8;
        i += 1;
    }
    t
};

#[rustfmt::skip]
const DIFFSERV8: [u8; 64] = [
    2, 0, 1, 2, 4, 2, 2, 2,
    1, 2, 1, 2, 1, 2, 1, 2,
    5, 2, 4, 2, 4, 2, 4, 2,
    3, 2, 3, 2, 3, 2, 3, 2,
    6, 2, 3, 2, 3, 2, 3, 2,
    6, 2, 2, 2, 6, 2, 6, 2,
    7, 2, 2, 2, 2, 2, 2, 2,
    7, 2, 2, 2, 2, 2, 2, 2,
];

#[rustfmt::skip]
const DIFFSERV4: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0,
    1, 0, 0, 0, 0, 0, 0, 0,
    2, 0, 2, 0, 2, 0, 2, 0,
    2, 0, 2, 0, 2, 0, 2, 0,
    3, 0, 2, 0, 2, 0, 2, 0,
    3, 0, 0, 0, 3, 0, 3, 0,
    3, 0, 0, 0, 0, 0, 0, 0,
    3, 0, 0, 0, 0, 0, 0, 0,
];

#[rustfmt::skip]
const DIFFSERV3: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0,
    1, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 2, 0, 2, 0,
    2, 0, 0, 0, 0, 0, 0, 0,
    2, 0, 0, 0, 0, 0, 0, 0,
];

/// One tin's configuration.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TinSpec {
    /// Bandwidth threshold, bytes/s (0 = unlimited).
    pub rate: u64,
    /// DRR weight in the unshaped mode.
    pub quantum: u16,
}

impl Diffserv {
    pub fn tin_count(self) -> usize {
        match self {
            Diffserv::Besteffort => 1,
            Diffserv::Diffserv3 => 3,
            Diffserv::Diffserv4 => 4,
            Diffserv::Diffserv8 | Diffserv::Precedence => 8,
        }
    }

    /// `cake_select_tin` by DSCP (no fwmark/priority override here).
    pub fn tin_of(self, dscp: u8) -> usize {
        let d = usize::from(dscp & 0x3f);
        usize::from(match self {
            Diffserv::Besteffort => 0,
            Diffserv::Diffserv3 => DIFFSERV3[d],
            Diffserv::Diffserv4 => DIFFSERV4[d],
            Diffserv::Diffserv8 => DIFFSERV8[d],
            Diffserv::Precedence => PRECEDENCE[d],
        })
    }

    /// `cake_config_*`: each tin's threshold rate and weight for a shaper
    /// rate of `rate` bytes/s.
    pub fn tins(self, rate: u64) -> Vec<TinSpec> {
        match self {
            Diffserv::Besteffort => vec![TinSpec {
                rate,
                quantum: 65535,
            }],
            Diffserv::Diffserv3 => vec![
                TinSpec {
                    rate,
                    quantum: 1024,
                },
                TinSpec {
                    rate: rate >> 4,
                    quantum: 1024 >> 4,
                },
                TinSpec {
                    rate: rate >> 2,
                    quantum: 1024 >> 2,
                },
            ],
            Diffserv::Diffserv4 => vec![
                TinSpec {
                    rate,
                    quantum: 1024,
                },
                TinSpec {
                    rate: rate >> 4,
                    quantum: 1024 >> 4,
                },
                TinSpec {
                    rate: rate >> 1,
                    quantum: 1024 >> 1,
                },
                TinSpec {
                    rate: rate >> 2,
                    quantum: 1024 >> 2,
                },
            ],
            Diffserv::Diffserv8 | Diffserv::Precedence => {
                // Each tin 7/8 of the previous, rate and weight.
                let (mut r, mut q) = (rate, 256u32);
                (0..8)
                    .map(|_| {
                        let t = TinSpec {
                            rate: r,
                            quantum: q.max(1) as u16,
                        };
                        r = (r * 7) >> 3;
                        q = (q * 7) >> 3;
                        t
                    })
                    .collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffserv3_maps_named_codepoints_as_linux() {
        let d = Diffserv::Diffserv3;
        // Bulk (tin 1): CS1 (8) and LE (1).
        assert_eq!((d.tin_of(8), d.tin_of(1)), (1, 1));
        // Voice (tin 2): EF 46, VA 44, CS6 48, CS7 56, TOS4 (DSCP 4).
        for dscp in [46, 44, 48, 56, 4] {
            assert_eq!(d.tin_of(dscp), 2, "dscp {dscp}");
        }
        // Everything else best effort, e.g. CS0, AF11, AF41, CS5.
        for dscp in [0, 10, 34, 40, 63] {
            assert_eq!(d.tin_of(dscp), 0, "dscp {dscp}");
        }
        assert_eq!(
            d.tins(1_250_000).iter().map(|t| t.rate).collect::<Vec<_>>(),
            [1_250_000, 78_125, 312_500]
        );
    }

    #[test]
    fn diffserv4_and_8_and_precedence_tables() {
        let d = Diffserv::Diffserv4;
        assert_eq!(
            [
                d.tin_of(8),
                d.tin_of(0),
                d.tin_of(34),
                d.tin_of(46),
                d.tin_of(32)
            ],
            [1, 0, 2, 3, 3]
        );
        let d = Diffserv::Diffserv8;
        assert_eq!(
            [
                d.tin_of(1),
                d.tin_of(8),
                d.tin_of(0),
                d.tin_of(46),
                d.tin_of(56)
            ],
            [0, 1, 2, 6, 7]
        );
        assert_eq!(Diffserv::Precedence.tin_of(46), 5);
        let r: Vec<u64> = Diffserv::Diffserv8
            .tins(8_000_000)
            .iter()
            .map(|t| t.rate)
            .collect();
        assert_eq!(&r[..3], [8_000_000, 7_000_000, 6_125_000]);
        assert_eq!(Diffserv::Precedence.tins(1).len(), 8);
    }
}
