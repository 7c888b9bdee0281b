//! The text form of run-time policies, shared by policy files (`WIRECALL_POLICY_FILE`) and the
//! `WIRECALL_POLICY` variable: one entry per line (or between `;`), a target and `key=value`
//! settings, `#` to the end of a line a comment.
//!
//! ```text
//! UserService.*          timeout=1s
//! UserService.get_user   timeout=300ms retries=2 concurrency=50 breaker=on
//! UserService.find       breaker.min_calls=10 breaker.open=2s
//! UserService.lookup     hedge.delay=20ms hedge.max=3
//! ```
//!
//! The keys are those of the `#[wirecall(..)]` attribute: `timeout`, `retries`,
//! `concurrency`, `breaker` (`on` or `off`), and the breaker's settings `breaker.window`,
//! `breaker.buckets`, `breaker.min_calls`, `breaker.threshold`, `breaker.open` and
//! `breaker.trials` (setting one turns the breaker on; the others keep their defaults);
//! `hedge` (`on` or `off`) and its settings `hedge.delay` and `hedge.max` likewise.

use std::fmt;
use std::time::Duration;

use wirecall_wire::parse_duration;

use super::error::PolicyError;
use super::hedge::{Hedge, HedgeConfig, MAX_HEDGE_ATTEMPTS};
use super::method_policy::{Breaker, MethodPolicy};
use super::target::Target;
use crate::layers::circuit_breaker::config::CircuitBreakerConfig;

/// The entries of `text`, in order. `source` names where the text came from, for errors.
pub(super) fn parse(text: &str, source: &str) -> Result<Vec<(Target, MethodPolicy)>, PolicyError> {
    let mut entries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default();
        for entry in line.split(';') {
            let mut words = entry.split_whitespace();
            let Some(target) = words.next() else { continue };
            let at = |message: String| PolicyError::Syntax {
                source_name: source.to_owned(),
                line: index + 1,
                message,
            };
            let target = Target::parse(target).map_err(at)?;
            let policy = settings(words).map_err(at)?;
            entries.push((target, policy));
        }
    }
    Ok(entries)
}

/// The `key=value` words of one entry.
fn settings<'a>(words: impl Iterator<Item = &'a str>) -> Result<MethodPolicy, String> {
    let mut policy = MethodPolicy::new();
    let mut breaker: Option<CircuitBreakerConfig> = None;
    let mut breaker_off = false;
    let mut hedge: Option<HedgeConfig> = None;
    let mut hedge_off = false;
    let mut any = false;
    for word in words {
        any = true;
        let Some((key, value)) = word.split_once('=') else {
            return Err(format!("`{word}` is not `key=value`"));
        };
        match key {
            "timeout" => policy = policy.with_timeout(duration(key, value)?),
            "retries" => policy = policy.with_retries(number(key, value, 0)?),
            "concurrency" => policy = policy.with_concurrency(number(key, value, 1)?),
            "breaker" => match value {
                "on" | "true" => {
                    breaker.get_or_insert_with(CircuitBreakerConfig::new);
                }
                "off" | "false" => breaker_off = true,
                _ => {
                    return Err(format!(
                        "`breaker={value}`: write `breaker=on` or `breaker=off`"
                    ))
                }
            },
            "hedge" => match value {
                "on" | "true" => {
                    hedge.get_or_insert_with(HedgeConfig::new);
                }
                "off" | "false" => hedge_off = true,
                _ => return Err(format!("`hedge={value}`: write `hedge=on` or `hedge=off`")),
            },
            "hedge.delay" => {
                let config = hedge.unwrap_or_default();
                hedge = Some(config.after(duration(key, value)?));
            }
            "hedge.max" => {
                let attempts = number(key, value, 2)?;
                if attempts > MAX_HEDGE_ATTEMPTS {
                    return Err(format!(
                        "`{key}={value}`: at most {MAX_HEDGE_ATTEMPTS} attempts, the first \
                         included"
                    ));
                }
                hedge = Some(hedge.unwrap_or_default().max_attempts(attempts));
            }
            _ => {
                let Some(setting) = key.strip_prefix("breaker.") else {
                    return Err(format!(
                        "unknown key `{key}`; the keys are timeout, retries, concurrency, \
                         breaker, breaker.{{window, buckets, min_calls, threshold, open, trials}}, \
                         hedge and hedge.{{delay, max}}"
                    ));
                };
                let config = breaker.take().unwrap_or_default();
                breaker = Some(breaker_setting(config, setting, value)?);
            }
        }
    }
    if !any {
        return Err("the target has no settings; write e.g. `timeout=300ms`".to_owned());
    }
    policy = match (hedge, hedge_off) {
        (Some(_), true) => return Err("`hedge=off` with hedge settings: keep one".to_owned()),
        (Some(config), false) => policy.with_hedge(config),
        (None, true) => policy.without_hedge(),
        (None, false) => policy,
    };
    match (breaker, breaker_off) {
        (Some(_), true) => Err("`breaker=off` with breaker settings: keep one".to_owned()),
        (Some(config), false) => {
            config
                .validate()
                .map_err(|err| format!("breaker settings: {err}"))?;
            Ok(policy.with_breaker(config))
        }
        (None, true) => Ok(policy.without_breaker()),
        (None, false) => Ok(policy),
    }
}

