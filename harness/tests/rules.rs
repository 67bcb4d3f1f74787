//! The rules that keep each fact in one place and each file within what one person holds in
//! mind, as `layers.rs` keeps the layering. Each rule reads the code as text, names every
//! place that breaks it, and has a test that plants a breach and sees the rule fire.
//!
//! - `report/` finds results by typed keys, never by comparing a scenario's, a parameter's or
//!   a strategy's text (`==`, `!=`, `starts_with`, `ends_with`, `contains`, `matches!`), nor
//!   by taking a parameter apart (`split`, `split_once`): `workload/param.rs`, which writes
//!   parameters, reads their parts.
//! - No file under `harness/src` has more than [`MAX_LINES`] lines before its tests.
//! - No function is let off clippy's argument count (`too_many_arguments`): a long argument
//!   list becomes a context struct.
//! - A chart sets no pixel size: its canvas is a shape of `report/plot/layout.rs`, and its
//!   size follows from its layout and categories.
//! - Adding a scenario, a chart or a run setting is one entry: [`ADDING`] lists, for each,
//!   the entry that declares it and the places beside it that the compiler or a test sends
//!   you to; the tests below hold every scenario, chart and setting there is to that list,
//!   and the list to the repository (every file it names exists, every name it writes in
//!   backticks is in the code).

use std::path::{Path, PathBuf};

/// The most lines a file under `harness/src` may have before its `#[cfg(test)]` module.
const MAX_LINES: usize = 600;

/// The fields, variables and methods whose text names a cell: a scenario, a parameter, a
/// strategy.
const CELL_NAMES: &[&str] = &["scenario", "param", "parameter", "strategy", "design", "own_param"];

/// The calls that compare a text with another, or take it apart (a parameter's parts are
/// read where parameters are written, `workload/param.rs`).
const TEXT_CALLS: &[&str] = &[
    ".split(",
    ".rsplit(",
    ".split_once(",
    ".split_whitespace(",
    ".starts_with(",
    ".ends_with(",
    ".contains(",
    ".strip_prefix(",
    ".strip_suffix(",
    ".eq(",
    ".ne(",
    ".eq_ignore_ascii_case(",
];

/// What adding a scenario, a chart or a run setting touches: the one entry that declares it,
/// then the places beside it that a test or the compiler names when they are forgotten
/// (`docs/contributing.md` tells each step).
const ADDING: &[(&str, &[&str])] = &[
    (
        "scenario",
        &[
            "its line in `scenarios!` and its `ScenarioSpec` in its family file, both under \
             harness/src/workload/scenario/ (the only code that writes its id), whose `charts` \
             (and a pipeline's `PipelineSpec::charts`) put it in the charts that show it and \
             whose `summary` (a `SummaryExtra`) says what the summary adds after its tables: \
             nothing, or a paragraph or table that report/summary.rs's exhaustive match on it \
             renders (its words in harness/templates/prose/)",
            "its sizes, rows of `sizes!` (workload/scenario/sizes.rs)",
            "its row in docs/workloads.md's scenario table (tests/docs.rs)",
        ],
    ),
    (
        "chart",
        &[
            "its module under harness/src/report/plot/ and its row in `charts!` \
             (report/plot/mod.rs), its canvas one of the shapes of report/plot/layout.rs \
             (its size follows from its layout and categories); a chart of chosen scenarios, a field of `Charts` \
             (workload/scenario/mod.rs, or `PipelineChart` in its pipeline.rs) that their \
             specs set",
            "its note, a macro in harness/templates/prose/charts.jinja (report/prose.rs's \
             tests render every piece and find every one the code names)",
            "its line in docs/workloads.md's chart list",
        ],
    ),
    (
        "run setting",
        &[
            "its row in `run_settings!` (harness/src/limits/settings.rs): its flag's name and \
             help, its range, meta field, the resume, compare and agree checks, what a run \
             records of it and how a run measured again reads it back, its sweep label and its \
             part of the settings line",
            "its clap field in `RunArgs` (cli/run.rs), which takes its name and help from the \
             row's `FLAGS` and gives its value parser, default and heading, its `RunConfig` \
             field (config.rs) and its `Meta` field (results/meta.rs), which the row's `record` \
             and `read` fill and read: tests in cli/ hold every flag to a row, its help to the \
             row's, and every setting a run records to the value it reads back",
            "its line in docs/cli.md",
        ],
    ),
];

