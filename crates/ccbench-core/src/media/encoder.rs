//! Video encoder model of the SCReAM BW test tool (scream: code/scream_sender.cpp,
//! `scream_bw_test_tx`, at c8f84c3).
//!
//! Each frame tick the tool asks SCReAM for a target bitrate and makes a
//! frame of
//!
//! ```text
//! bytes = target / fps / 8 · (1 + U · rand / 100),   U ~ uniform[−0.5, 0.5)
//! ```
//!
//! so `-rand 50` spreads frame sizes uniformly over ±25 % of the nominal
//! frame, i.e. **±rand/2 %**. The tool's help text says "±rand %"; the code
//! draws U from [−0.5, 0.5], and this model follows the code. The frame is
//! split into ⌈bytes/mtu⌉ RTP payloads: full `mtu`-byte payloads and a
//! shorter last one, which carries the marker bit (RFC 3550 §5.1: end of
//! frame). Each payload gets a 12 B RTP header.
//!
//! A target of `None` (SCReAM's −1 "refresh" signal after a loss or an
//! RTP-queue discard) gives an empty (0-byte) frame: the tool then sends
//! nothing for that frame tick. No random number is drawn for it.
//!
//! Units: bit/s for targets, bytes for frames and payloads.
//! Deviations: no `-key` (periodic key-frame multiplier) and no `-burst`
//! on/off pattern; the frame size is truncated to whole bytes as the tool's
//! integer conversion does.

use crate::rng::SimRng;

/// Frame-size model: nominal size from the target rate with a uniform
/// random spread, drawn from the encoder's own random stream.
pub struct Encoder {
    /// Frames per second (`-fps`).
    fps: f64,
    /// `-rand`, percent: the spread is ±rand/2 % (see the module docs).
    rand: f64,
    /// RTP payload bytes per packet (`-mtu`).
    mtu: u32,
    rng: SimRng,
}

impl Encoder {
    /// # Panics
    /// If `fps` is not positive or `mtu` is zero (config validation's job).
    pub fn new(fps: f64, rand: f64, mtu: u32, rng: SimRng) -> Self {
        assert!(fps > 0.0 && mtu > 0, "encoder needs fps > 0 and mtu > 0");
        Encoder { fps, rand: rand.max(0.0), mtu, rng }
    }

    /// Nominal frame size for a target, before the random spread (bytes).
    pub fn nominal_bytes(&self, target_bps: f64) -> f64 {
        target_bps.max(0.0) / self.fps / 8.0
    }

    /// Bytes of the next frame for `target_bps`:
    /// target/fps/8 · (1 + U·rand/100), U ~ uniform[−0.5, 0.5).
    pub fn frame_bytes(&mut self, target_bps: f64) -> u32 {
        let u = self.rng.uniform() - 0.5;
        let bytes = self.nominal_bytes(target_bps) * (1.0 + u * self.rand / 100.0);
        // `as` saturates: negative/NaN → 0, huge → u32::MAX.
        bytes as u32
    }

    /// Bytes of the next frame for SCReAM's target; `None` (refresh) is an
    /// empty frame and draws nothing from the random stream.
    pub fn frame(&mut self, target_bps: Option<f64>) -> u32 {
        target_bps.map_or(0, |t| self.frame_bytes(t))
    }

    /// This encoder's RTP payload size.
    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    /// Splits a frame into RTP payloads with this encoder's MTU.
    pub fn packetize(&self, bytes: u32) -> Packets {
        Self::packets(bytes, self.mtu)
    }

    /// Splits `bytes` into ⌈bytes/mtu⌉ payloads of at most `mtu` bytes:
    /// full ones first, the remainder last with the marker bit. An empty
    /// frame gives no packets. Allocation-free iterator of
    /// `(payload_bytes, marker)`.
    pub fn packets(bytes: u32, mtu: u32) -> Packets {
        assert!(mtu > 0, "mtu must be positive");
        Packets { left: bytes, mtu }
    }
}

/// Iterator over one frame's RTP payloads: `(payload_bytes, marker)`.
#[derive(Clone, Debug)]
pub struct Packets {
    left: u32,
    mtu: u32,
}

