//! The `stab` option of tc (`tc qdisc add ... stab overhead N mpu M linklayer
//! atm ...`), as a scenario writes it: `stab = { overhead = 24, mpu = 64,
//! linklayer = "atm" }`. It resolves to the shared [`Overhead`] arithmetic
//! (tc `tc_adjust_size` / `tc_align_to_atm`, applied on the frame length).

use serde::{Deserialize, Serialize};

use super::overhead::{LenBase, LinkLayer, Overhead};

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StabConfig {
    /// Bytes added to every packet (may be negative).
    pub overhead: i32,
    /// Minimum charged size in bytes.
    pub mpu: u32,
    /// `"ethernet"` (default), `"atm"` or `"ptm"`.
    pub linklayer: LinkLayer,
}

impl StabConfig {
    pub fn overhead(&self) -> Overhead {
        Overhead {
            base: LenBase::Frame,
            overhead: self.overhead,
            mpu: self.mpu,
            link_layer: self.linklayer,
        }
    }
    pub fn validate(&self) -> Result<(), String> {
        if !(-1500..=1500).contains(&self.overhead) {
            return Err(format!(
                "stab.overhead: must be -1500..1500 bytes, got {}",
                self.overhead
            ));
        }
        if self.mpu > 9000 {
            return Err(format!("stab.mpu: must be 0..9000 bytes, got {}", self.mpu));
        }
        Ok(())
    }
}
