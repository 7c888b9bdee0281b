//! The default connection limit, from the process's open-file limit: every connection holds a
//! descriptor, so a limit above the descriptors the process may open is never reached, and
//! `accept` fails with EMFILE before the server can refuse a connection with `Busy`.

use super::config::{DEFAULT_MAX_CONNECTIONS_CEILING, DEFAULT_RESERVED_DESCRIPTORS};

/// The default `max_connections`: 90 % of the soft open-file limit, leaving at least
/// [`DEFAULT_RESERVED_DESCRIPTORS`] descriptors, and at least 1; at most
/// [`DEFAULT_MAX_CONNECTIONS_CEILING`], which is also the limit where the open-file limit
/// cannot be read (or there is none).
pub(super) fn default_max_connections() -> usize {
    soft_descriptor_limit().map_or(DEFAULT_MAX_CONNECTIONS_CEILING, budget_for)
}

/// The connection budget under a soft limit of `soft` descriptors.
fn budget_for(soft: u64) -> usize {
    let reserve = (soft / 10).max(DEFAULT_RESERVED_DESCRIPTORS);
    let budget = soft.saturating_sub(reserve).max(1);
    usize::try_from(budget)
        .unwrap_or(usize::MAX)
        .min(DEFAULT_MAX_CONNECTIONS_CEILING)
}

#[cfg(unix)]
fn soft_descriptor_limit() -> Option<u64> {
    match rlimit::getrlimit(rlimit::Resource::NOFILE) {
        Ok((soft, _hard)) if soft != rlimit::INFINITY => Some(soft),
        Ok(_) => None,
        Err(err) => {
            tracing::debug!(%err, "cannot read the open-file limit");
            None
        }
    }
}

#[cfg(not(unix))]
fn soft_descriptor_limit() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_leaves_room_for_other_descriptors() {
        assert_eq!(budget_for(20_000), 18_000);
        assert_eq!(budget_for(1_024), 922);
        assert_eq!(budget_for(256), 224);
        assert_eq!(budget_for(10), 1);
        assert_eq!(budget_for(1 << 40), DEFAULT_MAX_CONNECTIONS_CEILING);
    }

    #[cfg(unix)]
    #[test]
    fn the_default_follows_this_process_limit() {
        let (soft, _) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
        let expected = if soft == rlimit::INFINITY {
            DEFAULT_MAX_CONNECTIONS_CEILING
        } else {
            budget_for(soft)
        };
        assert_eq!(default_max_connections(), expected);
    }
}
