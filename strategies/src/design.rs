//! [`Design`]: a strategy the harness can name, describe and build, built in or brought by
//! a user.
//!
//! The built-in strategies are [`StrategyId`]s; a design outside this crate is registered
//! once per process with [`Design::register`] (any [`Strategy`] a closure builds) or
//! [`Design::register_engine`] (an [`Engine`] on the shared window and close protocol).
//! From then on it is found by its id like a built-in one: `--strategy`, results files,
//! charts and gates name it the same way. A results file records the descriptors of the
//! designs it measured, so a later process that reads it knows them too
//! ([`Design::recorded`]), though it cannot build them.
//!
//! A `Design` is a `Copy` handle to an entry that lives for the process: the built-in
//! entries are statics, and a registered one is allocated once and never freed (a process
//! registers a handful).

use std::cmp::Ordering as CmpOrdering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::{Arc, PoisonError, RwLock};

use crate::engine::{self, Engine};
use crate::{
    BuildError, ConfigError, Descriptor, Handler, Strategy, StrategyConfig, StrategyId,
    UnknownStrategy, BUILT_IN,
};

/// What builds a registered design: its settings and its handler in, the running strategy
/// out (its threads started).
pub type BuildFn = dyn Fn(StrategyConfig, Arc<dyn Handler>) -> Result<Box<dyn Strategy>, ConfigError>
    + Send
    + Sync;

/// How an entry's strategy is built.
enum Source {
    /// A built-in strategy.
    BuiltIn(StrategyId),
    /// A design registered in this process.
    Registered(Box<BuildFn>),
    /// A design known from a results file only.
    Recorded,
    /// A design that runs in another process (the harness's external-design protocol):
    /// measured through its driver, never built here.
    External,
}

/// One design: what is known of it and how it is built.
pub(crate) struct Entry {
    descriptor: &'static Descriptor,
    source: Source,
}

impl Entry {
    /// The entry of a built-in strategy (the `strategies!` list's statics).
    pub(crate) const fn built_in(id: StrategyId, descriptor: &'static Descriptor) -> Self {
        Self { descriptor, source: Source::BuiltIn(id) }
    }
}

/// The designs registered in this process, in registration order.
static REGISTERED: RwLock<Vec<&'static Entry>> = RwLock::new(Vec::new());

/// A strategy the harness can name, describe and build: a built-in one or a registered
/// one (module docs). Equal designs have equal ids.
#[derive(Clone, Copy)]
pub struct Design(&'static Entry);

/// Why a design could not be registered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// Its id is a built-in strategy's.
    #[error("`{id}` is the id of a built-in strategy; a registered design needs its own")]
    BuiltIn {
        /// The id.
        id: String,
    },
    /// Another design registered in this process has the id.
    #[error("a design `{id}` is already registered in this process")]
    Taken {
        /// The id.
        id: String,
    },
    /// A results file records the id with another descriptor than one already known.
    #[error("`{id}` is known with another descriptor than the one recorded")]
    Conflict {
        /// The id.
        id: String,
    },
    /// The id cannot name a design on the command line or in a file name.
    #[error(
        "`{id}` is not a valid design id: use 1 to 40 lowercase letters, digits and `-`, \
         starting with a letter"
    )]
    InvalidId {
        /// The id.
        id: String,
    },
}

