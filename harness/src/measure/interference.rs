//! Reading what the rest of the machine did during a window: a [`Probe`] snapshots the
//! machine's CPU counters, this process's CPU time, CPU pressure and the run-queue waits
//! of the harness's own threads; [`Probe::receipt`] turns two snapshots into a judged
//! [`Interference`] (see `results::interference` for what each figure means and how a
//! figure is judged).

use std::sync::OnceLock;
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};

use super::system::{current_thread_id, Usage};
use crate::results::Interference;

/// The CPUs this process may run on and the length of a `/proc/stat` tick, read once.
#[derive(Debug)]
struct Machine {
    /// CPU numbers in the affinity mask.
    cpus: Vec<usize>,
    /// Seconds per tick (`1 / sysconf(_SC_CLK_TCK)`).
    tick_s: f64,
}

fn machine() -> &'static Machine {
    static MACHINE: OnceLock<Machine> = OnceLock::new();
    MACHINE.get_or_init(|| Machine { cpus: affinity_cpus(), tick_s: tick_s() })
}

/// The CPU numbers in this process's affinity mask (all online CPUs where it cannot be
/// read).
fn affinity_cpus() -> Vec<usize> {
    // SAFETY: `cpu_set_t` is plain bits, for which all zeros is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a live `cpu_set_t` and the size passed is its own; pid 0 is this
    // process's calling thread, whose mask every harness thread inherits.
    let read = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if read != 0 {
        return (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
    }
    // SAFETY: `set` was filled by `sched_getaffinity`; `CPU_ISSET` only reads it, for
    // numbers below `CPU_SETSIZE`.
    (0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect()
}

fn tick_s() -> f64 {
    // SAFETY: `sysconf` reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        1.0 / ticks as f64
    } else {
        0.01
    }
}

/// Idle and stolen ticks of `cpus`, summed, from `/proc/stat`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CpuTicks {
    /// idle + iowait: exact on a tickless kernel, rounded down to a tick.
    idle: u64,
    /// steal.
    steal: u64,
    /// Each CPU's steal, in the mask's order.
    steals: Vec<u64>,
}

impl CpuTicks {
    /// How many CPUs' steal counters moved since `before`.
    fn steal_moved(&self, before: &Self) -> usize {
        self.steals.iter().zip(&before.steals).filter(|(now, then)| now != then).count()
    }
}

/// Sums the `cpuN` lines of `stat` (the text of `/proc/stat`) for the CPUs in `cpus`;
/// `None` where a line is malformed or a CPU of the mask is missing.
fn cpu_ticks(stat: &str, cpus: &[usize]) -> Option<CpuTicks> {
    let mut total = CpuTicks { idle: 0, steal: 0, steals: Vec::with_capacity(cpus.len()) };
    let mut seen = 0;
    for line in stat.lines() {
        let Some(rest) = line.strip_prefix("cpu") else { continue };
        let mut fields = rest.split_whitespace();
        let Some(Ok(cpu)) = fields.next().map(str::parse::<usize>) else { continue };
        if !cpus.contains(&cpu) {
            continue;
        }
        let values: Vec<u64> = fields.map(str::parse).collect::<Result<_, _>>().ok()?;
        let field = |index: usize| values.get(index).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal guest guest_nice
        total.idle += field(3) + field(4);
        total.steal += field(7);
        total.steals.push(field(7));
        seen += 1;
    }
    (seen == cpus.len()).then_some(total)
}

/// The "some" total of `/proc/pressure/cpu`, in microseconds.
fn pressure_us(text: &str) -> Option<u64> {
    let some = text.lines().find(|line| line.starts_with("some "))?;
    some.split_whitespace().find_map(|field| field.strip_prefix("total="))?.parse().ok()
}

/// One process's counters: its start time (which tells a reused pid apart) and its CPU
/// counters (utime, stime, cutime, cstime), in ticks.
type Counters = (u64, [u64; 4]);

/// Every other process's counters, by pid in ascending order.
#[derive(Debug, Default, PartialEq, Eq)]
struct Processes(Vec<(u32, Counters)>);

