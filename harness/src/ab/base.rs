//! The base binary of `keyed-bench ab`: BASE checked, then built as this binary was built.
//!
//! 1. [`locate`] checks, writing nothing: the working directory is in a git repository,
//!    BASE names a commit of it, and `rustc -V` there is the rustc this binary was built
//!    with ([`BuildInfo`], recorded by the build script).
//! 2. [`build`] reuses `CACHE/bin/keyed-bench-<commit>-<profile>` if an earlier call built
//!    it with this rustc. Otherwise it checks out the commit in `CACHE/ab-<commit>` (a
//!    detached worktree, reused while it stays clean at that commit), asks `rustc -V` again
//!    there (BASE may pin another toolchain), and runs `cargo build --locked --bin
//!    keyed-bench` with this binary's profile and features into `CACHE/target`, one build
//!    folder for every BASE so that another BASE rebuilds only what differs. The binary is
//!    copied out of the build folder, which the next BASE overwrites, beside a stamp of the
//!    rustc that built it.
//!
//! `CACHE` is `target/ab` under the repository's root unless `--cache` says otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::AbError;

/// How the running binary was built, as its build script recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildInfo {
    /// `rustc -V` of the compiler that built it (`unknown` where it could not be asked).
    pub rustc: String,
    /// Cargo's `PROFILE`: `release` for the release profile and those that inherit from
    /// it, `debug` for the others.
    pub profile: String,
    /// The cargo features it was built with, comma-separated in `--features`.
    pub features: Vec<String>,
}

impl BuildInfo {
    /// Whether it is a release build (built with `--release`).
    pub fn is_release(&self) -> bool {
        self.profile == "release"
    }

    /// The folder of the build folder that holds the binary: `release` or `debug`.
    fn profile_dir(&self) -> &'static str {
        if self.is_release() {
            "release"
        } else {
            "debug"
        }
    }
}

/// The base side's binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Base {
    /// BASE as given.
    pub given: String,
    /// The commit BASE names; `None` for a prebuilt binary BASE only names.
    pub commit: Option<String>,
    /// The binary.
    pub binary: PathBuf,
    /// The folder its runs start in: its worktree, so that its results record its own
    /// commit; `None` for the working directory.
    pub dir: Option<PathBuf>,
    /// Whether the binary was built by this call (not reused from the cache, not prebuilt).
    pub built: bool,
}

impl Base {
    /// A prebuilt binary, named `given`.
    pub fn prebuilt(given: &str, binary: &Path) -> Result<Self, AbError> {
        let refuse = |why: String| AbError::BaseBinary { path: binary.display().to_string(), why };
        match std::fs::metadata(binary) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => return Err(refuse("is not a file".into())),
            Err(error) => return Err(refuse(error.to_string())),
        }
        let binary = std::path::absolute(binary).map_err(|error| refuse(error.to_string()))?;
        Ok(Self { given: given.to_owned(), commit: None, binary, dir: None, built: false })
    }
}

/// What [`locate`] found: where BASE is built and kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// BASE as given.
    pub given: String,
    /// Its full commit hash.
    pub commit: String,
    /// The repository's root (of the working directory).
    pub root: PathBuf,
    /// The cache folder.
    pub cache: PathBuf,
}

impl Located {
    /// The commit's worktree.
    fn worktree(&self) -> PathBuf {
        self.cache.join(format!("ab-{}", self.commit))
    }

    /// The build folder every BASE shares.
    fn target(&self) -> PathBuf {
        self.cache.join("target")
    }

    /// The kept binary of the commit in `info`'s profile.
    fn binary(&self, info: &BuildInfo) -> PathBuf {
        self.cache.join("bin").join(format!("keyed-bench-{}-{}", self.commit, info.profile_dir()))
    }
}

/// The first line of `program args` run in `dir`, or what went wrong (its standard error's
/// first line, or why it did not start).
fn first_line(dir: &Path, program: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run {program}: {error}"))?;
    let first = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes).lines().next().unwrap_or("").trim().to_owned()
    };
    if output.status.success() {
        Ok(first(&output.stdout))
    } else {
        let said = first(&output.stderr);
        Err(if said.is_empty() { format!("{program} {}", output.status) } else { said })
    }
}