/// Whether `id` can name a design: lowercase letters, digits and `-` (as the built-in ids:
/// it names files, bench ids and command-line values), starting with a letter.
fn valid_id(id: &str) -> bool {
    (1..=40).contains(&id.len())
        && id.starts_with(|c: char| c.is_ascii_lowercase())
        && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

impl Design {
    /// The design of a built-in strategy.
    pub const fn built_in(id: StrategyId) -> Self {
        Self(&BUILT_IN[id as usize])
    }

    /// Registers a design built by `build` under `descriptor`, for the rest of the process:
    /// the harness measures it like a built-in one. `build` gets validated settings (the
    /// harness checks them first) and should honour `workers` and `max_in_flight`; the
    /// conformance check ([`crate::conformance`]) tells whether it keeps the contract.
    pub fn register(
        descriptor: Descriptor,
        build: impl Fn(StrategyConfig, Arc<dyn Handler>) -> Result<Box<dyn Strategy>, ConfigError>
            + Send
            + Sync
            + 'static,
    ) -> Result<Self, RegisterError> {
        Self::insert(descriptor, Source::Registered(Box::new(build)), false)
    }

    /// Registers the design of engine `E` under `descriptor`: `E` runs on the shared
    /// admission window and close protocol of the built-in strategies ([`crate::engine`]),
    /// with the descriptor's window scope unless the settings name one.
    pub fn register_engine<E: Engine>(descriptor: Descriptor) -> Result<Self, RegisterError> {
        let id = descriptor.id.clone();
        let scope = descriptor.window_scope;
        Self::register(descriptor, move |config, handler| {
            engine::build_with::<E>(id.clone(), scope, config, handler)
        })
    }

    /// Registers a design that runs in another process, for the rest of the process: it is
    /// selected, charted and judged like any other, and the harness measures it through
    /// its driver; [`Design::build`] refuses it.
    pub fn register_external(descriptor: Descriptor) -> Result<Self, RegisterError> {
        Self::insert(descriptor, Source::External, false)
    }

    /// Makes `descriptor` known for the rest of the process without a way to build it: a
    /// results file's record of a design measured by another process, so that reports
    /// show it as it was described. Known already with the same descriptor: nothing to do.
    pub fn recorded(descriptor: Descriptor) -> Result<Self, RegisterError> {
        Self::insert(descriptor, Source::Recorded, true)
    }

    fn insert(
        descriptor: Descriptor,
        source: Source,
        recorded: bool,
    ) -> Result<Self, RegisterError> {
        let id = descriptor.id.to_string();
        if !valid_id(&id) {
            return Err(RegisterError::InvalidId { id });
        }
        let mut registered = REGISTERED.write().unwrap_or_else(PoisonError::into_inner);
        let known = Self::built_in_named(&id)
            .or_else(|| registered.iter().find(|entry| entry.descriptor.id == id).map(|e| Self(e)));
        match known {
            Some(design) if recorded => {
                return if *design.descriptor() == descriptor {
                    Ok(design)
                } else {
                    Err(RegisterError::Conflict { id })
                };
            }
            Some(design) if design.strategy_id().is_some() => {
                return Err(RegisterError::BuiltIn { id })
            }
            Some(_) => return Err(RegisterError::Taken { id }),
            None => {}
        }
        let descriptor: &'static Descriptor = Box::leak(Box::new(descriptor));
        let entry: &'static Entry = Box::leak(Box::new(Entry { descriptor, source }));
        registered.push(entry);
        Ok(Self(entry))
    }

    fn built_in_named(id: &str) -> Option<Self> {
        id.parse::<StrategyId>().ok().map(Self::built_in)
    }

    /// The design named `id`: a built-in one, or one registered or recorded in this
    /// process.
    pub fn find(id: &str) -> Option<Self> {
        Self::built_in_named(id).or_else(|| {
            let registered = REGISTERED.read().unwrap_or_else(PoisonError::into_inner);
            registered.iter().find(|entry| entry.descriptor.id == id).map(|entry| Self(entry))
        })
    }

    /// The built-in designs, in [`StrategyId::ALL`] order.
    pub fn built_ins() -> impl Iterator<Item = Self> {
        StrategyId::ALL.iter().map(|&id| Self::built_in(id))
    }

    /// Every design this process can build, in presentation order: the built-in ones,
    /// then the registered ones in registration order (`--strategy all`).
    pub fn all() -> Vec<Self> {
        let registered = REGISTERED.read().unwrap_or_else(PoisonError::into_inner);
        StrategyId::ALL
            .iter()
            .map(|&id| Self::built_in(id))
            .chain(
                registered
                    .iter()
                    .filter(|entry| {
                        matches!(entry.source, Source::Registered(_) | Source::External)
                    })
                    .map(|entry| Self(entry)),
            )
            .collect()
    }

    /// Every design this process knows, in presentation order: [`Design::all`], then the
    /// ones known from a results file only (what a gate's `all` and `ordered` select).
    pub fn known() -> Vec<Self> {
        let mut known = Self::all();
        let registered = REGISTERED.read().unwrap_or_else(PoisonError::into_inner);
        known.extend(
            registered
                .iter()
                .filter(|entry| matches!(entry.source, Source::Recorded))
                .map(|entry| Self(entry)),
        );
        known
    }

    /// The id used on the command line, in JSON, in bench ids and in plots.
    pub fn as_str(self) -> &'static str {
        // Every entry and its descriptor live for the process.
        let descriptor: &'static Descriptor = self.0.descriptor;
        descriptor.id.as_ref()
    }

    /// What the harness, the tests and the charts know of it.
    pub fn descriptor(self) -> &'static Descriptor {
        self.0.descriptor
    }

    /// The built-in strategy it is, if it is one.
    pub fn strategy_id(self) -> Option<StrategyId> {
        match self.0.source {
            Source::BuiltIn(id) => Some(id),
            _ => None,
        }
    }

    /// Whether this process can build it (every design but one known from a file only or
    /// run in another process).
    pub fn is_buildable(self) -> bool {
        !matches!(self.0.source, Source::Recorded | Source::External)
    }

    /// Whether it runs in another process ([`Design::register_external`]).
    pub fn is_external(self) -> bool {
        matches!(self.0.source, Source::External)
    }

    /// Whether it promises per-key order.
    pub fn is_ordered(self) -> bool {
        self.0.descriptor.ordered
    }

    /// Whether all its threads come from one pool of `workers`.
    pub fn is_shared_pool(self) -> bool {
        self.0.descriptor.is_shared_pool()
    }

    /// Builds it with `config` (validated first) and `handler`, starting its threads.
    pub fn build(
        self,
        config: StrategyConfig,
        handler: Arc<dyn Handler>,
    ) -> Result<Box<dyn Strategy>, BuildError> {
        match &self.0.source {
            Source::BuiltIn(id) => Ok(id.build(config, handler)?),
            Source::Registered(build) => {
                config.validate()?;
                Ok(build(config, handler)?)
            }
            Source::Recorded => Err(BuildError::NotBuildable { id: self.as_str().to_owned() }),
            Source::External => Err(BuildError::External { id: self.as_str().to_owned() }),
        }
    }

    /// Its place in presentation order: built-in ones first, in [`StrategyId::ALL`] order.
    fn rank(self) -> (usize, &'static str) {
        (self.strategy_id().map_or(usize::MAX, |id| id as usize), self.as_str())
    }
}