/// The chart modules under `report/plot/` that draw no chart of their own: the figure kinds,
/// the panels every chart shares and the layout that sizes them.
const FIGURE_KINDS: &[&str] = &["bars", "layout", "lines", "panel", "timeline"];

fn sources(path: &Path, found: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("a source folder") {
            sources(&entry.expect("an entry").path(), found);
        }
    } else if path.extension().is_some_and(|extension| extension == "rs") {
        found.push(path.to_path_buf());
    }
}

fn harness_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `path` relative to `root`, with forward slashes.
fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

/// The code of a file before its tests: a file that is itself a test module
/// (`tests.rs`, or under a `tests/` folder) has none.
fn code_before_tests<'t>(path: &str, text: &'t str) -> &'t str {
    if path.ends_with("/tests.rs") || path == "tests.rs" || path.contains("/tests/") {
        return "";
    }
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

/// How many chars the char literal at the start of `chars` spans (`'"'`, `'\''`, `'\n'`),
/// or 0 where none starts there (a lifetime such as `'a`).
fn char_literal(chars: &[char]) -> usize {
    match chars {
        ['\'', '\\', _, '\'', ..] => 4,
        ['\'', c, '\'', ..] if *c != '\\' => 3,
        _ => 0,
    }
}

/// A line with its comment cut off and every string and char literal's content blanked,
/// so that neither is read as code.
fn code_of_line(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut code = String::with_capacity(line.len());
    let mut at = 0;
    let mut in_string = false;
    while at < chars.len() {
        let c = chars[at];
        at += 1;
        if in_string {
            match c {
                '\\' => at += 1,
                '"' => in_string = false,
                _ => {}
            }
            code.push(if in_string { ' ' } else { '"' });
        } else if char_literal(&chars[at - 1..]) > 0 {
            at += char_literal(&chars[at - 1..]) - 1;
            code.push_str("' '");
        } else if c == '/' && chars.get(at) == Some(&'/') {
            break;
        } else {
            in_string = c == '"';
            code.push(c);
        }
    }
    code
}

/// Whether `c` may be part of an operand: a path, a field chain, calls without arguments,
/// a deref or a borrow.
fn operand_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '(' | ')' | '*' | '&' | ':' | '"')
}

/// Whether an operand names a cell's text: its last segment, calls such as `.as_str()`
/// and derefs aside, is one of [`CELL_NAMES`].
fn names_a_cell(operand: &str) -> bool {
    let mut operand = operand.trim_start_matches(['*', '&', '(']);
    while operand.ends_with(')') && operand.matches(')').count() > operand.matches('(').count() {
        operand = &operand[..operand.len() - 1];
    }
    for call in [".as_str()", ".as_ref()", ".to_string()", ".as_deref()", ".deref()"] {
        operand = operand.trim_end_matches(call);
    }
    let operand = operand.strip_suffix("()").unwrap_or(operand);
    let last = operand.rsplit(['.', ':']).next().unwrap_or(operand);
    CELL_NAMES.contains(&last)
}

/// The operand that ends where `end` does.
fn operand_before(code: &str, end: usize) -> &str {
    let before = code[..end].trim_end();
    let start = before.rfind(|c: char| !operand_char(c)).map_or(0, |at| at + 1);
    &before[start..]
}

/// The operand that starts at `start`.
fn operand_after(code: &str, start: usize) -> &str {
    let after = code[start..].trim_start();
    let end = after.find(|c: char| !operand_char(c)).unwrap_or(after.len());
    &after[..end]
}

/// Whether a line of code compares a cell's text.
fn compares_cell_text(line: &str) -> bool {
    let code = code_of_line(line);
    let by_operator = ["==", "!="].iter().any(|operator| {
        code.match_indices(operator).any(|(at, _)| {
            names_a_cell(operand_before(&code, at))
                || names_a_cell(operand_after(&code, at + operator.len()))
        })
    });
    let by_call = TEXT_CALLS.iter().any(|call| {
        code.match_indices(call).any(|(at, _)| {
            names_a_cell(operand_before(&code, at))
                || names_a_cell(operand_after(&code, at + call.len()))
        })
    });
    let by_match = code.match_indices("matches!(").any(|(at, _)| {
        names_a_cell(operand_after(&code, at + "matches!(".len()).trim_end_matches(','))
    });
    // A `match` on a row's text (`match row.strategy.as_str()`); one on a typed local
    // (`match scenario`, a `ScenarioId`) is no text comparison.
    let by_arms = code.match_indices("match ").any(|(at, _)| {
        let operand = operand_after(&code, at + "match ".len());
        operand.contains('.') && names_a_cell(operand)
    });
    by_operator || by_call || by_match || by_arms
}

