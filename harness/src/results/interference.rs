//! Interference receipts: what the rest of the machine did while a figure was taken, and
//! whether that leaves the figure valid.
//!
//! A receipt covers one window (a timed repetition, a pipeline cell, a calibration) or the
//! sum of a cell's windows. It holds:
//! - `other_cpu_s`: CPU time other processes used, the lesser of two readings:
//!   - the processes' own counters: the CPU time (`utime + stime`, and `cutime + cstime`
//!     for the children they reaped) that every other process in `/proc` gained over the
//!     window, a process born inside it counted whole;
//!   - the machine's counters: the time the CPUs this process may run on were not idle
//!     (the window's wall time on each CPU of the affinity mask, less the idle, I/O-wait
//!     and steal time `/proc/stat` counts on them), minus this process's own CPU time.
//!
//!   The machine's reading also holds the kernel's own time that no process owns: entering
//!   and leaving idle, interrupts. A design that blocks and wakes its threads thousands of
//!   times a second cost the kernel 4-11% of 2 CPUs on a 2-core VM, which that reading took for
//!   other processes; the processes' reading does not. The machine's reading bounds the
//!   processes' where this process may use only some of the CPUs (others' work elsewhere is
//!   not ours to judge);
//! - `unowned_s`: that kernel time (the machine's reading less the processes'), a receipt,
//!   not a judge;
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
//! `/proc/stat` and `/proc/<pid>/stat` report in clock ticks (10 ms where `USER_HZ` is
//! 100), each kept exactly by the kernel and rounded down to a tick when read. A counter
//! read at both ends of a window is off by the difference of two such roundings: variance
//! 1/6 tick squared. On the machine's reading, two counters per CPU (idle and I/O wait)
//! move in every window: variance 1/3 tick squared per CPU and window. On the processes'
//! reading only the counters that moved count (a process that did not run adds nothing):
//! on a quiet machine a handful, so a window of 50 ms can be judged. The receipt keeps the
//! variance of its `other_cpu_s` (`other_variance_ticks`); the uncertainty is two standard
//! deviations, and independent windows add in quadrature, so a cell's repetitions summed
//! judge together what a short one cannot alone. Steal is one counter per CPU, read the same
//! way: only the CPUs whose steal counter moved add 1/6 tick squared
//! (`steal_variance_ticks`). This process's own CPU time (`getrusage`) is exact.

use serde::{Deserialize, Serialize};

/// Other processes' share of this process's CPUs (or the steal share) from which a figure
/// is marked `disturbed`. A quiet 2-core VM shows 0.5-2% (kernel threads, the shell).
pub const DISTURBED_SHARE: f64 = 0.10;
/// The share from which a figure is `void`: a quarter of the CPUs went to someone else.
pub const VOID_SHARE: f64 = 0.25;
/// The most cells of a run that may be `disturbed` (a share of its cells, none `void`) for it
/// to be published as a reference: the bar the README's figures are held to.
pub const REFERENCE_DISTURBED_SHARE: f64 = 0.01;