/// Whether `/proc` shows every process whose CPU `/proc/stat` counts: not where this process
/// lives in a nested PID namespace (a container, whose `/proc/stat` is the host's), nor where
/// `/proc` hides other users' processes (`hidepid`). Read once.
fn every_process_visible() -> bool {
    static VISIBLE: OnceLock<bool> = OnceLock::new();
    *VISIBLE.get_or_init(|| {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let nested = status
            .lines()
            .find_map(|line| line.strip_prefix("NSpid:"))
            .is_some_and(|pids| pids.split_whitespace().count() > 1);
        !nested && std::fs::read_to_string("/proc/1/stat").is_ok()
    })
}

impl Processes {
    /// Reads `/proc/<pid>/stat` of every process but those in `skip`; `None` where `/proc`
    /// cannot be listed or does not show every process ([`every_process_visible`]), so that
    /// the machine's reading judges alone. A process that ends while it is read is left out
    /// (its CPU reaches its parent's `cutime` once reaped).
    fn read(skip: &[u32]) -> Option<Self> {
        if !every_process_visible() {
            return None;
        }
        let mut counters: Vec<(u32, Counters)> = std::fs::read_dir("/proc")
            .ok()?
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| !skip.contains(pid))
            .filter_map(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                Some((pid, process_ticks(&stat)?))
            })
            .collect();
        counters.sort_unstable_by_key(|(pid, _)| *pid);
        Some(Self(counters))
    }

    /// The ticks the processes of `self` (read later) gained since `before`, and how many
    /// counters moved; a process not in `before` (or under a pid reused since, with another
    /// start time) was born in between and counts whole.
    fn since(&self, before: &Self) -> (u64, usize) {
        let (mut ticks, mut moved) = (0, 0);
        for (pid, (started, now)) in &self.0 {
            let then = match before.0.binary_search_by_key(pid, |(earlier, _)| *earlier) {
                Ok(index) if before.0[index].1 .0 == *started => before.0[index].1 .1,
                _ => [0; 4],
            };
            for (now, then) in now.iter().zip(then).filter(|(now, then)| **now != *then) {
                ticks += now.saturating_sub(then);
                moved += 1;
            }
        }
        (ticks, moved)
    }
}

/// Field 22 (start time) and fields 14-17 (utime, stime, cutime, cstime) of a
/// `/proc/<pid>/stat`: the 20th and the 12th to 15th after the name, which may hold spaces
/// and parentheses.
fn process_ticks(stat: &str) -> Option<Counters> {
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
    let field = |index: usize| fields.get(index)?.parse::<u64>().ok();
    Some((field(19)?, [field(11)?, field(12)?, field(13)?, field(14)?]))
}

/// The harness threads registered with [`register_harness_thread`], by kernel thread id.
static HARNESS_THREADS: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());

/// Counts the calling thread among the harness's own (the timer's threads, drivers), whose
/// run-queue waits every receipt reports, until the returned guard is dropped (a thread id
/// is reused once its thread ends). The thread that takes a receipt is counted without
/// registering.
pub fn register_harness_thread() -> HarnessThread {
    let tid = current_thread_id();
    harness_threads().push(tid);
    HarnessThread { tid }
}

/// Keeps a thread among the harness's own; see [`register_harness_thread`].
#[derive(Debug)]
#[must_use = "the thread stops being counted when the guard is dropped"]
pub struct HarnessThread {
    tid: libc::pid_t,
}

impl Drop for HarnessThread {
    fn drop(&mut self) {
        let mut threads = harness_threads();
        if let Some(index) = threads.iter().position(|&tid| tid == self.tid) {
            threads.swap_remove(index);
        }
    }
}

fn harness_threads() -> MutexGuard<'static, Vec<libc::pid_t>> {
    HARNESS_THREADS.lock()
}

/// Nanoseconds `tid` of this process has waited in a run queue (second field of its
/// `schedstat`); `None` where the thread is gone or the kernel keeps no such statistics.
fn run_queue_wait_ns(tid: libc::pid_t) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The run-queue waits of the harness's threads and of the calling one, by thread id.
fn harness_waits() -> Vec<(libc::pid_t, u64)> {
    let mut tids = harness_threads().clone();
    let caller = current_thread_id();
    if !tids.contains(&caller) {
        tids.push(caller);
    }
    tids.into_iter().filter_map(|tid| Some((tid, run_queue_wait_ns(tid)?))).collect()
}