/// The statements of `code` that compare a cell's text, each named by the number (from 1)
/// of its first line: a statement runs over lines until one ends in `;`, `{`, `}` or `,`,
/// so that a comparison split over lines is read whole.
fn text_comparisons(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut statement = String::new();
    let mut first = 0;
    for (index, line) in code.lines().enumerate() {
        let line = code_of_line(line);
        if statement.is_empty() {
            first = index + 1;
        }
        statement.push(' ');
        statement.push_str(line.trim());
        if line.trim_end().ends_with([';', '{', '}', ',']) || line.trim().is_empty() {
            if compares_cell_text(&statement) {
                found.push((first, statement.trim().to_owned()));
            }
            statement.clear();
        }
    }
    if compares_cell_text(&statement) {
        found.push((first, statement.trim().to_owned()));
    }
    found
}

/// How many lines `text` has before its tests.
fn lines_before_tests(path: &str, text: &str) -> usize {
    let code = code_before_tests(path, text);
    if code.len() == text.len() {
        text.lines().count()
    } else {
        code.lines().count()
    }
}

#[test]
fn report_compares_no_scenario_parameter_or_strategy_text() {
    let src = harness_src();
    let mut files = Vec::new();
    sources(&src.join("report"), &mut files);
    assert!(files.len() > 20, "report/ has {} files", files.len());
    let mut found = Vec::new();
    for file in files {
        let path = relative(&file, &src);
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, code) in text_comparisons(code_before_tests(&path, &text)) {
            found.push(format!("{path}:{line}: {code}"));
        }
    }
    assert!(
        found.is_empty(),
        "report/ compares a scenario's, a parameter's or a strategy's text; look the cell up \
         by its typed key instead: {found:#?}"
    );
}

