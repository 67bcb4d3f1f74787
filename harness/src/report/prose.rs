//! The reports' prose: paragraphs, notes and each chart's note on how to read it, kept in
//! template files under `harness/templates/prose/` (compiled in with `include_str!`) apart
//! from the code that fills them, so that a writer edits the words in one place.
//!
//! Each file holds the pieces of one area as minijinja macros, each taking the values it
//! interpolates (formatted by the code: a number arrives as the text the report shows).
//! [`render`] (through [`prose!`]) renders one piece by file and name. A piece is one
//! paragraph written on as many lines as it likes: its lines, trimmed, join with one space;
//! a line that is only a tag (`{% ... %}`, `{# ... #}`) joins its neighbours with none, so
//! text that must follow a tag with a space says so inside it. Markdown's inline marks
//! (`` `code` ``, `**strong**`) pass through as written. A piece that is missing or does not
//! render (an argument not given, one it does not take) panics: the tests render each one.

use std::sync::OnceLock;

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Environment, UndefinedBehavior};

use super::table::{Cell, Style};

/// Every prose file: its name (as [`render`] takes it) and its source.
const FILES: &[(&str, &str)] = &[
    ("summary", include_str!("../../templates/prose/summary.jinja")),
    ("standing", include_str!("../../templates/prose/standing.jinja")),
    ("verdict", include_str!("../../templates/prose/verdict.jinja")),
    ("published", include_str!("../../templates/prose/published.jinja")),
    ("interference", include_str!("../../templates/prose/interference.jinja")),
    ("incomplete", include_str!("../../templates/prose/incomplete.jinja")),
    ("charts", include_str!("../../templates/prose/charts.jinja")),
    ("pipeline", include_str!("../../templates/prose/pipeline.jinja")),
    ("price", include_str!("../../templates/prose/price.jinja")),
    ("isolation", include_str!("../../templates/prose/isolation.jinja")),
];

/// Renders the piece `name` of the prose file `file` with `args`, each `(name, value)`.
///
/// # Panics
///
/// Where the file or the piece does not exist or does not render with `args`: the
/// compiled-in prose and its callers disagree, which the tests catch.
pub fn render(file: &str, name: &str, args: &[(&str, Value)]) -> String {
    try_render(file, name, args)
        .unwrap_or_else(|error| panic!("the prose piece {file}/{name} renders: {error:#}"))
}

/// Renders the piece `name` of `file` with `args`, or says why it cannot.
fn try_render(file: &str, name: &str, args: &[(&str, Value)]) -> Result<String, minijinja::Error> {
    let template = environment().get_template(file)?;
    let captured = template.render_captured(())?;
    let kwargs: Kwargs = args.iter().map(|(key, value)| (*key, value.clone())).collect();
    captured.state().call_macro(name, &[Value::from(kwargs)])
}

/// The environment of every prose file, each with its lines joined ([`joined`]); an
/// undefined value is an error, not an empty string.
fn environment() -> &'static Environment<'static> {
    static ENVIRONMENT: OnceLock<Environment<'static>> = OnceLock::new();
    ENVIRONMENT.get_or_init(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        for (name, source) in FILES {
            env.add_template_owned(*name, joined(source)).expect("a prose file parses");
        }
        env
    })
}

/// `source` with its lines trimmed and joined with one space, as a Rust string's `\`
/// continuations join them; empty lines dropped, and no space beside a line that is only a
/// tag.
fn joined(source: &str) -> String {
    let is_tag = |line: &str| {
        (line.starts_with("{%") && line.ends_with("%}"))
            || (line.starts_with("{#") && line.ends_with("#}"))
    };
    let mut out = String::new();
    let mut after_tag = true;
    for line in source.lines().map(str::trim).filter(|line| !line.is_empty()) {
        let tag = is_tag(line);
        if !after_tag && !tag {
            out.push(' ');
        }
        out.push_str(line);
        after_tag = tag;
    }
    out
}

