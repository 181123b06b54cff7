//! Catching a panic as a message: a worker's panic must fail its point with
//! "worker 3 panicked: ..." rather than print a backtrace or vanish.

use std::cell::{Cell, RefCell};
use std::sync::Once;

thread_local! {
    /// Whether a panic on this thread is being caught by [`catch`].
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    /// Where the caught panic happened, noted by the hook.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// A caught panic: its message and where it happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Panicked(pub String);

/// Runs `body`; a panic inside it comes back as its message and location
/// (nothing printed). Panics elsewhere still reach the previous hook.
pub(crate) fn catch<T>(body: impl FnOnce() -> T) -> Result<T, Panicked> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) {
                let location = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
                LOCATION.with(|l| *l.borrow_mut() = location);
            } else {
                previous(info);
            }
        }));
    });
    let outer = CATCHING.with(|c| c.replace(true));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    CATCHING.with(|c| c.set(outer));
    outcome.map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_string());
        Panicked(match LOCATION.with(|l| l.borrow_mut().take()) {
            Some(at) => format!("{message} (at {at})"),
            None => message,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message_and_location() {
        let caught = catch(|| -> u32 { panic!("bad index {}", 7) }).unwrap_err();
        assert!(caught.0.starts_with("bad index 7 (at src/panics.rs:"), "{caught}");
        assert_eq!(catch(|| 5).unwrap(), 5);
    }
}
