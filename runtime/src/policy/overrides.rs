//! [`Policies`]: run-time overrides of declared policies, from code, a policy file or the
//! environment, and the order in which they win.

use std::path::Path;

use super::error::PolicyError;
use super::method_policy::MethodPolicy;
use super::target::Target;
use super::text;
use crate::client::declared::Method;

/// The environment variable naming a policy file, read when a channel is built.
pub const POLICY_FILE_ENV: &str = "WIRECALL_POLICY_FILE";
/// The environment variable holding policy entries (`;` between them), read when a channel is
/// built, after the file.
pub const POLICY_ENV: &str = "WIRECALL_POLICY";

/// Overrides of the policies methods declare in their trait, by target: `Service.method` for
/// one method, `Service.*` for every method of a service (wire names).
///
/// A channel resolves a method's policy once, on its first call, setting by setting, from
/// the lowest to the highest of:
/// 1. the trait's `#[wirecall(..)]` defaults;
/// 2. the method's `#[wirecall(..)]`;
/// 3. the policies given in code ([`ChannelBuilder::policies`](crate::ChannelBuilder::policies));
/// 4. the file named by `WIRECALL_POLICY_FILE`;
/// 5. `WIRECALL_POLICY`.
///
/// Within one of them a `Service.method` entry wins over a `Service.*` one, and a later entry
/// over an earlier one. So operators can change a deployed client's policies without a
/// rebuild, and code can still set what the trait does not. `retries` set for a method that
/// is not `#[idempotent]` are ignored (with a warning): replaying a call that may have run is
/// the method's decision, not the deployment's.
///
/// ```
/// use std::time::Duration;
/// use wirecall_runtime::policy::{MethodPolicy, Policies};
///
/// let policies = Policies::new()
///     .set("UserService.*", MethodPolicy::new().with_timeout(Duration::from_secs(1)))?
///     .then(Policies::parse("UserService.get_user timeout=300ms concurrency=50")?);
/// # let _ = policies;
/// # Ok::<(), wirecall_runtime::policy::PolicyError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Policies {
    entries: Vec<Entry>,
}

#[derive(Clone, Debug)]
struct Entry {
    /// Entries of a higher rank win; [`Policies::then`] ranks its argument higher.
    rank: u32,
    target: Target,
    policy: MethodPolicy,
}

impl Policies {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `policy` for `target` (`Service.method` or `Service.*`), over the entries already
    /// here.
    pub fn set(mut self, target: &str, policy: MethodPolicy) -> Result<Self, PolicyError> {
        let target = Target::parse(target).map_err(|_| PolicyError::Target {
            target: target.to_owned(),
        })?;
        let rank = self.top_rank();
        self.entries.push(Entry {
            rank,
            target,
            policy,
        });
        Ok(self)
    }

    /// The entries of a policy text (the format of policy files, see the book's Resilience
    /// chapter).
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        Self::parse_from(text, "policy text")
    }

    fn parse_from(text: &str, source: &str) -> Result<Self, PolicyError> {
        let entries = text::parse(text, source)?
            .into_iter()
            .map(|(target, policy)| Entry {
                rank: 0,
                target,
                policy,
            })
            .collect();
        Ok(Self { entries })
    }

    /// The entries of the policy file at `path`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, PolicyError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|cause| PolicyError::File {
            path: path.to_owned(),
            cause,
        })?;
        Self::parse_from(&text, &path.display().to_string())
    }

    /// The file named by `WIRECALL_POLICY_FILE`, then `WIRECALL_POLICY` over it; nothing
    /// when neither is set. Channels read it when they are built.
    pub fn from_env() -> Result<Self, PolicyError> {
        let mut policies = Self::new();
        if let Some(path) = std::env::var_os(POLICY_FILE_ENV).filter(|path| !path.is_empty()) {
            policies = policies.then(Self::from_file(path)?);
        }
        if let Ok(text) = std::env::var(POLICY_ENV) {
            policies = policies.then(Self::parse_from(&text, POLICY_ENV)?);
        }
        Ok(policies)
    }

    /// These policies with `higher` over them: where both set something, `higher` wins.
    pub fn then(mut self, higher: Policies) -> Self {
        let base = self.top_rank() + 1;
        self.entries
            .extend(higher.entries.into_iter().map(|entry| Entry {
                rank: base + entry.rank,
                ..entry
            }));
        self
    }

    /// Whether there is no override.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The policy of `method`: its declared policy under every matching override, in the
    /// documented order.
    pub fn resolve(&self, method: &Method) -> MethodPolicy {
        let mut matching: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|entry| entry.target.matches(method.service(), method.name()))
            .collect();
        // Stable: within a rank and a specificity, later entries stay later.
        matching.sort_by_key(|entry| (entry.rank, entry.target.is_method()));
        matching
            .into_iter()
            .fold(method.policy().clone(), |under, entry| {
                entry.policy.over(&under)
            })
    }

    fn top_rank(&self) -> u32 {
        self.entries
            .iter()
            .map(|entry| entry.rank)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    static DECLARED: Method = Method::new("pkg.Users", "get").idempotent().with_policy(
        MethodPolicy::new()
            .with_timeout(Duration::from_secs(5))
            .with_retries(1),
    );

    #[test]
    fn a_method_entry_beats_a_service_entry_of_the_same_rank_whatever_their_order() {
        let policies =
            Policies::parse("pkg.Users.get timeout=300ms\npkg.Users.* timeout=1s concurrency=8")
                .unwrap();
        let policy = policies.resolve(&DECLARED);
        assert_eq!(policy.timeout(), Some(Duration::from_millis(300)));
        assert_eq!(policy.concurrency(), Some(8));
        assert_eq!(
            policy.retries(),
            Some(1),
            "declared settings stay unless overridden"
        );
    }

    #[test]
    fn a_higher_rank_wins_even_with_a_service_wide_entry() {
        let code = Policies::new()
            .set(
                "pkg.Users.get",
                MethodPolicy::new().with_timeout(Duration::from_millis(300)),
            )
            .unwrap();
        let env = Policies::parse("pkg.Users.* timeout=2s").unwrap();
        let policy = code.then(env).resolve(&DECLARED);
        assert_eq!(policy.timeout(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn other_services_and_methods_are_left_alone() {
        let policies = Policies::parse("Users.get timeout=1s\npkg.Users.put timeout=1s").unwrap();
        assert_eq!(policies.resolve(&DECLARED), *DECLARED.policy());
    }

    #[test]
    fn targets_must_name_a_service_and_a_method() {
        for target in ["Users", ".get", "Users.", ""] {
            assert!(
                Policies::new().set(target, MethodPolicy::new()).is_err(),
                "{target}"
            );
        }
    }
}