#[test]
fn no_file_is_longer_than_the_limit_before_its_tests() {
    let src = harness_src();
    let mut files = Vec::new();
    sources(&src, &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let path = relative(file, &src);
            let lines = lines_before_tests(&path, &std::fs::read_to_string(file).unwrap());
            (lines > MAX_LINES).then(|| format!("{path}: {lines} lines"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files with more than {MAX_LINES} lines before their tests (split them by job): \
         {long:#?}"
    );
}

#[test]
fn no_function_is_let_off_the_argument_count() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let mut files = Vec::new();
    for folder in
        ["harness/src", "harness/tests", "harness/benches", "strategies", "src", "benches", "tests"]
    {
        sources(&root.join(folder), &mut files);
    }
    let allowance = ["clippy::", "too_many_arguments"].concat();
    let let_off: Vec<String> = files
        .iter()
        .filter(|file| std::fs::read_to_string(file).unwrap().contains(&allowance))
        .map(|file| relative(file, &root))
        .collect();
    assert!(
        let_off.is_empty(),
        "functions let off `{allowance}` (pass a context struct instead): {let_off:#?}"
    );
}

#[test]
fn a_planted_text_comparison_is_found() {
    let planted = [
        r#"let rows = runs.iter().filter(|run| run.scenario == "zipf");"#,
        "if row.param != param {",
        "let mine = rows.iter().find(|row| row.strategy == *strategy);",
        "if scenario.as_str() == id {",
        r#"if "keys=20" == row.param {"#,
        "if (run.scenario, run.param.as_str()) == key {",
        "let same = row.strategy.eq(&other);",
        "match row.strategy.as_str() {",
        "let found = cells.iter().find(|&&(d, p)| (d, p) == (design, policy));",
        r#"let sweep = row.param.starts_with("keys=");"#,
        r#"if run.scenario.contains("pipeline") {"#,
        r#"let hot = matches!(row.strategy.as_str(), "hybrid" | "keyed-mailbox");"#,
        "let parts = row.param.split(' ');",
        "let keys = row.own_param().split_once('=');",
    ];
    for line in planted {
        assert!(compares_cell_text(line), "not found: {line}");
    }
}

#[test]
fn what_is_not_a_text_comparison_is_not_taken_for_one() {
    let fine = [
        "let cell = view.cell(key.scenario, &key.param)?;",
        "if scale == Scale::Linear {",
        r#"let label = format!("{} == {}", row.scenario, row.param); // row.param == param"#,
        "let is_item = matches!(block, Block::Item(_));",
        "let quote = c == '\"' || row.strategy.is_empty();",
        "let scenarios = spec.scenario_count == 3;",
    ];
    for line in fine {
        assert!(!compares_cell_text(line), "taken for a comparison: {line}");
    }
}

#[test]
fn a_comparison_split_over_lines_is_found_where_it_starts() {
    let code = "let key = |cell: &&Cell| {\n    (cell.strategy.as_str(), cell.param.as_str())\n        == \
                (strategy, param)\n};\nlet quote = '\"';\n";
    let found = text_comparisons(code);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, 2, "{found:?}");
}

#[test]
fn a_planted_long_file_is_found_and_its_tests_are_not_counted() {
    let long = "fn f() {}\n".repeat(MAX_LINES + 1);
    assert_eq!(lines_before_tests("report/long.rs", &long), MAX_LINES + 1);
    let tested = format!("{}#[cfg(test)]\nmod tests {{\n{}}}\n", "fn f() {}\n".repeat(10), long);
    assert_eq!(lines_before_tests("report/tested.rs", &tested), 10);
    assert_eq!(lines_before_tests("report/plot/tests.rs", &long), 0);
}

/// The string literals of `code`, in order.
fn literals(code: &str) -> Vec<&str> {
    code.split('"').skip(1).step_by(2).collect()
}

#[test]
fn a_scenario_id_is_written_only_where_it_is_declared() {
    assert!(ADDING.iter().any(|(what, _)| *what == "scenario"));
    let src = harness_src();
    let mut files = Vec::new();
    sources(&src, &mut files);
    let ids: Vec<&str> = harness::workload::ScenarioId::ALL.iter().map(|id| id.as_str()).collect();
    let mut elsewhere = Vec::new();
    for file in &files {
        let path = relative(file, &src);
        // An external driver's arrivals kind `saga` is named like the scenario that needs it;
        // a chart takes its scenarios' ids from their specs.
        let declares = path.starts_with("workload/scenario/")
            || path == "measure/external/protocol.rs"
            || path == "measure/external/mod.rs";
        if declares {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for literal in literals(code_before_tests(&path, &text)) {
            if ids.contains(&literal) {
                elsewhere.push(format!("{path}: \"{literal}\""));
            }
        }
    }
    assert!(
        elsewhere.is_empty(),
        "scenario ids written outside their declaration (ask the `ScenarioSpec`): {elsewhere:#?}"
    );
}

/// The modules that `text` (a `mod.rs`) declares with a `mod name;` line.
fn declared_modules(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .filter_map(|line| {
            let mut words = line.trim().strip_suffix(';')?.split_whitespace().rev();
            let name = words.next()?;
            (words.next() == Some("mod")).then_some(name)
        })
        .collect()
}

/// The rows of the `charts!` list in `text` (report/plot/mod.rs), in order.
fn chart_rows(text: &str) -> Vec<&str> {
    let rows = text.split("\ncharts! {").nth(1).expect("the `charts!` list in report/plot/mod.rs");
    rows[..rows.find('}').expect("the end of the `charts!` list")]
        .lines()
        .map(|row| row.trim())
        .filter(|row| !row.is_empty() && !row.starts_with("//"))
        .map(|row| row.trim_end_matches(';').trim())
        .collect()
}

/// What breaks "every chart module is declared and is one row of `charts!`", given the chart
/// modules' names (the files and folders under report/plot/, figure kinds aside) and the
/// text of report/plot/mod.rs: a module with no `mod` line, a module listed other than once,
/// a row that names no chart module.
fn chart_list_breaches(modules: &[String], list: &str) -> Vec<String> {
    let declared = declared_modules(list);
    let rows = chart_rows(list);
    let mut breaches = Vec::new();
    for module in modules {
        if !declared.contains(&module.as_str()) {
            breaches.push(format!("`{module}` has no `mod {module};` line"));
        }
        let listed = rows.iter().filter(|row| **row == module.as_str()).count();
        if listed != 1 {
            breaches.push(format!("`{module}` is listed {listed} times in `charts!`"));
        }
    }
    for row in &rows {
        if !modules.iter().any(|module| module == row) {
            breaches.push(format!("`charts!` lists `{row}`, which is no chart module"));
        }
    }
    breaches
}

#[test]
fn every_chart_module_is_one_row_of_the_chart_list() {
    assert!(ADDING.iter().any(|(what, _)| *what == "chart"));
    let plot = harness_src().join("report/plot");
    let list = std::fs::read_to_string(plot.join("mod.rs")).unwrap();
    let mut modules: Vec<String> = std::fs::read_dir(&plot)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| {
            let stem = path.file_stem()?.to_str()?.to_owned();
            let module = path.is_dir() || path.extension().is_some_and(|e| e == "rs");
            (module && stem != "mod" && !FIGURE_KINDS.contains(&stem.as_str())).then_some(stem)
        })
        .collect();
    modules.sort();
    assert!(modules.len() > 10, "the scan found almost no chart: is it reading report/plot/?");
    let breaches = chart_list_breaches(&modules, &list);
    assert!(
        breaches.is_empty(),
        "report/plot/'s chart modules, their `mod` lines and the rows of `charts!`: {breaches:#?}"
    );
}

#[test]
fn the_chart_list_rule_finds_a_planted_breach() {
    let modules = ["price".to_owned(), "threads".to_owned()];
    let good = "mod bars;\nmod price;\npub(super) mod threads;\n\ncharts! {\n    threads;\n    \
                price;\n}\n";
    assert!(chart_list_breaches(&modules, good).is_empty());
    let undeclared = good.replace("mod price;\n", "// mod price;\n");
    assert_eq!(chart_list_breaches(&modules, &undeclared), ["`price` has no `mod price;` line"]);
    let unlisted = good.replace("    price;\n", "");
    assert_eq!(
        chart_list_breaches(&modules, &unlisted),
        ["`price` is listed 0 times in `charts!`"]
    );
    let twice = good.replace("    price;\n", "    price;\n    price;\n");
    assert_eq!(chart_list_breaches(&modules, &twice), ["`price` is listed 2 times in `charts!`"]);
    let stray = good.replace("    price;\n", "    price;\n    bars;\n");
    assert_eq!(
        chart_list_breaches(&modules, &stray),
        ["`charts!` lists `bars`, which is no chart module"]
    );
}

/// The pixel sizes `code` sets by hand: a pair of numbers of 100 or more in parentheses
/// (`(1100, 620)`), or a canvas built in place (`Canvas::new`, `size: (`).
fn hand_set_sizes(code: &str) -> Vec<String> {
    let mut found: Vec<String> = ["Canvas::new(", "Canvas {", "size: ("]
        .iter()
        .filter(|built| code.contains(*built))
        .map(|built| (*built).to_owned())
        .collect();
    for (at, _) in code.match_indices('(') {
        let rest = &code[at + 1..];
        let Some((pair, _)) = rest.split_once(')') else { continue };
        let Some((width, height)) = pair.split_once(',') else { continue };
        let pixels = |number: &str| number.trim().parse::<u32>().is_ok_and(|n| n >= 100);
        if pixels(width) && pixels(height) {
            found.push(format!("({pair})"));
        }
    }
    found
}

#[test]
fn a_chart_takes_its_size_from_the_layout() {
    assert!(ADDING.iter().any(|(what, _)| *what == "chart"));
    let src = harness_src();
    let mut files = Vec::new();
    sources(&src.join("report/plot"), &mut files);
    let mut by_hand = Vec::new();
    for file in &files {
        let path = relative(file, &src);
        if path == "report/plot/layout.rs" {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for size in hand_set_sizes(code_before_tests(&path, &text)) {
            by_hand.push(format!("{path}: {size}"));
        }
    }
    assert!(files.len() > 10, "the scan found almost no chart: is it reading report/plot/?");
    assert!(
        by_hand.is_empty(),
        "sizes set beside a chart (use a shape of layout.rs): {by_hand:#?}"
    );
}

#[test]
fn the_size_rule_finds_a_planted_size() {
    assert_eq!(hand_set_sizes("Bars::single(title, (1100, 620), legend, panel)"), ["(1100, 620)"]);
    assert_eq!(hand_set_sizes("Plot { size: (w, h) }"), ["size: ("]);
    assert!(hand_set_sizes("Frame::new(14, (50, 420)); grid(3, 2); f(a, b)").is_empty());
}

#[test]
fn every_run_setting_is_one_row_of_the_table() {
    assert!(ADDING.iter().any(|(what, _)| *what == "run setting"));
    let table = std::fs::read_to_string(harness_src().join("limits/settings.rs")).unwrap();
    let code: String = code_before_tests("limits/settings.rs", &table)
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let flags: Vec<&str> = code
        .match_indices("flag \"")
        .map(|(at, _)| {
            let rest = &code[at + "flag \"".len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert!(flags.len() > 20, "the table's flags: {flags:?}");
    for flag in &flags {
        assert_eq!(flags.iter().filter(|f| *f == flag).count(), 1, "--{flag} has two rows");
    }
    let descriptors: Vec<&str> =
        harness::limits::settings::RUN_SETTINGS.iter().map(|setting| setting.flag).collect();
    assert_eq!(descriptors, flags, "RUN_SETTINGS holds every row, in the table's order");
    // Each setting's clap field takes its name and help from its row, and has none of its own.
    let cli = ["cli/run.rs", "cli/kafka.rs"]
        .map(|file| std::fs::read_to_string(harness_src().join(file)).unwrap())
        .join("\n");
    for flag in &flags {
        let row = flag.replace('-', "_");
        for part in ["name", "help", "long_help"] {
            let taken = format!("FLAGS.{row}.{part}");
            assert_eq!(cli.matches(&taken).count(), 1, "--{flag}: `{taken}` once in cli/");
        }
        let field = format!("pub {row}: ");
        let at = cli.find(&field).unwrap_or_else(|| panic!("--{flag}: no field `{row}`"));
        let above = cli[..at].trim_end().lines().rev();
        let attributes = above.take_while(|line| {
            let line = line.trim();
            !line.starts_with("pub ") && !line.ends_with('{')
        });
        let documented = attributes.map(str::trim_start).any(|line| line.starts_with("///"));
        assert!(!documented, "--{flag}: its help is its row's, not a doc comment's");
    }
}

/// The files and folders a text of [`ADDING`] names (`report/plot/mod.rs`, `cli/`, `docs/cli.md`),
/// and the names it writes in backticks (`ScenarioSpec`, `charts!`).
fn named_in(text: &str) -> (Vec<&str>, Vec<&str>) {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    let paths = text
        .split(|c: char| !path_char(c))
        .map(|word| word.trim_end_matches('.'))
        .filter(|word| {
            word.contains('/') || [".rs", ".md", ".jinja"].iter().any(|end| word.ends_with(end))
        })
        .collect();
    let names = text.split('`').skip(1).step_by(2).collect();
    (paths, names)
}

/// Whether `path`, as [`ADDING`] writes it, is in the repository: from its root or from
/// `harness/src`, or, a bare file name, anywhere under `harness/src`.
fn path_exists(path: &str) -> bool {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if root.join(path).exists() || harness_src().join(path).exists() {
        return true;
    }
    let mut files = Vec::new();
    sources(&harness_src(), &mut files);
    !path.contains('/')
        && files.iter().any(|file| file.file_name().is_some_and(|name| name == path))
}

/// Whether `name`, as [`ADDING`] writes it in backticks, is in `code`: a macro (`charts!`)
/// defined there, or a word there (the last part of a path, `PipelineSpec::charts`).
fn in_code(name: &str, code: &str) -> bool {
    let word = name.trim_end_matches('!').rsplit("::").next().unwrap_or(name);
    if name.ends_with('!') {
        return code.contains(&format!("macro_rules! {word} "));
    }
    code.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').any(|w| w == word)
}

#[test]
fn what_adding_names_is_in_the_code() {
    let mut files = Vec::new();
    sources(&harness_src(), &mut files);
    let code: String = files.iter().map(|file| std::fs::read_to_string(file).unwrap()).collect();
    let mut stale = Vec::new();
    for (what, places) in ADDING {
        for place in *places {
            let (paths, names) = named_in(place);
            assert!(!paths.is_empty(), "adding a {what}: a place that names no file: {place}");
            stale.extend(paths.into_iter().filter(|path| !path_exists(path)));
            stale.extend(names.into_iter().filter(|name| !in_code(name, &code)));
        }
    }
    assert!(stale.is_empty(), "files and names ADDING gives that the repository lacks: {stale:?}");
}

#[test]
fn a_stale_name_in_adding_is_found() {
    let (paths, names) = named_in("its row in `gone_macro!` (report/gone.rs), then docs/cli.md");
    assert_eq!(paths, ["report/gone.rs", "docs/cli.md"]);
    assert_eq!(names, ["gone_macro!"]);
    assert!(
        !in_code("gone_macro!", "macro_rules! charts {")
            && in_code("charts!", "macro_rules! charts {")
    );
    assert!(in_code("Spec::charts", "a charts field") && !in_code("chart", "a charts field"));
    assert!(!path_exists("report/gone.rs") && path_exists("docs/cli.md"));
    assert!(path_exists("config.rs") && path_exists("cli/") && !path_exists("no_such_file.rs"));
}