/// Renders the piece `name` of `file` as a cell: its text's inline marks as spans, as
/// [`Cell::inline`] reads them, while each text value of `args` stays its own text wherever
/// it lands (a backtick or `**` in a value is a character, not a mark). Other values (a
/// number, a flag) render as they are.
///
/// # Panics
///
/// As [`render`] does.
pub fn cell(file: &str, name: &str, args: &[(&str, Value)]) -> Cell {
    // Each text value (in a list or a map too) as a character of Unicode's private use
    // area, replaced after the marks are read.
    let mut values = Vec::new();
    let held: Vec<(&str, Value)> =
        args.iter().map(|(key, value)| (*key, placeheld(value, &mut values))).collect();
    let text = render(file, name, &held);
    let filled = |part: &str| {
        part.chars().fold(String::new(), |mut out, c| {
            let index = (c as u32).checked_sub(PLACEHOLDERS).map(|index| index as usize);
            match index.and_then(|index| values.get(index)) {
                Some(value) => out.push_str(value),
                None => out.push(c),
            }
            out
        })
    };
    // The marks read as `Cell::inline` reads them, each span then filled.
    let mut cell = Cell::default();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            cell = cell.then(Style::Code, filled(part));
            continue;
        }
        let marked = part.split("**").enumerate().filter(|(_, part)| !part.is_empty());
        for (j, part) in marked {
            cell = cell.then([Style::Plain, Style::Strong][j % 2], filled(part));
        }
    }
    cell
}

/// The first private use character, the placeholder of a [`cell`]'s first value.
const PLACEHOLDERS: u32 = 0xE000;

/// `value` with each text in it (itself, or an item of a list or a map) replaced by the
/// placeholder of its index in `values`, where it is kept.
fn placeheld(value: &Value, values: &mut Vec<String>) -> Value {
    if let Some(text) = value.as_str() {
        let index = u32::try_from(values.len()).expect("a few values");
        values.push(text.to_owned());
        let placeholder = char::from_u32(PLACEHOLDERS + index).expect("a private use character");
        return Value::from(placeholder.to_string());
    }
    let Ok(items) = value.try_iter() else { return value.clone() };
    match value.kind() {
        ValueKind::Seq => {
            Value::from(items.map(|item| placeheld(&item, values)).collect::<Vec<_>>())
        }
        ValueKind::Map => {
            let map: std::collections::BTreeMap<String, Value> = items
                .filter_map(|key| {
                    let item = value.get_item(&key).ok()?;
                    Some((key.to_string(), placeheld(&item, values)))
                })
                .collect();
            Value::from(map)
        }
        _ => value.clone(),
    }
}

/// Renders a prose piece as text: `prose!("file", "name", key = value, ...)`, each value
/// anything a minijinja [`Value`] is made from ([`render`]).
macro_rules! prose {
    ($file:literal, $name:literal $(, $key:ident = $value:expr)* $(,)?) => {
        $crate::report::prose::render(
            $file,
            $name,
            &[$((stringify!($key), ::minijinja::value::Value::from($value))),*],
        )
    };
}
pub(crate) use prose;