/// The machine's counters at the start of a window.
#[derive(Debug)]
pub struct Probe {
    at: Instant,
    cpu: Option<CpuTicks>,
    own_cpu_s: f64,
    /// Another process whose CPU is the run's own (an external design's driver).
    also: Option<u32>,
    processes: Option<Processes>,
    pressure_us: Option<u64>,
    waits: Vec<(libc::pid_t, u64)>,
}

impl Probe {
    /// Reads the counters now.
    pub fn start() -> Self {
        Self::start_including(None)
    }

    /// Reads the counters now, counting process `pid`'s CPU as this run's own, not another
    /// process's: an external design's driver, which runs the design.
    pub fn start_with(pid: u32) -> Self {
        Self::start_including(Some(pid))
    }

    fn start_including(also: Option<u32>) -> Self {
        let machine = machine();
        Self {
            processes: Processes::read(&skipped(also)),
            cpu: read_cpu_ticks(&machine.cpus),
            pressure_us: read_pressure_us(),
            waits: harness_waits(),
            own_cpu_s: own_cpu_s(also),
            also,
            at: Instant::now(),
        }
    }

    /// The receipt of the window from [`Probe::start`] to now, judged.
    pub fn receipt(&self) -> Interference {
        let window_s = self.at.elapsed().as_secs_f64();
        let own_cpu_s = own_cpu_s(self.also) - self.own_cpu_s;
        let cpu = read_cpu_ticks(&machine().cpus);
        let pressure_us = read_pressure_us();
        let waits = harness_waits();
        let machine = machine();
        let ticks = self.cpu.as_ref().zip(cpu.as_ref());
        let seconds = |ticks: u64| ticks as f64 * machine.tick_s;
        let capacity_s = window_s * machine.cpus.len() as f64;
        let steal_s =
            ticks.map(|(before, after)| seconds(after.steal.saturating_sub(before.steal)));
        let other_cpu_s = ticks.zip(steal_s).map(|((before, after), steal_s)| {
            let idle_s = seconds(after.idle.saturating_sub(before.idle));
            (capacity_s - idle_s - steal_s - own_cpu_s).max(0.0)
        });
        let pressure_s = self
            .pressure_us
            .zip(pressure_us)
            .map(|(before, after)| after.saturating_sub(before) as f64 / 1e6);
        let processes = Processes::read(&skipped(self.also));
        let (processes_s, moved) = match (&self.processes, processes) {
            (Some(before), Some(after)) => {
                let (ticks, moved) = after.since(before);
                (Some(seconds(ticks)), moved)
            }
            _ => (None, 0),
        };
        Interference::judged(
            window_s,
            machine.cpus.len(),
            machine.tick_s,
            other_cpu_s,
            steal_s,
            pressure_s,
            wait_s(&self.waits, &waits),
        )
        .with_processes(processes_s, moved as f64 / 6.0)
        .with_steal_moved(ticks.map(|(before, after)| after.steal_moved(before)))
    }
}

/// The processes whose CPU is the run's own: this one, and `also`.
fn skipped(also: Option<u32>) -> Vec<u32> {
    std::iter::once(std::process::id()).chain(also).collect()
}

/// This process's CPU seconds so far, and `also`'s (another process) where given.
fn own_cpu_s(also: Option<u32>) -> f64 {
    let other = also.and_then(super::system::process_usage).map_or(0.0, |usage| usage.cpu_s);
    Usage::now().cpu_s + other
}

/// Seconds the threads present at both ends waited in a run queue between them.
fn wait_s(before: &[(libc::pid_t, u64)], after: &[(libc::pid_t, u64)]) -> Option<f64> {
    let waited: Vec<u64> = after
        .iter()
        .filter_map(|(tid, now)| {
            let then = before.iter().find(|(earlier, _)| earlier == tid)?.1;
            Some(now.saturating_sub(then))
        })
        .collect();
    (!waited.is_empty()).then(|| waited.iter().sum::<u64>() as f64 / 1e9)
}

fn read_cpu_ticks(cpus: &[usize]) -> Option<CpuTicks> {
    cpu_ticks(&std::fs::read_to_string("/proc/stat").ok()?, cpus)
}

