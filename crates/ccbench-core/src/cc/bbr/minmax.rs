//! Windowed running max (Linux `lib/win_minmax.c`, Kathleen Nichols'
//! algorithm): the best, second-best and third-best samples of the window,
//! each from a later sub-window, so the max expires gracefully in O(1)
//! time and space. Time is whatever the caller counts (BBR: rounds).

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Sample {
    t: u64,
    v: u64,
}

#[derive(Clone, Debug, Default)]
pub struct MinMax {
    s: [Sample; 3],
}

impl MinMax {
    /// The windowed max.
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    /// `minmax_reset`: all three samples become (t, v).
    pub fn reset(&mut self, t: u64, v: u64) -> u64 {
        let s = Sample { t, v };
        self.s = [s; 3];
        v
    }

    /// `minmax_running_max`: add a measurement taken at `t` to a window of
    /// length `win`.
    pub fn running_max(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = Sample { t, v };
        if val.v >= self.s[0].v || val.t.saturating_sub(self.s[2].t) > win {
            return self.reset(t, v); // a new max, or nothing left in the window
        }
        if val.v >= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_subwin_update`: age the best samples out of the window and
    /// keep the 2nd/3rd choices from distinct quarters/halves of it.
    fn subwin_update(&mut self, win: u64, val: Sample) -> u64 {
        let dt = val.t.saturating_sub(self.s[0].t);
        if dt > win {
            // The best expired: promote the 2nd and 3rd; if the new 1st is
            // also outside the window, promote again.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.saturating_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window passed without a 2nd choice.
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half the window passed without a 3rd choice.
            self.s[2] = val;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_holds_for_the_window_then_expires() {
        let mut m = MinMax::default();
        m.running_max(10, 0, 100);
        for t in 1..=10 {
            assert_eq!(m.running_max(10, t, 50), 100, "round {t}");
        }
        // Round 11: the max of round 0 is more than 10 rounds old.
        assert_eq!(m.running_max(10, 11, 50), 50);
    }

    #[test]
    fn a_larger_sample_takes_over_at_once() {
        let mut m = MinMax::default();
        m.running_max(10, 0, 100);
        assert_eq!(m.running_max(10, 3, 120), 120);
        assert_eq!(m.running_max(10, 4, 90), 120);
    }

    /// The 2nd-best sample from a later sub-window takes over when the
    /// best expires (not the latest sample).
    #[test]
    fn second_best_survives_expiry() {
        let mut m = MinMax::default();
        m.running_max(10, 0, 100);
        m.running_max(10, 3, 80); // > win/4 after the best: 2nd and 3rd choice
        m.running_max(10, 6, 60); // > win/2: 3rd choice
        assert_eq!(m.running_max(10, 11, 10), 80);
    }

    /// When the best expires and the 2nd is also out of the window, the
    /// 3rd takes over in the same update.
    #[test]
    fn two_expired_choices_go_at_once() {
        let mut m = MinMax::default();
        m.running_max(10, 0, 100);
        m.running_max(10, 3, 80);
        m.running_max(10, 6, 60);
        assert_eq!(m.running_max(10, 14, 10), 60);
    }
}
