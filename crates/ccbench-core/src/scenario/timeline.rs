//! A link's `schedule` resolved in time order: rate steps pass through,
//! `qdisc = {...}` replaces the qdisc, and `change = {...}` is merged onto
//! the configuration in force (keys given replace those values, nested
//! tables such as `child` merge recursively), then checked as a whole and
//! against what `tc qdisc change` allows.

use serde::{Deserialize, Serialize};

use crate::link::LinkStep;
use crate::qdisc::QdiscConfig;
use crate::units::{Dur, Rate};

/// One entry of a link's `schedule`: at `at`, a new rate, a replacement
/// qdisc or a change to the one in force.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    pub at: Dur,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Replace the qdisc (queued packets are discarded and counted as drops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qdisc: Option<QdiscConfig>,
    /// Change the qdisc's parameters in place (keys to set; `kind` optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<toml::Table>,
}

/// Merge `change` onto `base` (both TOML tables).
fn merge(base: &mut toml::Table, change: &toml::Table) {
    for (k, v) in change {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(c)) if k != "loss" && k != "slot" => {
                merge(b, c)
            }
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The configuration after applying `change` to `cur`.
pub fn apply_change(cur: &QdiscConfig, change: &toml::Table) -> Result<QdiscConfig, String> {
    let mut t = toml::Table::try_from(cur).map_err(|e| e.to_string())?;
    if let Some(k) = change.get("kind") {
        if k.as_str() != Some(cur.name()) {
            return Err(format!("`change` cannot switch the qdisc kind from \"{}\" (use `qdisc = {{...}}` to replace it)", cur.name()));
        }
    }
    merge(&mut t, change);
    let new: QdiscConfig = toml::Value::Table(t)
        .try_into()
        .map_err(|e: toml::de::Error| e.message().trim().to_string())?;
    new.validate()?;
    cur.check_change(&new)?;
    Ok(new)
}

/// A problem with one step: its index in the written schedule, the key to
/// point at, and the message.
pub type StepError = (usize, &'static str, String);

/// The steps of one link in time order (stable for equal times), with
/// changes merged; errors carry the step's index in the written schedule.
pub fn resolve(
    initial: &QdiscConfig,
    steps: &[RateStep],
) -> Result<Vec<(Dur, LinkStep)>, Vec<StepError>> {
    let mut order: Vec<usize> = (0..steps.len()).collect();
    order.sort_by_key(|&j| steps[j].at);
    let mut cur = initial.clone();
    let mut out = Vec::new();
    let mut errs = Vec::new();
    for j in order {
        let st = &steps[j];
        let given = usize::from(st.rate.is_some())
            + usize::from(st.qdisc.is_some())
            + usize::from(st.change.is_some());
        if given != 1 {
            errs.push((
                j,
                "at",
                "each step sets exactly one of `rate`, `qdisc` (replace) or `change`".to_string(),
            ));
            continue;
        }
        if let Some(r) = st.rate {
            out.push((st.at, LinkStep::Rate(r)));
        } else if let Some(q) = &st.qdisc {
            match q.validate() {
                Ok(()) => {
                    cur = q.clone();
                    out.push((st.at, LinkStep::Replace(q.clone())));
                }
                Err(e) => errs.push((j, "qdisc", e)),
            }
        } else if let Some(c) = &st.change {
            match apply_change(&cur, c) {
                Ok(new) => {
                    cur = new.clone();
                    out.push((st.at, LinkStep::Change(new)));
                }
                Err(e) => errs.push((j, "change", e)),
            }
        }
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}
