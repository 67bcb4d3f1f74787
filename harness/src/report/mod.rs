//! Reports: everything that reads results and shows them. Nothing here times anything.
//!
//! - `format`: durations and rates as people read them;
//! - `summary`: `summary.md`, one table per (scenario, param);
//! - `plot`: the charts, PNG and SVG;
//! - `html`: `report.html`, the charts and the summary on one page;
//! - `export`: results in the formats of continuous-benchmarking services;
//! - `catalog`: what the suite can run, for `keyed-bench list`.

pub mod catalog;
pub mod export;
pub mod html;
pub mod plot;
pub mod summary;
