//! Interference receipts: what the rest of the machine did while a figure was taken, and
//! whether that leaves the figure valid.
//!
//! A receipt covers one window (a timed repetition, a pipeline cell, a calibration) or the
//! sum of a cell's windows. It holds:
//! - `other_cpu_s`: CPU time the machine was not idle on the CPUs this process may run on
//!   (the window's wall time on each CPU of the affinity mask, less the idle, I/O-wait and
//!   steal time `/proc/stat` counts on them), minus this process's own CPU time: the work
//!   of other processes and of the kernel on their behalf;
//! - `steal_s`: time the hypervisor ran something else on those CPUs (`/proc/stat` steal);
//! - `pressure_s`: CPU pressure, time in which some runnable task waited for a CPU
//!   (`/proc/pressure/cpu`, "some"); it counts this process's own threads too, so it is a
//!   receipt, not a judge;
//! - `harness_wait_s`: how long the harness's own threads (the producer, the timer, the
//!   drivers) waited in a run queue (`/proc/self/task/<tid>/schedstat`); the design's own
//!   workers compete for the same cores, so this too is a receipt, not a judge.
//!
//! # Validity
//! Interference decides validity, never the design's own behaviour: a timer that is late
//! because the design finishes waits on it, or sends that fall behind because the design
//! pushes back, are results. So only the other processes' CPU share and the steal share
//! judge, each against two bounds ([`DISTURBED_SHARE`], [`VOID_SHARE`]), with the
//! receipt's own uncertainty ([`Interference::uncertainty_s`]) on the safe side:
//! - `clean`: even the share plus its uncertainty stays under [`DISTURBED_SHARE`];
//! - `disturbed`: the share minus its uncertainty reaches [`DISTURBED_SHARE`], not
//!   [`VOID_SHARE`]: the figure is kept and ranked, and marked;
//! - `void`: the share minus its uncertainty reaches [`VOID_SHARE`]: the cell is measured
//!   again, and if still void kept with its reasons and left out of rankings;
//! - `unmeasured`: the window is too short (or `/proc` unreadable) to tell clean from
//!   disturbed.
//!
//! `/proc/stat` reports in clock ticks (10 ms where `USER_HZ` is 100). On a tickless
//! kernel (`NO_HZ`, the Linux distributions' default) idle time is kept exactly and only
//! rounded down to a tick when read, so each of the two counters read per CPU (idle and
//! I/O wait) is off by less than a tick at each end of a window: a standard deviation of
//! about 0.58 tick per CPU and window (the difference of two uniform roundings, twice).
//! The uncertainty is two such standard deviations; independent windows add in
//! quadrature, so a cell's repetitions summed judge together what a short one cannot
//! alone. This process's own CPU time (`getrusage`) is exact.

use serde::{Deserialize, Serialize};

/// Other processes' share of this process's CPUs (or the steal share) from which a figure
/// is marked `disturbed`. A quiet 2-core VM shows 0.5-2% (kernel threads, the shell).
pub const DISTURBED_SHARE: f64 = 0.10;
/// The share from which a figure is `void`: a quarter of the CPUs went to someone else.
pub const VOID_SHARE: f64 = 0.25;

/// What a receipt says of its figure; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Validity {
    /// Nothing else took a share worth naming.
    Clean,
    /// The window was too short, or `/proc` unreadable, to judge.
    Unmeasured,
    /// Someone else took at least [`DISTURBED_SHARE`]: kept, ranked and marked.
    Disturbed,
    /// Someone else took at least [`VOID_SHARE`]: not ranked.
    Void,
}

impl Validity {
    /// The name used in files and tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Clean => "clean",
            Self::Unmeasured => "unmeasured",
            Self::Disturbed => "disturbed",
            Self::Void => "void",
        }
    }
}