/// `rustc -V` in `dir` (where a toolchain file may choose another compiler).
fn rustc_in(dir: &Path) -> String {
    first_line(dir, "rustc", &["-V"]).unwrap_or_else(|why| format!("no rustc ({why})"))
}

/// Checks BASE without writing anything: the working directory `dir` is in a git
/// repository, BASE names a commit, and the rustc there is the one of `info`.
pub fn locate(
    given: &str,
    dir: &Path,
    cache: Option<&Path>,
    info: &BuildInfo,
) -> Result<Located, AbError> {
    let root = first_line(dir, "git", &["rev-parse", "--show-toplevel"])
        .map_err(|why| AbError::NotARepository { base: given.to_owned(), why })?;
    let root = PathBuf::from(root);
    let spec = format!("{given}^{{commit}}");
    let commit =
        first_line(&root, "git", &["rev-parse", "--verify", "--quiet", "--end-of-options", &spec])
            .map_err(|why| AbError::NotACommit { base: given.to_owned(), why })?;
    let here = rustc_in(&root);
    if here != info.rustc {
        let place = format!("the repository {}", root.display());
        return Err(AbError::RustcDiffers { built: info.rustc.clone(), here, place });
    }
    let cache = cache.map_or_else(|| root.join("target").join("ab"), Path::to_path_buf);
    Ok(Located { given: given.to_owned(), commit, root, cache })
}

/// The base binary of `located`, built with `info`'s profile and features unless an
/// earlier call built it with the same rustc; `say` tells what is done.
pub fn build(
    located: &Located,
    info: &BuildInfo,
    say: &mut dyn FnMut(&str),
) -> Result<Base, AbError> {
    let binary = located.binary(info);
    let stamp = binary.with_extension("rustc");
    let short = &located.commit[..located.commit.len().min(12)];
    let worktree = located.worktree();
    let base = |built| Base {
        given: located.given.clone(),
        commit: Some(located.commit.clone()),
        binary: binary.clone(),
        dir: Some(worktree.clone()),
        built,
    };
    if binary.is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == info.rustc) {
        say(&format!("base {} ({short}): built before, {}", located.given, binary.display()));
        return Ok(base(false));
    }
    check_out(located, &worktree, say)?;
    let here = rustc_in(&worktree);
    if here != info.rustc {
        let place = format!("BASE's worktree {}", worktree.display());
        return Err(AbError::RustcDiffers { built: info.rustc.clone(), here, place });
    }
    say(&format!("base {} ({short}): building in {}", located.given, worktree.display()));
    cargo_build(located, &worktree, info)?;
    keep_binary(&located.target().join(info.profile_dir()).join("keyed-bench"), &binary)?;
    std::fs::write(&stamp, format!("{}\n", info.rustc))
        .map_err(|error| AbError::io("write", &stamp, error))?;
    Ok(base(true))
}

/// Checks out the commit in `worktree`, or checks that the one there is clean at it.
fn check_out(located: &Located, worktree: &Path, say: &mut dyn FnMut(&str)) -> Result<(), AbError> {
    let path = worktree.display().to_string();
    let refuse = |why: String| AbError::Worktree { path: path.clone(), why };
    if worktree.exists() {
        let head = first_line(worktree, "git", &["rev-parse", "HEAD"])
            .map_err(|why| refuse(format!("is not a git worktree ({why})")))?;
        if head != located.commit {
            return Err(refuse(format!("is at {head}, not {}", located.commit)));
        }
        let changes = Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=no"])
            .current_dir(worktree)
            .output()
            .map_err(|error| refuse(format!("cannot be checked: {error}")))?;
        if !changes.stdout.is_empty() {
            return Err(refuse("has local changes".into()));
        }
        return Ok(());
    }
    say(&format!("checking out {} in {path}", located.commit));
    let worktree_arg = worktree.to_string_lossy();
    let args = ["worktree", "add", "--force", "--detach", &worktree_arg, &located.commit];
    first_line(&located.root, "git", &args)
        .map(drop)
        .map_err(|why| refuse(format!("could not be made: {why}")))
}

