//! Workloads: the scenario ids, their sizes (every one a flag) and seeded generation.
//!
//! A [`Workload`] is the complete message sequence of one (scenario, parameter) cell,
//! generated from the seed when its first cell runs, so every strategy receives exactly the
//! same messages. Per-key sequence numbers are assigned here. A [`WorkloadSpec`] is the
//! same workload before its messages: what a plan needs.
//!
//! - `scenario`: every scenario declared once, with all it says of itself and its generator;
//! - `sizes`: every size, declared once in one table (field, flag, range, defaults);
//! - `spec`: what each workload is before its messages, and the work it asks for;
//! - `generate`: the messages of each workload, and what each scenario needs of the sizes;
//! - `reference`: the published figures of reference systems.

mod generate;
pub mod reference;
pub mod scenario;
mod sizes;
mod spec;

pub use generate::{
    cold_command_param, generate, job_cost_ns, keys_param, Arrivals, Driven, HotChain, Saga,
    Workload, STATE_LINE_BYTES,
};
pub use scenario::{
    Generator, Handlers, Isolation, Kind, ScenarioId, ScenarioSpec, UnknownScenario, UNSTRESSED,
};
pub use sizes::{SizeArgs, SizeValue, Sizes, FOREVER_STALL_BACKOFFS, FOREVER_STALL_MIN_MS};
pub(crate) use spec::zipf_top_share;
pub use spec::{Variant, Work, WorkloadSpec};