/// What the rest of the machine did during one window or a sum of windows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interference {
    /// Wall seconds covered (summed over the windows of a cell).
    pub window_s: f64,
    /// CPUs in this process's affinity mask: the capacity is `window_s x cpus`.
    pub cpus: usize,
    /// Seconds per `/proc/stat` tick (0.01 where `USER_HZ` is 100).
    pub tick_s: f64,
    /// Windows summed into this receipt (1 for one window).
    #[serde(default = "one")]
    pub windows: usize,
    /// CPU seconds other processes used on those CPUs; null where `/proc/stat` could not
    /// be read.
    pub other_cpu_s: Option<f64>,
    /// Seconds the hypervisor gave those CPUs to someone else; null where unreported.
    pub steal_s: Option<f64>,
    /// Seconds in which some task waited for a CPU (`/proc/pressure/cpu` "some", whole
    /// machine, this process included); null where the kernel has no pressure files.
    pub pressure_s: Option<f64>,
    /// Seconds the harness's own threads waited in a run queue; null where the kernel
    /// keeps no per-thread scheduler statistics.
    pub harness_wait_s: Option<f64>,
    /// The judgement; see the module docs.
    pub validity: Validity,
    /// Why the validity is not `clean`, one phrase each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Times the cell was measured again because it was void (`--revalidate`); this
    /// receipt is the last measurement's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub remeasured: usize,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

fn one() -> usize {
    1
}

impl Interference {
    /// A receipt for one window, judged.
    pub fn judged(
        window_s: f64,
        cpus: usize,
        tick_s: f64,
        other_cpu_s: Option<f64>,
        steal_s: Option<f64>,
        pressure_s: Option<f64>,
        harness_wait_s: Option<f64>,
    ) -> Self {
        let mut receipt = Self {
            window_s,
            cpus,
            tick_s,
            windows: 1,
            other_cpu_s,
            steal_s,
            pressure_s,
            harness_wait_s,
            validity: Validity::Unmeasured,
            reasons: Vec::new(),
            remeasured: 0,
        };
        receipt.judge();
        receipt
    }

    /// The sum of `receipts` (a cell's repetitions), judged as one window; `None` for none.
    pub fn sum<'a>(receipts: impl IntoIterator<Item = &'a Interference>) -> Option<Self> {
        let mut receipts = receipts.into_iter();
        let mut total = receipts.next()?.clone();
        for receipt in receipts {
            total.window_s += receipt.window_s;
            total.windows += receipt.windows;
            total.cpus = total.cpus.max(receipt.cpus);
            total.other_cpu_s = add(total.other_cpu_s, receipt.other_cpu_s);
            total.steal_s = add(total.steal_s, receipt.steal_s);
            total.pressure_s = add(total.pressure_s, receipt.pressure_s);
            total.harness_wait_s = add(total.harness_wait_s, receipt.harness_wait_s);
        }
        total.judge();
        Some(total)
    }

    /// CPU seconds the window offered: its wall time on every CPU of the mask.
    pub fn capacity_s(&self) -> f64 {
        self.window_s * self.cpus as f64
    }

    /// The uncertainty of `other_cpu_s` and `steal_s`, in CPU seconds: two standard
    /// deviations of the roundings at the windows' ends (variance a third of a tick
    /// squared per CPU and window); see the module docs.
    pub fn uncertainty_s(&self) -> f64 {
        let variance_ticks = (self.cpus * self.windows) as f64 / 3.0;
        2.0 * variance_ticks.sqrt() * self.tick_s
    }

    /// Other processes' share of the capacity.
    pub fn other_share(&self) -> Option<f64> {
        self.share(self.other_cpu_s)
    }

    /// The steal share of the capacity.
    pub fn steal_share(&self) -> Option<f64> {
        self.share(self.steal_s)
    }

    fn share(&self, seconds: Option<f64>) -> Option<f64> {
        let capacity = self.capacity_s();
        (capacity > 0.0).then(|| seconds.map(|seconds| seconds / capacity)).flatten()
    }

    /// Sets `validity` and `reasons` from the shares; see the module docs.
    fn judge(&mut self) {
        let capacity = self.capacity_s();
        let margin = if capacity > 0.0 { self.uncertainty_s() / capacity } else { f64::INFINITY };
        let judged = [("other processes", self.other_share()), ("steal", self.steal_share())];
        let mut levels = Vec::new();
        for (what, share) in judged {
            let Some(share) = share else {
                levels.push((Validity::Unmeasured, format!("{what}: /proc/stat unreadable")));
                continue;
            };
            let level = if share - margin >= VOID_SHARE {
                Validity::Void
            } else if share - margin >= DISTURBED_SHARE {
                Validity::Disturbed
            } else if share + margin < DISTURBED_SHARE {
                Validity::Clean
            } else {
                Validity::Unmeasured
            };
            let reason = format!(
                "{what} {:.0}% of {} CPU{} (+/- {:.0}% over {:.2} s)",
                share * 100.0,
                self.cpus,
                if self.cpus == 1 { "" } else { "s" },
                margin.min(9.99) * 100.0,
                self.window_s,
            );
            levels.push((level, reason));
        }
        self.validity = levels.iter().map(|(level, _)| *level).max().unwrap_or(Validity::Clean);
        // The reasons for the verdict: what disturbed or voided it, or else what could not
        // be told.
        let validity = self.validity;
        self.reasons = levels
            .into_iter()
            .filter(|(level, _)| match validity {
                Validity::Clean => false,
                Validity::Unmeasured => *level == Validity::Unmeasured,
                Validity::Disturbed | Validity::Void => *level >= Validity::Disturbed,
            })
            .map(|(_, reason)| reason)
            .collect();
    }
}