/// Whether receipts of these validities (every cell's of a run) meet the reference bar: no
/// `void` cell and at most [`REFERENCE_DISTURBED_SHARE`] of them `disturbed`.
pub fn meets_reference_bar(validities: &[Validity]) -> bool {
    let count = |validity| validities.iter().filter(|&&v| v == validity).count();
    count(Validity::Void) == 0
        && count(Validity::Disturbed) as f64 <= REFERENCE_DISTURBED_SHARE * validities.len() as f64
}

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
    /// The variance of `other_cpu_s`'s rounding, in ticks squared (summed over the
    /// windows); absent in files from before it was kept, where the machine's reading's
    /// (1/3 per CPU and window) applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_variance_ticks: Option<f64>,
    /// The variance of `steal_s`'s rounding, in ticks squared (1/6 per CPU whose steal
    /// counter moved, summed over the windows); absent in older files, where 1/6 per CPU
    /// and window applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_variance_ticks: Option<f64>,
    /// Busy time on this process's CPUs that no process owns (the kernel's idle exits,
    /// interrupts): a receipt, not a judge; absent where not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unowned_s: Option<f64>,
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
            other_variance_ticks: None,
            steal_variance_ticks: None,
            unowned_s: None,
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
            // Before the windows add up: a receipt without a variance of its own has the
            // machine's for its own windows.
            if total.other_variance_ticks.is_some() || receipt.other_variance_ticks.is_some() {
                total.other_variance_ticks =
                    Some(total.other_variance() + receipt.other_variance());
            }
            if total.steal_variance_ticks.is_some() || receipt.steal_variance_ticks.is_some() {
                total.steal_variance_ticks =
                    Some(total.steal_variance() + receipt.steal_variance());
            }
            total.window_s += receipt.window_s;
            total.windows += receipt.windows;
            total.cpus = total.cpus.max(receipt.cpus);
            total.other_cpu_s = add(total.other_cpu_s, receipt.other_cpu_s);
            total.steal_s = add(total.steal_s, receipt.steal_s);
            total.pressure_s = add(total.pressure_s, receipt.pressure_s);
            total.harness_wait_s = add(total.harness_wait_s, receipt.harness_wait_s);
            total.unowned_s = add(total.unowned_s, receipt.unowned_s);
        }
        total.judge();
        Some(total)
    }

    /// CPU seconds the window offered: its wall time on every CPU of the mask.
    pub fn capacity_s(&self) -> f64 {
        self.window_s * self.cpus as f64
    }

    /// Sets `other_cpu_s` from the processes' own counters, with the variance of their
    /// rounding, where that reading is the lesser (see the module docs), and keeps the
    /// difference as `unowned_s`; judges again.
    #[must_use]
    pub fn with_processes(mut self, processes_s: Option<f64>, variance_ticks: f64) -> Self {
        if let (Some(machine), Some(processes)) = (self.other_cpu_s, processes_s) {
            self.unowned_s = Some((machine - processes).max(0.0));
            if processes <= machine {
                self.other_cpu_s = Some(processes);
                self.other_variance_ticks = Some(variance_ticks);
            } else {
                self.other_variance_ticks = Some(self.machine_variance());
            }
            self.judge();
        }
        self
    }

    /// The variance of the machine's reading, in ticks squared: a third of a tick squared
    /// per CPU and window.
    fn machine_variance(&self) -> f64 {
        (self.cpus * self.windows) as f64 / 3.0
    }

    /// The variance of `other_cpu_s`, in ticks squared.
    fn other_variance(&self) -> f64 {
        self.other_variance_ticks.unwrap_or_else(|| self.machine_variance())
    }

    /// Sets the variance of `steal_s` from the CPUs whose steal counter moved (`None`:
    /// unread) and judges again.
    #[must_use]
    pub fn with_steal_moved(mut self, moved: Option<usize>) -> Self {
        if let Some(moved) = moved {
            self.steal_variance_ticks = Some(moved as f64 / 6.0);
            self.judge();
        }
        self
    }

    /// The variance of `steal_s`, in ticks squared.
    fn steal_variance(&self) -> f64 {
        self.steal_variance_ticks.unwrap_or_else(|| self.machine_variance() / 2.0)
    }

    /// The uncertainty of `steal_s`, in CPU seconds: two standard deviations of the
    /// roundings at the windows' ends (1/6 tick squared per steal counter that moved, or,
    /// where not recorded, per CPU and window); see the module docs.
    pub fn uncertainty_s(&self) -> f64 {
        2.0 * self.steal_variance().sqrt() * self.tick_s
    }

    /// The uncertainty of `other_cpu_s`, in CPU seconds: two standard deviations of its
    /// rounding.
    pub fn other_uncertainty_s(&self) -> f64 {
        2.0 * self.other_variance().sqrt() * self.tick_s
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
        let margin_of = |uncertainty_s: f64| {
            if capacity > 0.0 {
                uncertainty_s / capacity
            } else {
                f64::INFINITY
            }
        };
        let judged = [
            ("other processes", self.other_share(), margin_of(self.other_uncertainty_s())),
            ("steal", self.steal_share(), margin_of(self.uncertainty_s())),
        ];
        let mut levels = Vec::new();
        for (what, share, margin) in judged {
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
    fn the_kernels_own_time_is_not_another_process() {
        // The machine's reading: 11% busy beyond this process; the processes' reading: 1%,
        // two counters moved. The lesser judges, with its own rounding: clean.
        let woken = receipt(0.3, 0.066).with_processes(Some(0.006), 2.0 / 6.0);
        assert_eq!(woken.validity, Validity::Clean, "{woken:?}");
        assert!((woken.unowned_s.unwrap() - 0.06).abs() < 1e-9, "{woken:?}");
        // A neighbour the processes' counters see is judged as before.
        let busy = receipt(10.0, 8.2).with_processes(Some(8.0), 4.0 / 6.0);
        assert_eq!(busy.validity, Validity::Void, "{busy:?}");
        assert_eq!(busy.other_cpu_s, Some(8.0));
        // Work elsewhere (the processes' reading above the machine's, as where this process
        // may use some CPUs only) is bounded by the machine's reading.
        let elsewhere = receipt(10.0, 0.2).with_processes(Some(9.0), 1.0);
        assert_eq!(elsewhere.other_cpu_s, Some(0.2));
        assert_eq!(elsewhere.validity, Validity::Clean, "{elsewhere:?}");
    }

    #[test]
    fn the_processes_rounding_adds_up_over_windows() {
        // 50 ms on 2 CPUs, nothing else ran: the machine's rounding could not tell (+/- 16%);
        // no process counter moved, so other processes are known, but steal (+/- 12%) is
        // not, until three such windows are summed, or the steal counters are read too.
        let quiet = receipt(0.05, 0.0).with_processes(Some(0.0), 0.0);
        assert_eq!(quiet.validity, Validity::Unmeasured, "{quiet:?}");
        assert_eq!(quiet.reasons.len(), 1, "{quiet:?}");
        assert!(quiet.reasons[0].starts_with("steal 0%"), "{quiet:?}");
        let cell = Interference::sum([&quiet, &quiet, &quiet]).expect("three receipts");
        assert_eq!(cell.validity, Validity::Clean, "{cell:?}");
        let unmoved = quiet.clone().with_steal_moved(Some(0));
        assert_eq!(unmoved.validity, Validity::Clean, "{unmoved:?}");
        // One CPU's steal moved a tick in a 50 ms window: 10% +/- 8%, neither.
        let stolen = Interference { steal_s: Some(0.01), ..quiet }.with_steal_moved(Some(1));
        assert_eq!(stolen.validity, Validity::Unmeasured, "{stolen:?}");
        let cell = Interference::sum([&stolen, &unmoved]).expect("two receipts");
        assert!((cell.steal_variance_ticks.unwrap() - 1.0 / 6.0).abs() < 1e-9, "{cell:?}");
        let moved = receipt(0.05, 0.01).with_processes(Some(0.0), 1.0 / 6.0);
        let cell = Interference::sum([&moved, &moved, &moved]).expect("three receipts");
        assert!((cell.other_variance_ticks.unwrap() - 0.5).abs() < 1e-9, "{cell:?}");
        let old = Interference::sum([&receipt(0.05, 0.0), &moved]).expect("two receipts");
        // A receipt without the processes' variance brings the machine's: 2 CPUs, 1 window.
        assert!((old.other_variance_ticks.unwrap() - (2.0 / 3.0 + 1.0 / 6.0)).abs() < 1e-9);
    }

    #[test]
    fn the_reference_bar_allows_no_void_and_one_disturbed_cell_in_a_hundred() {
        let mut cells = vec![Validity::Clean; 199];
        cells.push(Validity::Unmeasured);
        assert!(meets_reference_bar(&cells));
        cells[0] = Validity::Disturbed;
        cells[1] = Validity::Disturbed;
        assert!(meets_reference_bar(&cells), "2 of 200");
        cells[2] = Validity::Disturbed;
        assert!(!meets_reference_bar(&cells), "3 of 200");
        let mut void = vec![Validity::Clean; 1_000];
        void[0] = Validity::Void;
        assert!(!meets_reference_bar(&void));
    }

    #[test]
    fn steal_judges_like_other_processes() {
        let stolen = Interference::judged(10.0, 2, 0.01, Some(0.0), Some(6.0), None, None);
        assert_eq!(stolen.validity, Validity::Void);
        assert!(stolen.reasons[0].starts_with("steal 30%"));
    }
}
