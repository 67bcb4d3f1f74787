//! Records how the binary is built, for `keyed-bench ab`, which builds its base the same
//! way: the compiler's `rustc -V`, cargo's profile (`release` or `debug`) and the enabled
//! features, as the compile-time variables `KEYED_BENCH_RUSTC`, `KEYED_BENCH_PROFILE` and
//! `KEYED_BENCH_FEATURES` (comma-separated). Cargo runs this again whenever any of them
//! changes: a new compiler or other features rebuild the package, and each profile has a
//! build folder of its own.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = Command::new(&rustc)
        .arg("-V")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map_or_else(|| "unknown".to_owned(), |text| text.trim().to_owned());
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".to_owned());
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(name, _)| name.strip_prefix("CARGO_FEATURE_").map(str::to_owned))
        .map(|name| name.to_lowercase().replace('_', "-"))
        .collect();
    features.sort();
    println!("cargo:rustc-env=KEYED_BENCH_RUSTC={version}");
    println!("cargo:rustc-env=KEYED_BENCH_PROFILE={profile}");
    println!("cargo:rustc-env=KEYED_BENCH_FEATURES={}", features.join(","));
    println!("cargo:rerun-if-changed=build.rs");
}
