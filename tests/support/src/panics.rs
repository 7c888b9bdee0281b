//! Keeping the panics a test injects on purpose off stderr, so that the output shows only
//! the panics that mean something (a failed assertion, a real bug).

use std::sync::{Mutex, Once};

/// The prefixes of the panic messages to keep quiet.
static QUIET: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// From now on, in this test process, a panic whose message starts with `prefix` is not
/// printed; every other panic is printed by the hook that was installed before. Calling it
/// again (from another test of the binary) adds a prefix; the hook is installed once.
pub fn quiet_panics_starting_with(prefix: &'static str) {
    static INSTALL: Once = Once::new();
    let mut quiet = QUIET.lock().unwrap_or_else(|p| p.into_inner());
    if !quiet.contains(&prefix) {
        quiet.push(prefix);
    }
    drop(quiet);
    INSTALL.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied());
            let quiet = QUIET.lock().unwrap_or_else(|p| p.into_inner());
            if !message.is_some_and(|m| quiet.iter().any(|prefix| m.starts_with(prefix))) {
                drop(quiet);
                default(info);
            }
        }));
    });
}