fn add(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(window_s: f64, other_cpu_s: f64) -> Interference {
        Interference::judged(window_s, 2, 0.01, Some(other_cpu_s), Some(0.0), None, None)
    }

    #[test]
    fn a_quiet_long_window_is_clean() {
        let quiet = receipt(10.0, 0.2); // 1% of 20 CPU seconds
        assert_eq!(quiet.validity, Validity::Clean, "{quiet:?}");
        assert!(quiet.reasons.is_empty());
    }

    #[test]
    fn two_busy_neighbours_void_a_long_window() {
        let busy = receipt(10.0, 8.0); // 40%
        assert_eq!(busy.validity, Validity::Void);
        assert!(busy.reasons[0].starts_with("other processes 40% of 2 CPUs"), "{busy:?}");
    }

    #[test]
    fn a_moderate_neighbour_disturbs() {
        assert_eq!(receipt(10.0, 3.0).validity, Validity::Disturbed); // 15%
    }

    #[test]
    fn a_window_of_a_few_ticks_cannot_be_judged() {
        // +/- 1.6 ticks of 4: nothing can be told.
        assert_eq!(receipt(0.02, 0.0).validity, Validity::Unmeasured);
        let unreadable = Interference::judged(1.0, 2, 0.01, None, None, None, None);
        assert_eq!(unreadable.validity, Validity::Unmeasured);
    }

    #[test]
    fn short_windows_summed_can_be_judged() {
        // 3% of 2 CPUs over 50 ms: +/- 16%, so neither clean nor disturbed; ten of them
        // summed: +/- 5%, clean.
        let short = receipt(0.05, 0.003);
        assert_eq!(short.validity, Validity::Unmeasured, "{short:?}");
        let cell = Interference::sum(std::iter::repeat_n(&short, 10).collect::<Vec<_>>())
            .expect("ten receipts");
        assert_eq!(cell.windows, 10);
        assert!((cell.window_s - 0.5).abs() < 1e-9);
        assert_eq!(cell.validity, Validity::Clean, "{cell:?}");
    }

    #[test]
    fn steal_judges_like_other_processes() {
        let stolen = Interference::judged(10.0, 2, 0.01, Some(0.0), Some(6.0), None, None);
        assert_eq!(stolen.validity, Validity::Void);
        assert!(stolen.reasons[0].starts_with("steal 30%"));
    }
}