impl From<StrategyId> for Design {
    fn from(id: StrategyId) -> Self {
        Self::built_in(id)
    }
}

impl PartialEq for Design {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Design {}

impl PartialEq<StrategyId> for Design {
    fn eq(&self, other: &StrategyId) -> bool {
        self.strategy_id() == Some(*other)
    }
}

impl Hash for Design {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for Design {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Design {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.rank().cmp(&other.rank())
    }
}

impl fmt::Debug for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Design {
    type Err = UnknownStrategy;

    fn from_str(given: &str) -> Result<Self, Self::Err> {
        Self::find(given).ok_or_else(|| UnknownStrategy { given: given.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Family, Threads};

    fn descriptor(id: &'static str) -> Descriptor {
        Descriptor::custom(id, "a test design", Family::Mailboxes, true, Threads::SharedPool)
    }

    #[test]
    fn a_registered_design_is_found_built_and_listed_after_the_built_in_ones() {
        let design = Design::register(descriptor("test-registered"), |config, handler| {
            StrategyId::KeyedMailbox.build(config, handler)
        })
        .unwrap();
        assert_eq!(Design::find("test-registered"), Some(design));
        assert_eq!("test-registered".parse::<Design>(), Ok(design));
        assert_eq!(design.strategy_id(), None);
        let all = Design::all();
        let built_in: Vec<Design> = StrategyId::ALL.iter().map(|&id| Design::from(id)).collect();
        assert_eq!(all[..built_in.len()], built_in[..]);
        assert!(all.contains(&design));
        let handler: Arc<dyn Handler> = Arc::new(|_: &crate::Message| crate::Outcome::Done);
        let strategy = design.build(StrategyConfig::with_workers(1), handler).unwrap();
        strategy.close();
        assert!(StrategyId::Inline < StrategyId::ThreadPool);
        assert!(Design::from(StrategyId::ThreadPool) < design, "built-in ones sort first");
    }

    #[test]
    fn ids_are_checked_and_never_taken_twice() {
        let build = |config, handler| StrategyId::Inline.build(config, handler);
        let taken = Design::register(descriptor("keyed-mailbox"), build);
        assert!(matches!(taken, Err(RegisterError::BuiltIn { .. })), "{taken:?}");
        for bad in ["", "Upper", "1st", "a b", "sl/ash"] {
            let error = Design::register(descriptor_owned(bad), build).unwrap_err();
            assert!(matches!(error, RegisterError::InvalidId { .. }), "{bad}: {error:?}");
        }
        Design::register(descriptor("test-twice"), build).unwrap();
        let twice = Design::register(descriptor("test-twice"), build);
        assert!(matches!(twice, Err(RegisterError::Taken { .. })), "{twice:?}");
    }

    fn descriptor_owned(id: &str) -> Descriptor {
        Descriptor::custom(id.to_owned(), "", Family::Mailboxes, true, Threads::SharedPool)
    }

    #[test]
    fn a_recorded_design_is_known_but_not_buildable() {
        let recorded = Design::recorded(descriptor("test-recorded")).unwrap();
        assert_eq!(Design::recorded(descriptor("test-recorded")), Ok(recorded), "idempotent");
        let other = Descriptor { ordered: false, ..descriptor("test-recorded") };
        assert!(matches!(Design::recorded(other), Err(RegisterError::Conflict { .. })));
        assert!(!Design::all().contains(&recorded), "`all` lists buildable designs");
        assert!(crate::descriptor_of("test-recorded").is_some_and(|d| d.ordered));
        let handler: Arc<dyn Handler> = Arc::new(|_: &crate::Message| crate::Outcome::Done);
        let error = recorded.build(StrategyConfig::with_workers(1), handler).unwrap_err();
        assert!(matches!(error, BuildError::NotBuildable { .. }), "{error:?}");
        let built_in = Design::recorded(StrategyId::Tokio.descriptor().clone()).unwrap();
        assert_eq!(built_in, StrategyId::Tokio);
    }
}