fn breaker_setting(
    config: CircuitBreakerConfig,
    setting: &str,
    value: &str,
) -> Result<CircuitBreakerConfig, String> {
    let key = format!("breaker.{setting}");
    Ok(match setting {
        "window" => {
            let buckets = config.buckets();
            config.rolling_window(duration(&key, value)?, buckets)
        }
        "buckets" => {
            let window = config.window();
            config.rolling_window(window, number(&key, value, 1)?)
        }
        "min_calls" => config.minimum_calls(number(&key, value, 1)?),
        "threshold" => {
            let percent: u32 = number(&key, value, 0)?;
            match u8::try_from(percent) {
                Ok(percent) if percent <= 100 => config.error_threshold_percent(percent),
                _ => return Err(format!("`{key}={value}`: a percentage, 0 to 100")),
            }
        }
        "open" => config.open_window(duration(&key, value)?),
        "trials" => config.trial_calls(number(&key, value, 1)?),
        _ => {
            return Err(format!(
                "unknown breaker setting `{key}`; the settings are window, buckets, min_calls, \
                 threshold, open and trials"
            ))
        }
    })
}

fn duration(key: &str, value: &str) -> Result<Duration, String> {
    parse_duration(value).map_err(|err| format!("`{key}={value}`: {err}"))
}

fn number(key: &str, value: &str, min: u32) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(number) if number >= min => Ok(number),
        _ => Err(format!("`{key}={value}`: a whole number, at least {min}")),
    }
}

