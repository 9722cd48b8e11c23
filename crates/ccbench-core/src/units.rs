//! Time and unit newtypes: simulated time in integer nanoseconds, sizes in
//! bytes, rates in bit/s. Only physically meaningful operations exist
//! (`SimTime + Dur`, `Bytes / Rate -> Dur`, `Rate * Dur -> Bytes`), and each
//! states how it rounds. Strings as people write them (`"100Mbit"`, `"25ms"`,
//! `"1000p"`, `"1500b"`) parse with `FromStr` at the scenario edge, following
//! tc(8)'s unit conventions: `bit`, `kbit`, `mbit`, `gbit` are powers of ten;
//! `kbps`/`mbps` are *bytes* per second as in tc.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub};
use std::str::FromStr;

/// A point in simulated time, nanoseconds since the start of the run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub u64);

/// A number of bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

/// A data rate in bits per second. `Rate(0)` means "unlimited" where a link
/// accepts it (pure delay, no serialization).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const NEVER: SimTime = SimTime(u64::MAX);

    /// Time elapsed since `earlier`. Panics in debug builds if time would run
    /// backwards; saturates to zero in release builds.
    #[inline]
    pub fn since(self, earlier: SimTime) -> Dur {
        debug_assert!(self >= earlier, "time ran backwards: {self:?} < {earlier:?}");
        Dur(self.0.saturating_sub(earlier.0))
    }
    /// Signed difference `self - other` in nanoseconds, for control laws that
    /// compare against deadlines in either direction.
    #[inline]
    pub fn diff_ns(self, other: SimTime) -> i64 {
        self.0 as i64 - other.0 as i64
    }
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    #[inline]
    pub fn from_secs_f64(s: f64) -> SimTime {
        SimTime((s * 1e9).round() as u64)
    }
}

