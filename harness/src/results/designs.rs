//! `meta.designs[]`: the descriptors of the designs a run measured that are not built in
//! (a user's executor, registered with [`strategies::Design::register`]), so that a later
//! process reading the file charts and judges them as they were described.

use serde::{Deserialize, Serialize};
use strategies::{Descriptor, Design, Family, WindowScope};

/// One design's descriptor, as results.json records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesignRecord {
    /// Its id, as `runs[].strategy` names it.
    pub id: String,
    /// One line on what the design is.
    pub description: String,
    /// `mailboxes`, `hash-groups`, `inline` or `unordered`.
    pub family: String,
    /// Whether it promises per-key order.
    pub ordered: bool,
    /// `shared-pool`, `pool-per-type` or `caller`.
    pub threads: String,
    /// `strategy` or `type`: its default window scope.
    pub window_scope: String,
    /// Whether `throughput` bounds its turn; absent in files from before it was recorded,
    /// where it reads as whether its family is `mailboxes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds_turn: Option<bool>,
    /// sRGB plot colour.
    pub colour: [u8; 3],
    /// A design run by a driver process (`--external`): what ran it. Absent for a design
    /// built in this process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalRecord>,
}

/// What results.json records of an external design (`meta.designs[].external`): the
/// command that ran it, its version and the hash of its sources.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalRecord {
    /// The command line given to `--external` after `NAME=` (split into words as a shell
    /// would, run without a shell).
    pub command: String,
    /// The version its driver gave.
    pub version: String,
    /// How its driver runs a non-blocking wait, in its words.
    pub wait: String,
    /// The files and folders its driver named as its source.
    pub sources: Vec<String>,
    /// SHA-256 of those sources (each file's path and contents, in path order), hex.
    pub source_sha256: String,
    /// The protocol version it spoke.
    pub protocol: u32,
}

/// The value `name` names in `field`, or an error naming the field and the valid names.
fn parse<T: std::str::FromStr>(name: &str, field: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    name.parse().map_err(|error| format!("`{field}`: {error}"))
}

impl DesignRecord {
    /// The record of `descriptor`.
    pub fn of(descriptor: &Descriptor) -> Self {
        Self {
            id: descriptor.id.to_string(),
            description: descriptor.description.to_string(),
            family: descriptor.family.as_str().to_owned(),
            ordered: descriptor.ordered,
            threads: descriptor.threads.as_str().to_owned(),
            window_scope: descriptor.window_scope.to_string(),
            bounds_turn: Some(descriptor.bounds_turn),
            colour: descriptor.colour,
            external: None,
        }
    }

    /// The descriptor it records, or why it records none.
    pub fn descriptor(&self) -> Result<Descriptor, String> {
        let window_scope: WindowScope = parse(&self.window_scope, "window_scope")?;
        let family: Family = parse(&self.family, "family")?;
        Ok(Descriptor {
            id: self.id.clone().into(),
            description: self.description.clone().into(),
            family,
            ordered: self.ordered,
            threads: parse(&self.threads, "threads")?,
            window_scope,
            bounds_turn: self.bounds_turn.unwrap_or(family == Family::Mailboxes),
            colour: self.colour,
        })
    }
}

/// The records of the designs among `designs` that are not built in, in order.
pub fn records(designs: &[Design]) -> Vec<DesignRecord> {
    designs
        .iter()
        .filter(|design| design.strategy_id().is_none())
        .map(|design| DesignRecord::of(design.descriptor()))
        .collect()
}

/// The external designs known from results files read by this process.
static RECORDED_EXTERNAL: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Whether `design` runs in a driver process: this process's (`--external`) or one a
/// results file it read records so. Its thread figures are that process's, runtime
/// threads included, not threads added to this one.
pub fn runs_elsewhere(design: Design) -> bool {
    let recorded = RECORDED_EXTERNAL.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    design.is_external() || recorded.iter().any(|id| id == design.as_str())
}

/// Makes every recorded design known to this process ([`Design::recorded`]); one already
/// known with another descriptor is an error naming it.
pub fn make_known(records: &[DesignRecord]) -> Result<(), String> {
    make_known_as(records, false)
}

/// [`make_known`] for files read side by side (`history`): a design that an earlier file
/// recorded with another description (the same family, order, threads, window scope,
/// turn and colour: all the reports read of it) keeps the earlier file's, so that runs of
/// one external design described differently (a mock consumer, then Kafka) read together.
pub fn make_known_beside(records: &[DesignRecord]) -> Result<(), String> {
    make_known_as(records, true)
}

/// [`make_known`], a differing description of a known design allowed where `beside`.
fn make_known_as(records: &[DesignRecord], beside: bool) -> Result<(), String> {
    for (index, record) in records.iter().enumerate() {
        let running = Design::find(&record.id).is_some_and(Design::is_external);
        if record.external.is_some() && running {
            // This process runs the design through a driver given on its command line
            // (a resumed run): that one stands for it, and the resume compares the two.
            continue;
        }
        if record.external.is_some() {
            let mut recorded =
                RECORDED_EXTERNAL.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !recorded.contains(&record.id) {
                recorded.push(record.id.clone());
            }
        }
        let mut descriptor =
            record.descriptor().map_err(|error| format!("meta.designs[{index}]: {error}"))?;
        if let Some(known) = strategies::descriptor_of(&record.id).filter(|_| beside) {
            descriptor.description = known.description.clone();
        }
        Design::recorded(descriptor).map_err(|error| format!("meta.designs[{index}]: {error}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use strategies::Threads;

    #[test]
    fn a_record_gives_back_its_descriptor_and_becomes_known() {
        let descriptor = Descriptor::custom(
            "results-test-design",
            "a design of a results test",
            Family::HashGroups,
            true,
            Threads::PoolPerType,
        );
        let record = DesignRecord::of(&descriptor);
        assert_eq!(record.family, "hash-groups");
        assert_eq!(record.threads, "pool-per-type");
        assert_eq!(record.descriptor(), Ok(descriptor.clone()));
        make_known(std::slice::from_ref(&record)).unwrap();
        assert_eq!(strategies::descriptor_of("results-test-design"), Some(&descriptor));
        let bad = DesignRecord { family: "actors".into(), ..record };
        let error = make_known(&[bad]).unwrap_err();
        assert!(error.contains("meta.designs[0]") && error.contains("`family`"), "{error}");
    }

    #[test]
    fn beside_another_file_only_the_description_may_differ() {
        let descriptor = Descriptor::custom(
            "results-test-beside",
            "on a mock",
            Family::Mailboxes,
            true,
            Threads::SharedPool,
        );
        make_known(&[DesignRecord::of(&descriptor)]).unwrap();
        let described = Descriptor { description: "on Kafka".into(), ..descriptor.clone() };
        let record = DesignRecord::of(&described);
        assert!(make_known(std::slice::from_ref(&record)).is_err(), "strict: a conflict");
        make_known_beside(&[record]).unwrap();
        assert_eq!(strategies::descriptor_of("results-test-beside"), Some(&descriptor));
        let unordered = Descriptor { ordered: false, ..described };
        let error = make_known_beside(&[DesignRecord::of(&unordered)]).unwrap_err();
        assert!(error.contains("another descriptor"), "{error}");
    }

    #[test]
    fn built_in_designs_are_not_recorded() {
        let designs: Vec<Design> = Design::built_ins().collect();
        assert!(records(&designs).is_empty());
    }
}
