//! `harness/src/lib.rs` lists its modules in pipeline order, each using only those listed
//! before it (tests aside): this test reads the list and every module's code and names any
//! `crate::` path that reaches forward, apart from the few that [`ALLOWED`] lists with why.

use std::path::{Path, PathBuf};

/// The files that may use a module listed after theirs: (file under `src/`, the module, why).
const ALLOWED: &[(&str, &str, &str)] = &[(
    "workload/scenario/mod.rs",
    "results",
    "a scenario's spec names its headline, a metric of the registry in `results::metric`",
)];

/// The modules as `lib.rs` lists them, in order.
fn listed(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|line| line.strip_prefix("pub mod ")?.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

fn sources(path: &Path, found: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("a source folder") {
            sources(&entry.expect("an entry").path(), found);
        }
    } else if path.is_file() && path.extension().is_some_and(|extension| extension == "rs") {
        found.push(path.to_path_buf());
    }
}

/// The modules of `names` that `code` (tests cut off) uses through `crate::`.
fn used<'n>(code: &str, names: &'n [String]) -> Vec<&'n str> {
    let code = code.split("#[cfg(test)]").next().unwrap_or(code);
    names
        .iter()
        .filter(|name| {
            code.match_indices(&format!("crate::{name}")).any(|(at, _)| {
                let after = &code[at + "crate::".len() + name.len()..];
                !after.starts_with(|c: char| c.is_alphanumeric() || c == '_')
            })
        })
        .map(String::as_str)
        .collect()
}

#[test]
fn every_module_uses_only_those_listed_before_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = listed(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    assert!(modules.len() > 10, "lib.rs lists {modules:?}");
    let mut forward = Vec::new();
    for (index, module) in modules.iter().enumerate() {
        let mut files = Vec::new();
        sources(&src.join(format!("{module}.rs")), &mut files);
        sources(&src.join(module), &mut files);
        assert!(!files.is_empty(), "no source for `{module}`");
        for file in files {
            let code = std::fs::read_to_string(&file).unwrap();
            let relative = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            let allowed = |later: &&str| {
                ALLOWED.iter().any(|(file, module, _)| relative == *file && *later == *module)
            };
            let later = used(&code, &modules[index + 1..]).into_iter().filter(|l| !allowed(l));
            forward.extend(later.map(|later| format!("{} uses `{later}`", file.display())));
        }
    }
    assert!(forward.is_empty(), "modules that use ones listed after them: {forward:#?}");
}

#[test]
fn a_use_is_found_and_a_longer_name_is_not_taken_for_it() {
    let names = ["suite".to_owned(), "report".to_owned()];
    assert_eq!(used("use crate::suite::plan; crate::reporting", &names), ["suite"]);
    assert!(used("#[cfg(test)]\nuse crate::suite;", &names).is_empty());
}
