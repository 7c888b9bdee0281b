//! Token authentication: the secret a server requires in the client hello, its constant-time
//! comparison, and the limiter that stops one address from guessing it.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use subtle::ConstantTimeEq;

use crate::error::Error;
use crate::negotiate::MAX_TOKEN_LEN;

/// A shared secret sent in the client hello. Its `Debug` output never shows the secret, so a
/// token can sit in any builder that is logged.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token from any string (at most 255 bytes: longer ones are refused when the server
    /// binds or the channel connects).
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// A fresh token: 32 bytes of OS randomness, hex-encoded (64 characters).
    pub fn generate() -> Result<Self, Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|err| Error::Config(format!("no OS randomness for a token: {err}")))?;
        Ok(Self(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// The secret itself, for handing to callers.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The bytes that travel in the hello.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// Refuses tokens that cannot travel in a hello, or that authenticate nothing.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        match self.0.len() {
            0 => Err(Error::Config("the token is empty".to_owned())),
            len if len > MAX_TOKEN_LEN => Err(Error::Config(format!(
                "the token is {len} bytes long; at most {MAX_TOKEN_LEN} fit in the hello"
            ))),
            _ => Ok(()),
        }
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// The expected token, stored as a fixed-size block: its length, then its bytes, then zeros.
/// A presented token is laid out the same way, so every comparison touches all
/// `1 + MAX_TOKEN_LEN` bytes whatever the two lengths are, and a length mismatch shows up only
/// in the result, never in the time taken.
pub(crate) struct TokenCheck {
    expected: [u8; 1 + MAX_TOKEN_LEN],
}

impl TokenCheck {
    pub(crate) fn new(token: &Token) -> Self {
        Self {
            expected: padded(token.as_bytes()),
        }
    }

    pub(crate) fn matches(&self, presented: &[u8]) -> bool {
        if presented.len() > MAX_TOKEN_LEN {
            return false;
        }
        self.expected.ct_eq(&padded(presented)).into()
    }
}

fn padded(token: &[u8]) -> [u8; 1 + MAX_TOKEN_LEN] {
    let mut block = [0u8; 1 + MAX_TOKEN_LEN];
    // Callers pass at most MAX_TOKEN_LEN bytes, so the length fits in the first byte.
    block[0] = token.len() as u8;
    block[1..=token.len()].copy_from_slice(token);
    block
}

/// Failed attempts within [`DEFAULT_FAILURE_WINDOW`] that block an address, by default.
pub const DEFAULT_MAX_FAILURES: u32 = 5;
/// How long a failure counts against its address, by default.
pub const DEFAULT_FAILURE_WINDOW: Duration = Duration::from_secs(10);
/// The most failures a limit may allow: each one is remembered until it leaves the window.
pub const MAX_FAILURES_LIMIT: u32 = 100;
/// Addresses tracked at once; beyond it the address with the oldest last failure is
/// forgotten, so a flood of addresses costs bounded memory.
const MAX_TRACKED: usize = 10_000;

/// Authentication failures per peer IP over a sliding window: an address is refused while
/// `max_failures` of its failures lie within the last `window`. Refused attempts do not count,
/// so an address is let in again `window` after its last counted failures age out.
pub(crate) struct FailureLimiter {
    max_failures: u32,
    window: Duration,
    failures: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

impl Default for FailureLimiter {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FAILURES, DEFAULT_FAILURE_WINDOW)
    }
}

impl FailureLimiter {
    /// A limiter; `max_failures` 0 turns it off.
    pub(crate) fn new(max_failures: u32, window: Duration) -> Self {
        Self {
            max_failures: max_failures.min(MAX_FAILURES_LIMIT),
            window,
            failures: Mutex::default(),
        }
    }

    /// Whether `ip` has `max_failures` failures within the last `window`.
    pub(crate) fn is_blocked(&self, ip: IpAddr) -> bool {
        if self.max_failures == 0 {
            return false;
        }
        let now = Instant::now();
        let mut failures = self.lock();
        let Some(recent) = failures.get_mut(&ip) else {
            return false;
        };
        self.forget_old(recent, now);
        let blocked = recent.len() >= self.max_failures as usize;
        if recent.is_empty() {
            failures.remove(&ip);
        }
        blocked
    }

