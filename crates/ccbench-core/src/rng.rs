//! Per-component random streams. Each component (link, flow, qdisc) draws
//! from its own xoshiro256++ stream seeded from the scenario seed and the
//! component's *name*, so adding a flow never perturbs another component's
//! randomness and results stay bit-identical across machines.

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub struct SimRng(Xoshiro256PlusPlus);

/// FNV-1a, used only to turn a component name into a seed offset; stable
/// across platforms and Rust versions (unlike std's hasher).
pub fn stable_hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl SimRng {
    /// The stream of component `name` under scenario seed `seed`.
    pub fn for_component(seed: u64, name: &str) -> SimRng {
        SimRng(Xoshiro256PlusPlus::seed_from_u64(seed ^ stable_hash(name).rotate_left(17)))
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        (self.0.next_u64() >> 32) as u32
    }
    /// Uniform in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// True with probability `p` (p <= 0 never, p >= 1 always).
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && (p >= 1.0 || self.uniform() < p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_depend_on_name_and_seed_only() {
        let a: Vec<u64> = (0..4).map({ let mut r = SimRng::for_component(1, "link:a"); move |_| r.next_u64() }).collect();
        let b: Vec<u64> = (0..4).map({ let mut r = SimRng::for_component(1, "link:a"); move |_| r.next_u64() }).collect();
        let c: Vec<u64> = (0..4).map({ let mut r = SimRng::for_component(1, "link:b"); move |_| r.next_u64() }).collect();
        let d: Vec<u64> = (0..4).map({ let mut r = SimRng::for_component(2, "link:a"); move |_| r.next_u64() }).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn bernoulli_rate_is_close() {
        let mut r = SimRng::for_component(7, "x");
        let n = 200_000;
        let hits = (0..n).filter(|_| r.bernoulli(0.01)).count();
        assert!((hits as f64 / n as f64 - 0.01).abs() < 0.001, "{hits}");
    }
}
