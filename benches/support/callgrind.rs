//! Callgrind's client requests, issued with valgrind.h's special instruction sequence;
//! outside valgrind the sequence does nothing. Shared by `benches/icount.rs` and
//! `examples/dispatch_variants.rs` (`#[path]`), each using the requests it needs.
#![allow(dead_code)]

/// Callgrind's requests are numbered from `('C' << 24) | ('T' << 16)` (valgrind's
/// `callgrind.h`): dump, zero, toggle, dump-at, start and stop instrumentation.
const BASE: u64 = 0x4354_0000;
const ZERO_STATS: u64 = BASE + 1;
const DUMP_STATS_AT: u64 = BASE + 3;
const START_INSTRUMENTATION: u64 = BASE + 4;
const STOP_INSTRUMENTATION: u64 = BASE + 5;

/// Counting starts here, on every thread.
pub fn start() {
    request([START_INSTRUMENTATION, 0, 0, 0, 0, 0]);
}

/// Counting stops here, on every thread.
pub fn stop() {
    request([STOP_INSTRUMENTATION, 0, 0, 0, 0, 0]);
}

/// Zeroes the counts of every thread.
pub fn zero_stats() {
    request([ZERO_STATS, 0, 0, 0, 0, 0]);
}

/// Dumps the counts of every thread into the next dump file, described by `what`.
pub fn dump_stats(what: &str) {
    let what = std::ffi::CString::new(what).unwrap_or_default();
    request([DUMP_STATS_AT, what.as_ptr() as u64, 0, 0, 0, 0]);
}

#[cfg(target_arch = "x86_64")]
fn request(arguments: [u64; 6]) {
    let mut result: u64 = 0;
    // SAFETY: four rotations of `rdi` by 3 + 13 + 61 + 51 = 128 bits leave it as it was,
    // and `xchg rbx, rbx` changes nothing: natively the block only clobbers the flags (not
    // declared preserved). Under valgrind it is the amd64 client-request marker: valgrind
    // reads the six words at `rax` (`arguments`, alive for the whole block, and the string
    // a dump request points to) and writes its answer to `rdx`, declared as an output.
    unsafe {
        std::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") arguments.as_ptr(),
            inout("rdx") result,
            options(nostack, readonly),
        );
    }
    std::hint::black_box(result);
}

/// Elsewhere the requests do nothing: `scripts/icount.sh` runs on x86_64 only.
#[cfg(not(target_arch = "x86_64"))]
fn request(_: [u64; 6]) {}