impl Iterator for Packets {
    type Item = (u32, bool);
    fn next(&mut self) -> Option<(u32, bool)> {
        if self.left == 0 {
            return None;
        }
        let pl = self.left.min(self.mtu);
        self.left -= pl;
        Some((pl, self.left == 0))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.left.div_ceil(self.mtu) as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Packets {}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(rand: f64) -> Encoder {
        Encoder::new(50.0, rand, 1200, SimRng::for_component(42, "media:enc"))
    }

    #[test]
    fn rand_zero_gives_constant_frames() {
        let mut e = enc(0.0);
        // 10 Mbit/s at 50 fps = 25 000 B per frame.
        for _ in 0..1000 {
            assert_eq!(e.frame_bytes(10e6), 25_000);
        }
    }

    #[test]
    fn rand_spreads_uniformly_over_half_the_percentage() {
        let mut e = enc(50.0);
        let nominal = 25_000.0;
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| f64::from(e.frame_bytes(10e6))).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        let (lo, hi) = xs.iter().fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
        // Mean = nominal within 1 %.
        assert!((mean / nominal - 1.0).abs() < 0.01, "mean {mean}");
        // Range: ±rand/2 % = ±25 % (not ±50 % as the tool's help says).
        assert!(lo >= nominal * 0.75 - 1.0 && hi <= nominal * 1.25, "{lo}..{hi}");
        assert!(lo < nominal * 0.76 && hi > nominal * 1.24, "range not covered: {lo}..{hi}");
        // Uniform: variance (rand/100)²/12 · nominal².
        let want = 0.5f64.powi(2) / 12.0 * nominal * nominal;
        assert!((var / want - 1.0).abs() < 0.03, "var {var} want {want}");
        // Deciles of [0.75, 1.25)·nominal each hold ~10 %.
        let mut bins = [0u32; 10];
        for x in &xs {
            let b = (((x / nominal) - 0.75) / 0.05).floor().clamp(0.0, 9.0) as usize;
            bins[b] += 1;
        }
        for (i, &c) in bins.iter().enumerate() {
            let share = f64::from(c) / n as f64;
            assert!((share - 0.1).abs() < 0.005, "decile {i}: {share}");
        }
    }

    #[test]
    fn refresh_target_is_an_empty_frame_and_draws_nothing() {
        let mut a = enc(50.0);
        let mut b = enc(50.0);
        assert_eq!(a.frame(None), 0);
        assert_eq!(a.frame(Some(1e6)), b.frame(Some(1e6)));
        assert_eq!(Encoder::packets(0, 1200).count(), 0);
    }

    /// `mtu()` is the payload size a frame is split at (the sender counts
    /// SCReAM's byte window in packets of mtu + RTP header).
    #[test]
    fn the_encoders_payload_size_is_its_split_point() {
        let e = Encoder::new(50.0, 0.0, 1000, SimRng::for_component(42, "media:enc"));
        assert_eq!(e.mtu(), 1000);
        let p: Vec<_> = e.packetize(2500).collect();
        assert_eq!(p, vec![(e.mtu(), false), (e.mtu(), false), (500, true)]);
    }

    #[test]
    fn packetization_counts_sizes_and_marker() {
        let p: Vec<_> = Encoder::packets(2500, 1200).collect();
        assert_eq!(p, vec![(1200, false), (1200, false), (100, true)]);
        let p: Vec<_> = Encoder::packets(2400, 1200).collect();
        assert_eq!(p, vec![(1200, false), (1200, true)]);
        let p: Vec<_> = Encoder::packets(1, 1200).collect();
        assert_eq!(p, vec![(1, true)]);
        for bytes in [1u32, 1199, 1200, 1201, 25_000, 123_457] {
            let it = Encoder::packets(bytes, 1360);
            assert_eq!(it.len(), bytes.div_ceil(1360) as usize);
            let v: Vec<_> = it.collect();
            assert_eq!(v.iter().map(|p| p.0).sum::<u32>(), bytes);
            assert!(v.iter().all(|p| p.0 <= 1360 && p.0 > 0));
            assert_eq!(v.iter().filter(|p| p.1).count(), 1);
            assert!(v.last().unwrap().1);
        }
    }
}