/// `300ms`, `2s`, `1.5s`: the shortest form [`parse_duration`] reads back.
pub(super) fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if duration.subsec_nanos() % 1_000_000 != 0 {
        return format!("{}s", duration.as_secs_f64());
    }
    if millis % 1_000 != 0 {
        return format!("{millis}ms");
    }
    let secs = duration.as_secs();
    if secs % 3_600 == 0 {
        format!("{}h", secs / 3_600)
    } else if secs % 60 == 0 {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

/// The settings of `config` that differ from the defaults, as `breaker.key=value` words.
pub(super) fn breaker_settings(config: &CircuitBreakerConfig) -> Vec<String> {
    let defaults = CircuitBreakerConfig::new();
    let mut words = Vec::new();
    if config.window() != defaults.window() {
        words.push(format!(
            "breaker.window={}",
            format_duration(config.window())
        ));
    }
    if config.buckets() != defaults.buckets() {
        words.push(format!("breaker.buckets={}", config.buckets()));
    }
    if config.min_calls() != defaults.min_calls() {
        words.push(format!("breaker.min_calls={}", config.min_calls()));
    }
    if config.threshold_percent() != defaults.threshold_percent() {
        words.push(format!("breaker.threshold={}", config.threshold_percent()));
    }
    if config.open_for() != defaults.open_for() {
        words.push(format!(
            "breaker.open={}",
            format_duration(config.open_for())
        ));
    }
    if config.trials() != defaults.trials() {
        words.push(format!("breaker.trials={}", config.trials()));
    }
    words
}

/// The text form of policy files and `WIRECALL_POLICY` (`timeout=300ms retries=2
/// hedge=on concurrency=50 breaker=on`), also what the CLI's `describe` prints; `-` for a policy that
/// sets nothing. Breaker settings other than the defaults are spelled out
/// (`breaker.min_calls=10`).
impl fmt::Display for MethodPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(timeout) = self.timeout() {
            parts.push(format!("timeout={}", format_duration(timeout)));
        }
        if let Some(retries) = self.retries() {
            parts.push(format!("retries={retries}"));
        }
        match self.hedge() {
            None => {}
            Some(Hedge::Off) => parts.push("hedge=off".to_owned()),
            Some(Hedge::On(config)) => {
                parts.push("hedge=on".to_owned());
                if let Some(delay) = config.delay() {
                    parts.push(format!("hedge.delay={}", format_duration(delay)));
                }
                if config.attempts() != HedgeConfig::new().attempts() {
                    parts.push(format!("hedge.max={}", config.attempts()));
                }
            }
        }
        if let Some(limit) = self.concurrency() {
            parts.push(format!("concurrency={limit}"));
        }
        match self.breaker() {
            None => {}
            Some(Breaker::Off) => parts.push("breaker=off".to_owned()),
            Some(Breaker::On(config)) => {
                parts.push("breaker=on".to_owned());
                parts.extend(breaker_settings(config));
            }
        }
        if parts.is_empty() {
            return f.write_str("-");
        }
        f.write_str(&parts.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_in_order_with_comments_and_semicolons() {
        let text =
            "# defaults\nS.* timeout=1s ; S.m timeout=300ms retries=2\n\nS.n breaker.min_calls=5";
        let entries = parse(text, "test").unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].1.timeout(), Some(Duration::from_secs(1)));
        assert_eq!(entries[1].1.retries(), Some(2));
        let config = entries[2].1.breaker_config().unwrap();
        assert_eq!(config.min_calls(), 5);
    }

    #[test]
    fn bad_entries_name_their_line_and_what_to_write() {
        for (text, needle) in [
            ("S.m", "no settings"),
            ("S.m timeout", "key=value"),
            ("S.m timeout=0s", "zero"),
            ("S.m timeout=300", "unit"),
            ("S.m concurrency=0", "at least 1"),
            ("S.m retries=-1", "whole number"),
            ("S.m colour=red", "unknown key"),
            ("S.m breaker=maybe", "breaker=on"),
            ("S.m breaker=off breaker.trials=2", "keep one"),
            ("S.m breaker.threshold=150", "0 to 100"),
            ("S.m hedge=maybe", "hedge=on"),
            ("S.m hedge.max=1", "at least 2"),
            ("S.m hedge.max=6", "at most 5"),
            ("S.m hedge=off hedge.delay=5ms", "keep one"),
            ("Sm timeout=1s", "Service.method"),
        ] {
            let err = parse(&format!("\n{text}"), "WIRECALL_POLICY")
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(err.contains("line 2"), "{text}: {err}");
        }
    }

    #[test]
    fn the_display_form_reads_back_as_the_same_policy() {
        let policy = MethodPolicy::new()
            .with_timeout(Duration::from_millis(1_500))
            .with_retries(1)
            .with_breaker(
                CircuitBreakerConfig::new()
                    .minimum_calls(4)
                    .open_window(Duration::from_secs(60)),
            );
        let text = format!("S.m {policy}");
        assert_eq!(
            text,
            "S.m timeout=1500ms retries=1 breaker=on breaker.min_calls=4 breaker.open=1m"
        );
        assert_eq!(parse(&text, "test").unwrap()[0].1, policy);
    }

    #[test]
    fn hedge_settings_read_back_and_turn_hedging_on() {
        let entries = parse(
            "S.a hedge=on; S.b hedge.delay=20ms hedge.max=3; S.c hedge=off; S.d hedge.max=2",
            "test",
        )
        .unwrap();
        let policies: Vec<_> = entries.into_iter().map(|(_, policy)| policy).collect();
        assert_eq!(policies[0].hedge(), Some(&Hedge::On(HedgeConfig::new())));
        let fixed = HedgeConfig::new()
            .after(Duration::from_millis(20))
            .max_attempts(3);
        assert_eq!(policies[1].hedge(), Some(&Hedge::On(fixed)));
        assert_eq!(policies[2].hedge(), Some(&Hedge::Off));
        assert_eq!(policies[3].hedge(), Some(&Hedge::On(HedgeConfig::new())));
        for policy in policies {
            let text = format!("S.m {policy}");
            assert_eq!(parse(&text, "test").unwrap()[0].1, policy, "{text}");
        }
    }
}