/// `cargo build --locked [--release] --bin keyed-bench [--features ...]` in `worktree`
/// into the shared build folder; cargo's own output goes to standard error.
fn cargo_build(located: &Located, worktree: &Path, info: &BuildInfo) -> Result<(), AbError> {
    let mut args = vec!["build", "--locked", "--bin", "keyed-bench"];
    if info.is_release() {
        args.push("--release");
    }
    let features = info.features.join(",");
    if !features.is_empty() {
        args.extend(["--features", &features]);
    }
    let target = located.target();
    let command = format!("CARGO_TARGET_DIR={} cargo {}", target.display(), args.join(" "));
    let status = Command::new("cargo")
        .args(&args)
        .current_dir(worktree)
        .env("CARGO_TARGET_DIR", &target)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|error| AbError::io("run cargo in", worktree, error))?;
    if status.success() {
        return Ok(());
    }
    Err(AbError::Build {
        base: located.given.clone(),
        commit: located.commit.clone(),
        command,
        status: status.to_string(),
    })
}

/// Copies the built binary to `kept` through a temporary file and a rename: the build
/// folder's copy is replaced by the next BASE's, and a run may be using the kept one.
fn keep_binary(built: &Path, kept: &Path) -> Result<(), AbError> {
    let folder = kept.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder).map_err(|error| AbError::io("create", folder, error))?;
    let partial = kept.with_extension("partial");
    std::fs::copy(built, &partial).map_err(|error| AbError::io("copy", built, error))?;
    std::fs::rename(&partial, kept).map_err(|error| AbError::io("rename", &partial, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> BuildInfo {
        BuildInfo {
            rustc: crate::measure::system::rustc_version(),
            profile: "release".into(),
            features: Vec::new(),
        }
    }

    #[test]
    fn outside_a_repository_and_a_name_of_no_commit_are_refused() {
        let outside = std::env::temp_dir();
        let error = locate("HEAD", &outside, None, &info()).unwrap_err();
        // /tmp may lie inside some repository on an odd machine; then it must still
        // refuse a name of nothing.
        if let AbError::NotARepository { base, .. } = &error {
            assert_eq!(base, "HEAD");
            assert!(error.is_bad_input());
            assert!(error.to_string().contains("not in a git repository"), "{error}");
        }
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let error = locate("no-such-commit-anywhere", here, None, &info()).unwrap_err();
        assert!(matches!(error, AbError::NotACommit { .. }), "{error}");
        assert!(error.to_string().contains("BASE no-such-commit-anywhere is not a commit"));
        assert!(error.is_bad_input());
    }

    #[test]
    fn a_commit_is_found_and_its_cache_placed_under_the_root() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let located = locate("HEAD", here, None, &info()).expect("HEAD is a commit here");
        assert_eq!(located.commit.len(), 40, "{located:?}");
        assert!(here.starts_with(&located.root), "{located:?}");
        assert_eq!(located.cache, located.root.join("target/ab"));
        let worktree = located.worktree();
        assert!(worktree.ends_with(format!("ab-{}", located.commit)));
        let binary = located.binary(&info());
        assert!(binary.ends_with(format!("bin/keyed-bench-{}-release", located.commit)));
        let cache = Path::new("/elsewhere");
        assert_eq!(locate("HEAD", here, Some(cache), &info()).unwrap().cache, cache);
    }

    #[test]
    fn another_rustc_is_refused_before_anything_is_written() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let other = BuildInfo { rustc: "rustc 0.1.0 (ancient 2012-01-20)".into(), ..info() };
        let error = locate("HEAD", here, None, &other).unwrap_err();
        assert!(matches!(error, AbError::RustcDiffers { .. }), "{error}");
        let text = error.to_string();
        assert!(text.contains("built with rustc 0.1.0") && text.contains("one compiler"), "{text}");
        assert!(error.is_bad_input());
    }

    #[test]
    fn a_prebuilt_binary_must_be_a_file() {
        let error = Base::prebuilt("main", Path::new("/no/such/binary")).unwrap_err();
        assert!(error.to_string().starts_with("--base-binary /no/such/binary: "), "{error}");
        assert!(error.is_bad_input());
        let error = Base::prebuilt("main", &std::env::temp_dir()).unwrap_err();
        assert!(error.to_string().ends_with("is not a file"), "{error}");
        let this = std::env::current_exe().unwrap();
        let base = Base::prebuilt("main", &this).unwrap();
        assert_eq!((base.commit, base.dir, base.built), (None, None, false));
    }
}