impl Dur {
    pub const ZERO: Dur = Dur(0);
    pub const MAX: Dur = Dur(u64::MAX);
    #[inline]
    pub const fn from_nanos(n: u64) -> Dur {
        Dur(n)
    }
    #[inline]
    pub const fn from_micros(us: u64) -> Dur {
        Dur(us * 1_000)
    }
    #[inline]
    pub const fn from_millis(ms: u64) -> Dur {
        Dur(ms * 1_000_000)
    }
    #[inline]
    pub const fn from_secs(s: u64) -> Dur {
        Dur(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative inputs give zero.
    #[inline]
    pub fn from_secs_f64(s: f64) -> Dur {
        Dur((s.max(0.0) * 1e9).round() as u64)
    }
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    #[inline]
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    #[inline]
    pub fn nanos(self) -> u64 {
        self.0
    }
    #[inline]
    pub fn saturating_sub(self, o: Dur) -> Dur {
        Dur(self.0.saturating_sub(o.0))
    }
    /// Multiply by a ratio `num/den`, rounding down.
    #[inline]
    pub fn mul_ratio(self, num: u64, den: u64) -> Dur {
        Dur(mul_div(self.0, num, den) as u64)
    }
}

/// ⌊a·b/d⌋ without overflow. The product is taken in 64 bits when it fits
/// (nearly always: packet sizes, rates and spans of a run), since a 128-bit
/// division is a library call on the per-packet path; the result is the
/// same either way. Panics if `d` is 0.
#[inline]
pub fn mul_div(a: u64, b: u64, d: u64) -> u128 {
    match a.checked_mul(b) {
        Some(p) => u128::from(p / d),
        None => u128::from(a) * u128::from(b) / u128::from(d),
    }
}

/// ⌈a·b/d⌉ without overflow (as [`mul_div`]).
#[inline]
pub fn mul_div_ceil(a: u64, b: u64, d: u64) -> u128 {
    match a.checked_mul(b) {
        Some(p) => u128::from(p.div_ceil(d)),
        None => (u128::from(a) * u128::from(b)).div_ceil(u128::from(d)),
    }
}

impl Add<Dur> for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, d: Dur) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Dur> for SimTime {
    #[inline]
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Add for Dur {
    type Output = Dur;
    #[inline]
    fn add(self, d: Dur) -> Dur {
        Dur(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Dur {
    #[inline]
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub for Dur {
    type Output = Dur;
    /// Saturating: a shorter span minus a longer one is zero.
    #[inline]
    fn sub(self, d: Dur) -> Dur {
        Dur(self.0.saturating_sub(d.0))
    }
}
impl Mul<u64> for Dur {
    type Output = Dur;
    #[inline]
    fn mul(self, k: u64) -> Dur {
        Dur(self.0.saturating_mul(k))
    }
}
impl Div<u64> for Dur {
    type Output = Dur;
    #[inline]
    fn div(self, k: u64) -> Dur {
        Dur(self.0 / k)
    }
}

impl Bytes {
    #[inline]
    pub fn get(self) -> u64 {
        self.0
    }
}
impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0 + o.0)
    }
}

impl Rate {
    pub const UNLIMITED: Rate = Rate(0);
    #[inline]
    pub fn bps(self) -> u64 {
        self.0
    }
    #[inline]
    pub fn mbps(self) -> f64 {
        self.0 as f64 / 1e6
    }
    #[inline]
    pub fn is_unlimited(self) -> bool {
        self.0 == 0
    }
    /// Rate from bytes delivered over a span; zero for an empty span.
    pub fn from_bytes_over(b: u64, d: Dur) -> Rate {
        if d.0 == 0 {
            return Rate(0);
        }
        Rate(mul_div(b, 8_000_000_000, d.0) as u64)
    }
    /// Serialization time of `len` bytes, rounded up to the next nanosecond.
    /// An unlimited rate serializes instantly.
    #[inline]
    pub fn tx_time(self, len: u64) -> Dur {
        if self.0 == 0 {
            return Dur::ZERO;
        }
        Dur(mul_div_ceil(len, 8_000_000_000, self.0) as u64)
    }
}

impl Div<Rate> for Bytes {
    type Output = Dur;
    /// Serialization time, rounded up to the next nanosecond.
    fn div(self, r: Rate) -> Dur {
        r.tx_time(self.0)
    }
}
impl Mul<Dur> for Rate {
    type Output = Bytes;
    /// Bytes sent at this rate over `d`, rounded down.
    fn mul(self, d: Dur) -> Bytes {
        Bytes(mul_div(self.0, d.0, 8_000_000_000) as u64)
    }
}

/// A queue limit written either in packets (`"1000p"`, or a bare number) or
/// in bytes (`"150000b"`, `"1500kb"`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(u64),
    Bytes(u64),
}

/// Why a unit string did not parse; the message lists what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(pub String);
impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UnitError {}

/// Split "12.5ms" into (12.5, "ms"). Rejects negatives and non-finite values.
fn split_num(s: &str, what: &str, example: &str) -> Result<(f64, String), UnitError> {
    let s = s.trim();
    let idx = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(idx);
    let v: f64 = num
        .parse()
        .map_err(|_| UnitError(format!("expected {what} like \"{example}\", got \"{s}\"")))?;
    if !v.is_finite() {
        return Err(UnitError(format!("{what} must be finite, got \"{s}\"")));
    }
    if v < 0.0 {
        return Err(UnitError(format!("{what} must not be negative, got \"{s}\"")));
    }
    Ok((v, unit.trim().to_ascii_lowercase()))
}

impl FromStr for Rate {
    type Err = UnitError;
    /// tc(8) rate units: bit, kbit, mbit, gbit, tbit (decimal, bits/s) and
    /// bps, kbps, mbps, gbps (bytes/s). A bare number is bit/s.
    fn from_str(s: &str) -> Result<Rate, UnitError> {
        let (v, unit) = split_num(s, "a rate", "100Mbit")?;
        let mult = match unit.as_str() {
            "" | "bit" | "bits" => 1.0,
            "kbit" | "k" => 1e3,
            "mbit" | "m" => 1e6,
            "gbit" | "g" => 1e9,
            "tbit" | "t" => 1e12,
            "bps" => 8.0,
            "kbps" => 8e3,
            "mbps" => 8e6,
            "gbps" => 8e9,
            _ => {
                let hint = match unit.as_str() {
                    "mb" | "gb" | "kb" | "b" => " (hint: MB is megabytes; write megabits as \"Mbit\")",
                    _ => "",
                };
                return Err(UnitError(format!(
                    "unknown rate unit \"{unit}\" in \"{}\"; allowed: bit, kbit, mbit, gbit, tbit, and bps/kbps/mbps/gbps for bytes per second as in tc{hint}",
                    s.trim()
                )));
            }
        };
        Ok(Rate((v * mult).round() as u64))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (div, u) in [(1_000_000_000_000, "Tbit"), (1_000_000_000, "Gbit"), (1_000_000, "Mbit"), (1_000, "Kbit")] {
            if b >= div && b % div == 0 {
                return write!(f, "{}{u}", b / div);
            }
        }
        if b >= 1_000_000 {
            return write!(f, "{}Mbit", b as f64 / 1e6);
        }
        write!(f, "{b}bit")
    }
}

impl FromStr for Dur {
    type Err = UnitError;
    /// tc(8) time units: s, sec, ms, msec, us, usec, ns. A bare number is
    /// seconds.
    fn from_str(s: &str) -> Result<Dur, UnitError> {
        let (v, unit) = split_num(s, "a duration", "25ms")?;
        let mult = match unit.as_str() {
            "" | "s" | "sec" | "secs" => 1e9,
            "ms" | "msec" | "msecs" => 1e6,
            "us" | "usec" | "usecs" | "µs" => 1e3,
            "ns" | "nsec" => 1.0,
            "min" => 60e9,
            _ => {
                return Err(UnitError(format!(
                    "unknown time unit \"{unit}\" in \"{}\" (allowed: s, ms, us, ns, min)",
                    s.trim()
                )))
            }
        };
        Ok(Dur((v * mult).round() as u64))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n == 0 {
            return f.write_str("0s");
        }
        for (div, u) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
            if n % div == 0 {
                return write!(f, "{}{u}", n / div);
            }
        }
        write!(f, "{n}ns")
    }
}

impl FromStr for Limit {
    type Err = UnitError;
    /// `"1000p"` / `"1000"` packets; `"150000b"`, `"64kb"`, `"4mb"` bytes
    /// (k/m/g are powers of 1024 as in tc sizes).
    fn from_str(s: &str) -> Result<Limit, UnitError> {
        let (v, unit) = split_num(s, "a limit", "1000p")?;
        if v.fract() != 0.0 && unit.is_empty() {
            return Err(UnitError(format!("a packet limit must be a whole number, got \"{}\"", s.trim())));
        }
        let bytes = |m: f64| Ok(Limit::Bytes((v * m).round() as u64));
        match unit.as_str() {
            "" | "p" | "pkt" | "pkts" | "packets" => Ok(Limit::Packets(v as u64)),
            "b" => bytes(1.0),
            "kb" | "k" => bytes(1024.0),
            "mb" | "m" => bytes(1024.0 * 1024.0),
            "gb" | "g" => bytes(1024.0 * 1024.0 * 1024.0),
            _ => Err(UnitError(format!(
                "unknown limit unit \"{unit}\" in \"{}\" (allowed: p for packets; b, kb, mb, gb for bytes)",
                s.trim()
            ))),
        }
    }
}

impl FromStr for Bytes {
    type Err = UnitError;
    /// A size in bytes: a bare number, or b, kb, mb, gb (powers of 1024 as
    /// in tc sizes). Packets (`"10p"`) are refused with the same list.
    fn from_str(s: &str) -> Result<Bytes, UnitError> {
        const ALLOWED: &str = "allowed: a number of bytes, or b, kb, mb, gb";
        let (v, unit) = split_num(s, "a size", "1500b")?;
        let m = match unit.as_str() {
            "" | "b" => 1.0,
            "kb" | "k" => 1024.0,
            "mb" | "m" => 1024.0 * 1024.0,
            "gb" | "g" => 1024.0 * 1024.0 * 1024.0,
            "p" | "pkt" | "pkts" | "packets" => {
                return Err(UnitError(format!("a size is in bytes, not packets: \"{}\" ({ALLOWED})", s.trim())));
            }
            _ => return Err(UnitError(format!("unknown size unit \"{unit}\" in \"{}\" ({ALLOWED})", s.trim()))),
        };
        Ok(Bytes((v * m).round() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 64-bit shortcut gives the 128-bit result, on both sides of the
    /// point where the product stops fitting, rounding down and up.
    #[test]
    fn mul_div_agrees_with_128_bit_arithmetic() {
        let wide = |a: u64, b: u64| u128::from(a) * u128::from(b);
        let mut rng = crate::rng::SimRng::for_component(7, "mul-div-test");
        let mut cases = vec![(1514, 8_000_000_000, 100_000_000), (u64::MAX, 1, 3), (u64::MAX, 2, 3), (1 << 32, 1 << 32, 7)];
        // Random magnitudes: a random number of low bits of a random word.
        let mut draw = || rng.next_u64() >> (rng.next_u64() % 64);
        for _ in 0..10_000 {
            cases.push((draw(), draw(), draw().max(1)));
        }
        let (mut fit, mut overflow) = (0, 0);
        for (a, b, d) in cases {
            if a.checked_mul(b).is_some() { fit += 1 } else { overflow += 1 }
            assert_eq!(mul_div(a, b, d), wide(a, b) / u128::from(d), "{a}·{b}/{d}");
            assert_eq!(mul_div_ceil(a, b, d), wide(a, b).div_ceil(u128::from(d)), "⌈{a}·{b}/{d}⌉");
        }
        assert!(fit > 1000 && overflow > 1000, "both paths tried: {fit} fit, {overflow} overflow");
        assert_eq!(Rate(100_000_000).tx_time(1514), Dur(121_120));
        assert_eq!(Rate(3).tx_time(1), Dur(2_666_666_667), "rounded up");
    }

    #[test]
    fn parses_rates_like_tc() {
        assert_eq!("100Mbit".parse::<Rate>().unwrap(), Rate(100_000_000));
        assert_eq!("1gbit".parse::<Rate>().unwrap(), Rate(1_000_000_000));
        assert_eq!("2.5Mbit".parse::<Rate>().unwrap(), Rate(2_500_000));
        assert_eq!("1mbps".parse::<Rate>().unwrap(), Rate(8_000_000));
        assert!("100MB".parse::<Rate>().unwrap_err().0.contains("unknown rate unit"));
        assert!("-5Mbit".parse::<Rate>().unwrap_err().0.contains("negative"));
    }

    #[test]
    fn parses_times_and_limits() {
        assert_eq!("25ms".parse::<Dur>().unwrap(), Dur::from_millis(25));
        assert_eq!("1.5s".parse::<Dur>().unwrap(), Dur::from_millis(1500));
        assert_eq!("250us".parse::<Dur>().unwrap(), Dur::from_micros(250));
        assert_eq!("1000p".parse::<Limit>().unwrap(), Limit::Packets(1000));
        assert_eq!("150000b".parse::<Limit>().unwrap(), Limit::Bytes(150_000));
        assert_eq!("4mb".parse::<Limit>().unwrap(), Limit::Bytes(4 << 20));
        assert!("10 parsecs".parse::<Dur>().is_err());
    }

    #[test]
    fn size_errors_agree_on_what_is_allowed() {
        assert_eq!("1500".parse::<Bytes>().unwrap(), Bytes(1500));
        assert_eq!("64kb".parse::<Bytes>().unwrap(), Bytes(65536));
        let p = "10p".parse::<Bytes>().unwrap_err().0;
        let q = "10 potatoes".parse::<Bytes>().unwrap_err().0;
        let allowed = "allowed: a number of bytes, or b, kb, mb, gb";
        assert!(p.contains(allowed) && p.contains("not packets"), "{p}");
        assert!(q.contains(allowed) && q.contains("potatoes"), "{q}");
    }

    #[test]
    fn display_round_trips() {
        for s in ["100Mbit", "1Gbit", "10Kbit"] {
            let r: Rate = s.parse().unwrap();
            assert_eq!(r.to_string().parse::<Rate>().unwrap(), r);
        }
        for s in ["25ms", "1s", "250us", "7ns"] {
            let d: Dur = s.parse().unwrap();
            assert_eq!(d.to_string(), s);
        }
    }

    #[test]
    fn serialization_time_rounds_up() {
        // 1514 B at 10 Mbit/s = 1211.2 us -> 1211200 ns exactly.
        assert_eq!(Rate(10_000_000).tx_time(1514), Dur(1_211_200));
        // 1 B at 3 bit/s = 2.666.. s -> rounds up.
        assert_eq!(Rate(3).tx_time(1), Dur(2_666_666_667));
        assert_eq!(Rate(100_000_000) * Dur::from_millis(1), Bytes(12_500));
        assert_eq!(Rate::UNLIMITED.tx_time(1500), Dur::ZERO);
    }
}

/// Serde: units are written as strings (`"25ms"`); packet limits may also be
/// bare integers. Serialization writes the `Display` form, which parses back.
mod serde_impls {
    use super::*;
    use serde::de::{self, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    struct UnitVisitor<T>(std::marker::PhantomData<T>, &'static str, bool);

    impl<T: FromStr<Err = UnitError>> Visitor<'_> for UnitVisitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "{}", self.1)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            v.parse().map_err(|e: UnitError| E::custom(e.0))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
            if !self.2 {
                return Err(E::custom(format!("expected {} (a string with a unit), got the bare number {v}", self.1)));
            }
            if v < 0 {
                return Err(E::custom(format!("must not be negative, got {v}")));
            }
            v.to_string().parse().map_err(|e: UnitError| E::custom(e.0))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
            self.visit_i64(v as i64)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
            Err(E::custom(format!("expected {} (a string with a unit), got the bare number {v}", self.1)))
        }
    }

    macro_rules! unit_serde {
        ($t:ty, $what:expr, $bare:expr) => {
            impl<'de> Deserialize<'de> for $t {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                    d.deserialize_any(UnitVisitor::<$t>(std::marker::PhantomData, $what, $bare))
                }
            }
            impl Serialize for $t {
                fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    s.serialize_str(&self.to_string())
                }
            }
        };
    }
    unit_serde!(Rate, "a rate like \"100Mbit\"", false);
    unit_serde!(Dur, "a duration like \"25ms\"", false);
    unit_serde!(Limit, "a limit like \"1000p\" or \"150000b\"", true);
    unit_serde!(Bytes, "a size like \"1500b\"", true);

    impl fmt::Display for Limit {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Limit::Packets(p) => write!(f, "{p}p"),
                Limit::Bytes(b) => write!(f, "{b}b"),
            }
        }
    }
    impl fmt::Display for Bytes {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{}b", self.0)
        }
    }
}