/// Renders a prose piece as a cell, each value its own text: `prose_cell!("file", "name",
/// key = value, ...)` ([`cell`]).
macro_rules! prose_cell {
    ($file:literal, $name:literal $(, $key:ident = $value:expr)* $(,)?) => {
        $crate::report::prose::cell(
            $file,
            $name,
            &[$((stringify!($key), ::minijinja::value::Value::from($value))),*],
        )
    };
}
pub(crate) use prose_cell;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every piece of `source`: its name and its parameters.
    fn pieces(source: &str) -> Vec<(String, Vec<String>)> {
        let joined = joined(source);
        joined
            .split("{% macro ")
            .skip(1)
            .map(|rest| {
                let (name, rest) = rest.split_once('(').expect("a macro's parameters");
                let (params, _) = rest.split_once(')').expect("a macro's parameters close");
                let params = params
                    .split(',')
                    .map(|param| param.trim().to_owned())
                    .filter(|param| !param.is_empty())
                    .collect();
                (name.trim().to_owned(), params)
            })
            .collect()
    }

    /// A value for the argument `argument` of any piece: a text, or for a list of the
    /// failed cells, one cell.
    fn sample(argument: &str) -> Value {
        match argument {
            "cells" => Value::from(vec![minijinja::context! {
                key => "x", reason => "x", abandoned => true
            }]),
            _ => Value::from("x"),
        }
    }

    #[test]
    fn every_piece_renders_with_its_arguments() {
        let mut count = 0;
        for (file, source) in FILES {
            for (name, params) in pieces(source) {
                let args: Vec<(&str, Value)> =
                    params.iter().map(|param| (param.as_str(), sample(param))).collect();
                let text = try_render(file, &name, &args)
                    .unwrap_or_else(|error| panic!("{file}/{name}: {error:#}"));
                assert!(!text.trim().is_empty(), "{file}/{name} is empty");
                assert!(!text.contains('\n'), "{file}/{name} is one line");
                assert_eq!(text.trim(), text, "{file}/{name}: no space at either end");
                count += 1;
            }
        }
        assert!(count > 0);
    }

    #[test]
    fn a_missing_piece_or_argument_is_an_error() {
        assert!(try_render("summary", "no-such-piece", &[]).is_err());
        assert!(try_render("no-such-file", "header_overhead", &[]).is_err());
        let (name, params) = pieces(FILES[0].1)
            .into_iter()
            .find(|(_, params)| !params.is_empty())
            .expect("a piece with a parameter");
        assert!(try_render("summary", &name, &[]).is_err(), "{name} without {params:?}");
        let mut args: Vec<(&str, Value)> =
            params.iter().map(|param| (param.as_str(), Value::from("x"))).collect();
        args.push(("unknown", Value::from("x")));
        assert!(try_render("summary", &name, &args).is_err(), "{name} with an unknown argument");
    }

    #[test]
    fn a_cells_values_keep_their_marks_as_text() {
        let cell = prose_cell!(
            "summary",
            "external_design",
            id = "a`b",
            description = "**c**",
            version = "1",
            command = "run",
            sha = "",
            wait = "w",
        );
        let markdown = cell.prose_markdown();
        assert!(markdown.starts_with("External design `a`b`: **c**, version 1, run by `run` "));
        assert!(markdown.contains("(source SHA-256 ; waits: w). Its CPU/msg"), "{markdown}");
        assert!(cell.html().starts_with("External design <code>a`b</code>: **c**, version"));
    }

    #[test]
    fn lines_join_as_rust_continuations_do() {
        let source = "{% macro a(x) %}\n  One line\n  and {{ x }}.\n{% if x %}\n (more)\n\
                      {% endif %}\n{% endmacro %}\n";
        assert_eq!(
            joined(source),
            "{% macro a(x) %}One line and {{ x }}.{% if x %}(more){% endif %}{% endmacro %}"
        );
    }

    /// The Rust files under `dir`, this module's own left out (its docs and tests name
    /// pieces that are not there).
    fn rust_files(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a source folder reads") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                rust_files(&path, found);
            } else if !path.ends_with("prose.rs") {
                found.push(path);
            }
        }
    }

    /// The (file, name) of every `prose!` and `prose_cell!` call in `text`.
    fn named_pieces(text: &str) -> Vec<(String, String)> {
        let calls = text.split("prose!(").skip(1);
        calls
            .chain(text.split("prose_cell!(").skip(1))
            .filter_map(|call| {
                let mut quoted = call.split('"');
                let (_, file, _, name) =
                    (quoted.next()?, quoted.next()?, quoted.next()?, quoted.next()?);
                Some((file.to_owned(), name.to_owned()))
            })
            .collect()
    }

    /// Every `prose!("file", "name"` under `src/report` names a piece that exists.
    #[test]
    fn every_piece_the_code_names_exists() {
        let known: Vec<(String, String)> = FILES
            .iter()
            .flat_map(|(file, source)| {
                pieces(source).into_iter().map(|(name, _)| ((*file).to_owned(), name))
            })
            .collect();
        let mut files = Vec::new();
        rust_files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/report"),
            &mut files,
        );
        let mut named = 0;
        for path in files {
            let text = std::fs::read_to_string(&path).expect("a source file reads");
            for piece in named_pieces(&text) {
                assert!(known.contains(&piece), "{}: no piece {piece:?}", path.display());
                named += 1;
            }
        }
        assert!(named > 0);
    }
}
