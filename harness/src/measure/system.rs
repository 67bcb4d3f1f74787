//! What the process and the machine say about themselves: OS thread count, resident
//! memory, CPU time, context switches, CPU model, toolchain and commit.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the sampler counts the process's threads.
const THREAD_SAMPLE_INTERVAL_US: u64 = 2_000;

/// OS threads of this process right now (`/proc/self/stat`, field 20).
pub fn thread_count() -> Option<usize> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; fields after its closing ')' are plain.
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split_whitespace().nth(17)?.parse().ok()
}

/// Starts a thread, `name`, that calls `sample` every `interval_us` microseconds until
/// `stop` is raised.
fn sample_every(
    name: &str,
    interval_us: u64,
    stop: &Arc<AtomicBool>,
    sample: impl Fn() + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    let stop = Arc::clone(stop);
    std::thread::Builder::new().name(name.into()).spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            sample();
            std::thread::sleep(Duration::from_micros(interval_us));
        }
    })
}

/// Samples the process's thread count in the background and keeps the peak.
#[derive(Debug)]
pub struct ThreadSampler {
    peak: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl ThreadSampler {
    /// Starts the sampler thread (itself counted in every sample).
    pub fn start() -> Self {
        let peak = Arc::new(AtomicUsize::new(thread_count().unwrap_or(0)));
        let stop = Arc::new(AtomicBool::new(false));
        let sampled = Arc::clone(&peak);
        let sample = move || {
            if let Some(count) = thread_count() {
                sampled.fetch_max(count, Ordering::Relaxed);
            }
        };
        let handle = sample_every("harness-sampler", THREAD_SAMPLE_INTERVAL_US, &stop, sample)
            .expect("cannot start the thread sampler");
        Self { peak, stop, handle: Some(handle) }
    }

    /// Starts a new peak from the current count.
    pub fn reset(&self) {
        self.peak.store(thread_count().unwrap_or(0), Ordering::Relaxed);
    }

    /// The highest count sampled since the last reset (including one last sample now).
    pub fn peak(&self) -> usize {
        if let Some(count) = thread_count() {
            self.peak.fetch_max(count, Ordering::Relaxed);
        }
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for ThreadSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// How often the memory sampler reads the resident set size.
const MEMORY_SAMPLE_INTERVAL_US: u64 = 5_000;

/// A `kB` field of a `/proc` file of `field: value kB` lines (`/proc/self/status`'s
/// `VmRSS`, `/proc/meminfo`'s `MemAvailable`), in bytes.
fn proc_kb_field(path: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let value = text.lines().find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))?;
    let kilobytes: u64 = value.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kilobytes * 1024)
}

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`), in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    proc_kb_field("/proc/self/status", field)
}

/// Memory the machine can give a new process without swapping, in bytes (`MemAvailable`
/// of `/proc/meminfo`); `None` where it cannot be read.
pub fn available_bytes() -> Option<u64> {
    proc_kb_field("/proc/meminfo", "MemAvailable")
}

/// Resident memory of this process right now, in bytes (`VmRSS`).
pub fn resident_bytes() -> Option<u64> {
    status_bytes("VmRSS")
}

/// The most resident memory since the process started or since the last successful
/// [`reset_peak_resident`], in bytes (`VmHWM`).
pub fn peak_resident_bytes() -> Option<u64> {
    status_bytes("VmHWM")
}

/// Resets the kernel's resident high-water mark to the current size (writes `5` to
/// `/proc/self/clear_refs`, Linux 4.0 and later); `false` if the kernel refused.
pub fn reset_peak_resident() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Samples the resident set size in the background and keeps the peak; where the kernel
/// lets its high-water mark be reset, that mark is counted too, so a peak between two
/// samples is not missed.
#[derive(Debug)]
pub struct MemorySampler {
    peak: Arc<AtomicU64>,
    /// Whether `VmHWM` was reset when sampling started (so it covers only this period).
    high_water_mark: bool,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl MemorySampler {
    /// Starts sampling from now; `None` where `/proc/self/status` cannot be read.
    pub fn start() -> Option<Self> {
        let now = resident_bytes()?;
        let high_water_mark = reset_peak_resident();
        let peak = Arc::new(AtomicU64::new(now));
        let stop = Arc::new(AtomicBool::new(false));
        let sampled = Arc::clone(&peak);
        let sample = move || {
            if let Some(bytes) = resident_bytes() {
                sampled.fetch_max(bytes, Ordering::Relaxed);
            }
        };
        let handle = sample_every("harness-memory", MEMORY_SAMPLE_INTERVAL_US, &stop, sample)
            .expect("cannot start the memory sampler");
        Some(Self { peak, high_water_mark, stop, handle: Some(handle) })
    }

    /// Stops sampling; returns the peak resident bytes since [`MemorySampler::start`].
    pub fn finish(mut self) -> u64 {
        self.stop_thread();
        let mut peak = self.peak.load(Ordering::Relaxed);
        if let Some(bytes) = resident_bytes() {
            peak = peak.max(bytes);
        }
        if self.high_water_mark {
            peak = peak.max(peak_resident_bytes().unwrap_or(0));
        }
        peak
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for MemorySampler {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// CPU time and context switches of the process or of one thread (`getrusage`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// User plus system CPU seconds.
    pub cpu_s: f64,
    /// Voluntary context switches (waits).
    pub voluntary: u64,
    /// Involuntary context switches (preemptions).
    pub involuntary: u64,
}

impl Usage {
    /// The process's usage so far (every thread).
    pub fn now() -> Self {
        Self::of(libc::RUSAGE_SELF)
    }

    /// The calling thread's usage so far.
    pub fn thread_now() -> Self {
        Self::of(libc::RUSAGE_THREAD)
    }

    fn of(who: libc::c_int) -> Self {
        // SAFETY: `rusage` is plain old data for which all-zero bytes are a valid value,
        // and `getrusage` only writes into the struct we pass.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `who` is RUSAGE_SELF or RUSAGE_THREAD, both valid, and `usage` is a
        // valid, writable rusage.
        if unsafe { libc::getrusage(who, &mut usage) } != 0 {
            return Self::default();
        }
        let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
        Self {
            cpu_s: seconds(usage.ru_utime) + seconds(usage.ru_stime),
            voluntary: usage.ru_nvcsw as u64,
            involuntary: usage.ru_nivcsw as u64,
        }
    }

    /// What was used between `earlier` and `self`.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            cpu_s: (self.cpu_s - earlier.cpu_s).max(0.0),
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
        }
    }
}

/// The kernel ids of this process's threads now (`/proc/self/task`); empty where it cannot
/// be read.
pub fn thread_ids() -> Vec<libc::pid_t> {
    let Ok(entries) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    entries.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok()).collect()
}

/// The kernel id of the calling thread.
pub fn current_thread_id() -> libc::pid_t {
    // SAFETY: `gettid` takes nothing and cannot fail.
    unsafe { libc::gettid() }
}

/// Nanoseconds thread `tid` of this process has run on a CPU so far, user and system time
/// together (the first field of `/proc/self/task/<tid>/schedstat`, the scheduler's own
/// count, not rounded to a tick); `None` where the thread is gone or the kernel keeps no
/// scheduler statistics.
pub fn thread_cpu_ns(tid: libc::pid_t) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The CPU time of some threads at one moment, by thread id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadsCpu {
    ns: Vec<(libc::pid_t, u64)>,
}

impl ThreadsCpu {
    /// The CPU time of each of `tids` now; a thread that is gone is left out.
    pub fn read(tids: &[libc::pid_t]) -> Self {
        Self { ns: tids.iter().filter_map(|&tid| Some((tid, thread_cpu_ns(tid)?))).collect() }
    }

    /// Nanoseconds the threads of `self` ran since `earlier`: a thread not in `earlier`
    /// started since, and counts whole. A thread that ended in between is in neither
    /// reading, and its time is missed.
    pub fn since(&self, earlier: &Self) -> u64 {
        let before = |tid| earlier.ns.iter().find(|(other, _)| *other == tid).map_or(0, |e| e.1);
        self.ns.iter().map(|&(tid, ns)| ns.saturating_sub(before(tid))).sum()
    }
}

/// The threads a strategy starts: every thread of the process that was not there just
/// before it was built (the harness's, the producer's, an earlier cell's that has not
/// exited yet are).
#[derive(Clone, Debug)]
pub struct StrategyThreads {
    /// The threads before the strategy was built; `None` where per-thread CPU time cannot
    /// be read (no `/proc/self/task/<tid>/schedstat`).
    before: Option<Vec<libc::pid_t>>,
}

impl StrategyThreads {
    /// Takes note of the threads that are not the strategy's: call it just before building.
    pub fn before_start() -> Self {
        let readable = thread_cpu_ns(current_thread_id()).is_some();
        Self { before: readable.then(thread_ids) }
    }

    /// The strategy's threads now: those started since [`StrategyThreads::before_start`];
    /// `None` where their CPU time cannot be read.
    pub fn started(&self) -> Option<Vec<libc::pid_t>> {
        let before = self.before.as_ref()?;
        Some(thread_ids().into_iter().filter(|tid| !before.contains(tid)).collect())
    }

    /// The CPU time of the strategy's threads now.
    pub fn cpu(&self) -> Option<ThreadsCpu> {
        self.started().map(|tids| ThreadsCpu::read(&tids))
    }
}

/// The CPU model name from `/proc/cpuinfo`, or "unknown".
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, name)| name.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Logical cores available to this process.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The first line of `command args`' output, if it ran.
fn first_line_of(command: &str, args: &[&str]) -> Option<String> {
    let mut command = std::process::Command::new(command);
    command.args(args);
    // A process group of its own: the Ctrl-C that stops a run after its cell in progress
    // must not end the git or rustc that fill in the run's meta (as "unknown").
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let output = command.output().ok()?;
    output.status.success().then(|| {
        String::from_utf8_lossy(&output.stdout).lines().next().unwrap_or_default().trim().to_owned()
    })
}

/// `rustc -V` of the toolchain on the PATH (the one that built this binary in practice).
pub fn rustc_version() -> String {
    first_line_of("rustc", &["-V"]).unwrap_or_else(|| "unknown".into())
}

/// The commit checked out in the working directory, with `-dirty` if it has changes.
pub fn git_commit() -> String {
    let Some(commit) = first_line_of("git", &["rev-parse", "HEAD"]) else {
        return "unknown".into();
    };
    let dirty = first_line_of("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|line| !line.is_empty());
    if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    }
}

/// The CPU time and context switches of another process, `pid`, every thread, from
/// `/proc` (an external design's driver).
pub fn process_usage(pid: u32) -> Option<Usage> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut usage = Usage { cpu_s: ticks as f64 / per_s, ..Usage::default() };
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten();
    for task in tasks {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let (voluntary, involuntary) = context_switches(&status);
        usage.voluntary += voluntary;
        usage.involuntary += involuntary;
    }
    Some(usage)
}

/// The voluntary and involuntary context switches a task's `/proc/.../status` counts.
fn context_switches(status: &str) -> (u64, u64) {
    let value = |prefix: &str| {
        let line = status.lines().find_map(|line| line.strip_prefix(prefix))?;
        line.trim().parse::<u64>().ok()
    };
    let voluntary = value("voluntary_ctxt_switches:").unwrap_or(0);
    (voluntary, value("nonvoluntary_ctxt_switches:").unwrap_or(0))
}

/// The threads of another process, `pid`, now.
pub fn process_threads(pid: u32) -> Option<usize> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].split_whitespace().nth(17)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_process_is_read_from_proc() {
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let pid = std::process::id();
        let usage = process_usage(pid).expect("readable");
        assert!(usage.cpu_s >= 0.0 && usage.voluntary + usage.involuntary > 0, "{usage:?}");
        assert!(process_threads(pid).expect("readable") >= 1);
    }

    #[test]
    fn sees_a_new_thread() {
        // Other tests start and end threads meanwhile: look for a jump much larger than theirs.
        let before = thread_count().expect("/proc is readable");
        let (sender, receiver) = std::sync::mpsc::channel::<()>();
        let receiver = Arc::new(std::sync::Mutex::new(receiver));
        let threads: Vec<_> = (0..64)
            .map(|_| {
                let receiver = Arc::clone(&receiver);
                std::thread::spawn(move || receiver.lock().map(|r| r.recv().ok()).ok())
            })
            .collect();
        let during = thread_count().unwrap();
        drop(sender);
        threads.into_iter().for_each(|thread| drop(thread.join()));
        assert!(during >= before + 32, "{before} -> {during}");
    }

    #[test]
    fn memory_sampler_sees_a_big_allocation() {
        // The process's resident size is shared with the tests running beside this one,
        // which allocate and free meanwhile: an attempt may see less than the block grow
        // it, so the check looks at a few and needs one clean one.
        let mut seen = Vec::new();
        for _ in 0..5 {
            let sampler = MemorySampler::start().expect("/proc/self/status is readable");
            let before = resident_bytes().unwrap();
            let block = vec![1u8; 64 << 20]; // written, so resident
            std::hint::black_box(&block);
            let during = resident_bytes().unwrap();
            drop(block);
            let peak = sampler.finish();
            // Most of the 64 MiB, not all of it; the kernel's per-thread RSS counters are
            // synced in batches: a little slack for the peak.
            if during >= before + (48 << 20) && peak + (4 << 20) >= during {
                return;
            }
            seen.push((before, during, peak));
        }
        panic!("no attempt saw the 64 MiB block: (before, during, peak) {seen:?}");
    }

    #[test]
    fn a_strategys_threads_are_those_started_after_the_note() {
        let threads = StrategyThreads::before_start();
        let Some(before) = threads.cpu() else {
            return; // no per-thread scheduler statistics here
        };
        let (sender, receiver) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            burn_thread_cpu(0.02);
            let _ = receiver.recv();
        });
        // Wait for the work to be done, reading the thread's time as it goes.
        let mut used = 0;
        for _ in 0..500 {
            used = threads.cpu().expect("readable").since(&before);
            if used >= 15_000_000 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        drop(sender);
        worker.join().unwrap();
        // Other tests start threads meanwhile, which count too: only a lower bound holds.
        assert!(used >= 15_000_000, "{used} ns");
        assert!(!threads.started().unwrap().contains(&current_thread_id()));
    }

    /// Burns `cpu_s` of the calling thread's own CPU, however busy the machine is (a spin
    /// for a wall-clock time gets a share of it only).
    fn burn_thread_cpu(cpu_s: f64) {
        let start = Usage::thread_now();
        while Usage::thread_now().since(&start).cpu_s < cpu_s {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn cpu_time_grows_with_work() {
        // A fixed amount of work, not a spin for a wall time, which a busy machine would
        // cut short of the CPU.
        let before = Usage::now();
        burn_thread_cpu(0.02);
        let used = Usage::now().since(&before);
        assert!(used.cpu_s > 0.015, "{used:?}");
    }
}