fn read_pressure_us() -> Option<u64> {
    pressure_us(&std::fs::read_to_string("/proc/pressure/cpu").ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::interference::VOID_SHARE;
    use crate::results::Validity;

    const STAT: &str = "cpu  300 0 30 900 5 0 2 7 0 0\n\
                        cpu0 100 0 10 450 2 0 1 3 0 0\n\
                        cpu1 200 0 20 450 3 0 1 4 0 0\n\
                        intr 1 2 3\n";

    #[test]
    fn sums_the_cpus_of_the_mask_only() {
        let both = cpu_ticks(STAT, &[0, 1]).unwrap();
        assert_eq!((both.idle, both.steal, both.steals.as_slice()), (905, 7, &[3, 4][..]));
        let one = cpu_ticks(STAT, &[1]).unwrap();
        assert_eq!((one.idle, one.steal, one.steals.as_slice()), (453, 4, &[4][..]));
        let later = CpuTicks { steals: vec![3, 6], ..both.clone() };
        assert_eq!(later.steal_moved(&both), 1);
        assert_eq!(cpu_ticks(STAT, &[2]), None, "a CPU of the mask is missing");
    }

    #[test]
    fn reads_a_processs_four_counters_whatever_its_name() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 11 2 20 0 1 0 5 0 0";
        assert_eq!(process_ticks(stat), Some((5, [7, 3, 11, 2])));
        assert_eq!(process_ticks("42 (short) S 1 2"), None);
    }

    #[test]
    fn the_processes_gains_count_the_moved_counters_and_the_newborn_whole() {
        let before = Processes(vec![
            (1, (0, [10, 5, 0, 0])),
            (7, (3, [100, 0, 3, 0])),
            (9, (4, [1, 1, 0, 0])),
            (11, (5, [50, 50, 0, 0])),
        ]);
        // 1 ran 2 ticks; 7 did not run; 9 ended; 12 was born with 4 ticks in two counters;
        // 11 ended and its pid went to a process born later, with 1 tick.
        let after = Processes(vec![
            (1, (0, [12, 5, 0, 0])),
            (7, (3, [100, 0, 3, 0])),
            (11, (90, [1, 0, 0, 0])),
            (12, (91, [3, 1, 0, 0])),
        ]);
        assert_eq!(after.since(&before), (7, 4));
        assert_eq!(before.since(&before), (0, 0));
    }

    #[test]
    fn this_process_is_not_among_the_others() {
        let Some(processes) = Processes::read(&skipped(None)) else { return };
        let own = std::process::id();
        assert!(processes.0.iter().all(|(pid, _)| *pid != own));
        assert!(!processes.0.is_empty(), "init at least is another process");
        assert!(processes.0.windows(2).all(|pair| pair[0].0 < pair[1].0), "sorted by pid");
    }

    #[test]
    fn reads_the_some_total_of_cpu_pressure() {
        let text = "some avg10=1.00 avg60=0.50 avg300=0.10 total=123456\n\
                    full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(pressure_us(text), Some(123_456));
        assert_eq!(pressure_us("full total=1\n"), None);
    }

    #[test]
    fn spinning_processes_beside_this_one_are_other_processes() {
        // One spinning child process per CPU of the mask while this thread sleeps: they
        // take most of the capacity whatever else runs, and none of it is this process's.
        let cpus = machine().cpus.len();
        let probe = Probe::start();
        let mut children: Vec<_> = (0..cpus)
            .map(|_| {
                std::process::Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .spawn()
                    .expect("cannot start sh")
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(1_500));
        let receipt = probe.receipt();
        for child in &mut children {
            let _ = child.kill();
            let _ = child.wait();
        }
        if !std::path::Path::new("/proc/stat").exists() {
            return; // nothing to read here
        }
        let share = receipt.other_share().expect("/proc/stat is readable");
        assert!(share > VOID_SHARE, "{receipt:?}");
        assert_eq!(receipt.validity, Validity::Void, "{receipt:?}");
        assert!(receipt.reasons[0].starts_with("other processes"), "{receipt:?}");
    }

    #[test]
    fn the_harness_threads_waits_are_read() {
        let _registered = register_harness_thread();
        let probe = Probe::start();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let receipt = probe.receipt();
        if std::path::Path::new("/proc/self/schedstat").exists() {
            assert!(receipt.harness_wait_s.is_some(), "{receipt:?}");
        }
    }
}
