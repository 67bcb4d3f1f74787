//! Build an executor of your own on the machinery the built-in strategies share, so that it
//! is measured like for like: the same admission window (at most `max_in_flight`
//! unfinished messages, refilled in batches, outside submitters blocked at a full window),
//! the same admission queue for re-entrant submissions, and the same `drain`, `close` and
//! `force_close` (crate docs, "The contract").
//!
//! Implement [`Engine`]: where an admitted message goes and which thread runs it. Run a
//! message with [`Core::start`]; if it returns a pending step, poll it with [`Core::poll`]
//! when its waker fires, until it is ready. A forced close raises [`Core::is_forced`]:
//! [`Engine::sweep`] then hands the messages still queued to [`Core::discard`] and the
//! stored pending steps to [`Core::abandon`].
//!
//! An engine with per-key mailboxes that retires a mailbox once its last message ends runs
//! a turn with [`Core::hold`]: [`Core::start_holding`], [`Core::poll_holding`] and
//! [`Core::abandon_holding`] keep an ended message's window credit in the [`Held`] until
//! [`Held::release`] (or its drop). Retire the emptied mailbox first, then release: `drain`
//! then never returns while a mailbox is still live (the contract suite's `mailboxes`
//! check), as in the built-in mailbox designs. Release outside the engine's own locks: a
//! returned credit may admit a queued message, which is dispatched at once.
//!
//! Then register it:
//!
//! ```
//! # use strategies::engine::{Core, Engine};
//! # use strategies::{Descriptor, Design, Family, Message, Threads};
//! # use std::sync::Arc;
//! /// Runs every message on the submitting thread, waiting out pending steps there.
//! struct OnCaller(Arc<Core>);
//!
//! impl Engine for OnCaller {
//!     fn start(core: &Arc<Core>) -> Self {
//!         Self(Arc::clone(core))
//!     }
//!     fn dispatch(&self, message: Message) {
//!         if let Some(mut step) = self.0.start(&message) {
//!             let waker = std::task::Waker::noop();
//!             let mut cx = std::task::Context::from_waker(&waker);
//!             while self.0.poll(message.key, &mut step, &mut cx).is_pending() {
//!                 std::thread::yield_now();
//!             }
//!         }
//!     }
//!     fn sweep(&self) {}
//!     fn stop(&self) {}
//!     fn threads_started(&self) -> usize {
//!         0
//!     }
//! }
//!
//! let descriptor = Descriptor::custom(
//!     "on-caller",
//!     "runs on the caller, spinning on waits",
//!     Family::Inline,
//!     true,
//!     Threads::Caller,
//! );
//! let design = Design::register_engine::<OnCaller>(descriptor).unwrap();
//! assert_eq!(design.as_str(), "on-caller");
//! ```

use std::borrow::Cow;
use std::sync::Arc;

use crate::events::EventSet;
use crate::executor::Executor;
pub use crate::executor::{Core, Engine, Held};
use crate::{ConfigError, Handler, Strategy, StrategyConfig, WindowScope};

/// Builds engine `E` on the shared window and close protocol, reporting `id`; its windows
/// have the settings' scope, or `default_scope` when the settings name none. The
/// settings are validated first.
pub fn build<E: Engine>(
    id: impl Into<Cow<'static, str>>,
    default_scope: WindowScope,
    config: StrategyConfig,
    handler: Arc<dyn Handler>,
) -> Result<Box<dyn Strategy>, ConfigError> {
    build_with::<E>(id.into(), default_scope, config, handler)
}

pub(crate) fn build_with<E: Engine>(
    id: Cow<'static, str>,
    default_scope: WindowScope,
    config: StrategyConfig,
    handler: Arc<dyn Handler>,
) -> Result<Box<dyn Strategy>, ConfigError> {
    config.validate()?;
    let scope = config.window_scope.unwrap_or(default_scope);
    let core = Arc::new(Core::new(config, scope, EventSet::NONE, handler));
    Ok(Executor::<E>::boxed(id, core))
}