    /// Records one failed attempt from `ip`.
    pub(crate) fn record_failure(&self, ip: IpAddr) {
        if self.max_failures == 0 {
            return;
        }
        let now = Instant::now();
        let mut failures = self.lock();
        if failures.len() >= MAX_TRACKED && !failures.contains_key(&ip) {
            failures.retain(|_, recent| {
                recent
                    .back()
                    .is_some_and(|last| now.duration_since(*last) < self.window)
            });
            if failures.len() >= MAX_TRACKED {
                let stalest = failures
                    .iter()
                    .min_by_key(|(_, recent)| recent.back().copied())
                    .map(|(ip, _)| *ip);
                if let Some(stalest) = stalest {
                    failures.remove(&stalest);
                }
            }
        }
        let recent = failures.entry(ip).or_default();
        self.forget_old(recent, now);
        if recent.len() >= self.max_failures as usize {
            recent.pop_front();
        }
        recent.push_back(now);
    }

    fn forget_old(&self, recent: &mut VecDeque<Instant>, now: Instant) {
        while recent
            .front()
            .is_some_and(|first| now.duration_since(*first) >= self.window)
        {
            recent.pop_front();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, VecDeque<Instant>>> {
        // Each operation leaves the map consistent, so a poisoned lock is still usable.
        self.failures.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_exactly() {
        let check = TokenCheck::new(&Token::new("s3cret"));
        assert!(check.matches(b"s3cret"));
        assert!(!check.matches(b"s3cre"));
        assert!(!check.matches(b"s3cret\0"));
        assert!(!check.matches(b""));
        assert!(!check.matches(&[b'x'; 300]));
    }

    #[test]
    fn debug_output_hides_the_secret() {
        let token = Token::new("hunter2");
        assert_eq!(format!("{token:?}"), "Token(<redacted>)");
    }

    #[test]
    fn generated_tokens_are_64_hex_digits_and_differ() {
        let a = Token::generate().unwrap();
        let b = Token::generate().unwrap();
        assert_eq!(a.expose().len(), 64);
        assert!(a.expose().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn an_address_is_blocked_after_too_many_failures() {
        let limiter = FailureLimiter::default();
        let ip: IpAddr = [192, 0, 2, 1].into();
        for _ in 0..DEFAULT_MAX_FAILURES {
            assert!(!limiter.is_blocked(ip));
            limiter.record_failure(ip);
        }
        assert!(limiter.is_blocked(ip));
        assert!(!limiter.is_blocked([192, 0, 2, 2].into()));
    }

    #[test]
    fn the_window_slides_instead_of_resetting() {
        let limiter = FailureLimiter::new(3, Duration::from_millis(300));
        let ip: IpAddr = [192, 0, 2, 1].into();
        limiter.record_failure(ip);
        std::thread::sleep(Duration::from_millis(200));
        limiter.record_failure(ip);
        limiter.record_failure(ip);
        assert!(limiter.is_blocked(ip), "three failures within 300 ms");
        // The first failure ages out; the two later ones still count, so one more blocks
        // again. A fixed window started at the first failure would have reset to zero.
        std::thread::sleep(Duration::from_millis(150));
        assert!(!limiter.is_blocked(ip));
        limiter.record_failure(ip);
        assert!(limiter.is_blocked(ip));
    }

    #[test]
    fn a_zero_limit_never_blocks() {
        let limiter = FailureLimiter::new(0, Duration::from_secs(10));
        let ip: IpAddr = [192, 0, 2, 1].into();
        for _ in 0..100 {
            limiter.record_failure(ip);
        }
        assert!(!limiter.is_blocked(ip));
    }

    #[test]
    fn the_map_stays_bounded() {
        let limiter = FailureLimiter::default();
        for i in 0..(MAX_TRACKED as u32 + 50) {
            limiter.record_failure(IpAddr::from(i.to_be_bytes()));
        }
        assert!(limiter.lock().len() <= MAX_TRACKED);
    }
}
