//! The `#[wirecall(..)]` policy attribute of a service method or of the trait (its defaults
//! for every method): parsing its keys into a [`PolicyDef`], with each value checked on its
//! own span (durations through `wirecall_wire::parse_duration`, as the runtime reads policy
//! files), and generating the `MethodPolicy` constant expression.
//!
//! ```text
//! #[wirecall(timeout = "300ms", retries = 2, concurrency = 50, breaker, fallback = path)]
//! #[wirecall(breaker(window = "10s", buckets = 10, min_calls = 20, threshold = 50, open = "5s", trials = 3))]
//! #[wirecall(breaker = false)]
//! #[wirecall(hedge, hedge = false, hedge(delay = "20ms", max = 3))]
//! ```

use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::meta::ParseNestedMeta;
use syn::{Attribute, LitBool, LitInt, LitStr};

use crate::crate_path::CratePath;
use crate::errors::Errors;
use wirecall_wire::parse_duration;

/// What one or more `#[wirecall(..)]` attributes set.
#[derive(Default)]
pub struct PolicyDef {
    /// The first attribute's tokens, for errors about the whole policy.
    pub attr: Option<TokenStream>,
    pub timeout: Option<Duration>,
    /// With the span of the key, for "needs `#[idempotent]`".
    pub retries: Option<(u32, Span)>,
    /// With the span of the key, for "needs `#[idempotent]`".
    pub hedge: Option<(HedgeDef, Span)>,
    pub concurrency: Option<u32>,
    pub breaker: Option<BreakerDef>,
    /// `fallback = path`: called with the error and the arguments when the call fails for a
    /// transport reason.
    pub fallback: Option<syn::Path>,
}

/// `breaker`, `breaker = false` or `breaker(..)`.
pub enum BreakerDef {
    Off,
    On(BreakerSettings),
}

/// `hedge`, `hedge = false` or `hedge(delay = "20ms", max = 3)`; an unset delay is the
/// channel's adaptive one, an unset `max` the runtime's default.
pub enum HedgeDef {
    Off,
    On {
        delay: Option<Duration>,
        max: Option<u32>,
    },
}

/// The most attempts `hedge(max = ..)` takes, as the runtime's `MAX_HEDGE_ATTEMPTS`.
const MAX_HEDGE_ATTEMPTS: u32 = 5;

/// The settings in `breaker(..)`; unset ones keep the runtime's defaults.
#[derive(Default)]
pub struct BreakerSettings {
    pub window: Option<Duration>,
    pub buckets: Option<u32>,
    pub min_calls: Option<u32>,
    pub threshold: Option<u8>,
    pub open: Option<Duration>,
    pub trials: Option<u32>,
}

const KEYS: &str = "the keys are `timeout = \"300ms\"`, `retries = 2`, `concurrency = 50`, \
                    `breaker` (or `breaker = false`, or `breaker(min_calls = 20, ..)`), \
                    `hedge` (or `hedge = false`, or `hedge(delay = \"20ms\", max = 3)`) and \
                    `fallback = path::to::function`";

/// Takes every `#[wirecall(..)]` out of `attrs` and reads them into one policy; problems are
/// pushed onto `errors` (the rest of the attribute is still read).
pub fn take_policy(attrs: &mut Vec<Attribute>, errors: &mut Errors) -> PolicyDef {
    let mut policy = PolicyDef::default();
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in attrs.drain(..) {
        if !attr.path().is_ident("wirecall") {
            kept.push(attr);
            continue;
        }
        policy.attr.get_or_insert_with(|| attr.to_token_stream());
        if let Err(err) = attr.parse_nested_meta(|meta| read_key(&mut policy, &meta, errors)) {
            errors.push(err);
        }
    }
    *attrs = kept;
    policy
}

fn read_key(
    policy: &mut PolicyDef,
    meta: &ParseNestedMeta,
    errors: &mut Errors,
) -> syn::Result<()> {
    let key = key_name(meta);
    let twice = || meta.error(format!("`{key}` is given twice; keep one"));
    match key.as_str() {
        "timeout" => {
            let value = duration(meta, errors)?;
            if policy.timeout.is_some() {
                return Err(twice());
            }
            policy.timeout = value;
        }
        "retries" => {
            let value = number(meta, 0, "", errors)?;
            if policy.retries.is_some() {
                return Err(twice());
            }
            policy.retries = value.map(|n| (n, meta.path.segments[0].ident.span()));
        }
        "concurrency" => {
            let value = number(meta, 1, "zero would refuse every call", errors)?;
            if policy.concurrency.is_some() {
                return Err(twice());
            }
            policy.concurrency = value;
        }
        "breaker" => {
            if policy.breaker.is_some() {
                return Err(twice());
            }
            policy.breaker = Some(breaker(meta, errors)?);
        }
        "hedge" => {
            if policy.hedge.is_some() {
                return Err(twice());
            }
            let span = meta.path.segments[0].ident.span();
            policy.hedge = Some((hedge(meta, errors)?, span));
        }
        "fallback" => {
            let path: syn::Path = meta.value()?.parse().map_err(|err| {
                syn::Error::new(
                    err.span(),
                    "write the fallback as a path to a function, e.g. `fallback = cached_user` \
                     or `fallback = Fallbacks::get_user`",
                )
            })?;
            if policy.fallback.is_some() {
                return Err(twice());
            }
            policy.fallback = Some(path);
        }
        _ => return Err(meta.error(format!("unknown policy key; {KEYS}"))),
    }
    Ok(())
}

/// `key = "300ms"`; a refused value is pushed onto `errors` on its own span (`Ok(None)`), so
/// the other keys are still read.
fn duration(meta: &ParseNestedMeta, errors: &mut Errors) -> syn::Result<Option<Duration>> {
    let lit: LitStr = meta.value()?.parse().map_err(|err| {
        syn::Error::new(
            err.span(),
            "write the duration as a string with a unit, e.g. \"300ms\", \"2s\" or \"1m\"",
        )
    })?;
    match parse_duration(&lit.value()) {
        Ok(duration) => Ok(Some(duration)),
        Err(err) => {
            errors.spanned(&lit, err);
            Ok(None)
        }
    }
}

/// `key = 2`, at least `min`. `zero` says why 0 is refused, for a key whose `min` is 1: each
/// key has its own reason.
fn number(
    meta: &ParseNestedMeta,
    min: u32,
    zero: &str,
    errors: &mut Errors,
) -> syn::Result<Option<u32>> {
    let value = meta.value()?;
    if value.peek(syn::Token![-]) {
        let negative: syn::ExprUnary = value.parse()?;
        errors.spanned(
            &negative,
            format!("cannot be negative; write {}", whole_number(min)),
        );
        return Ok(None);
    }
    let lit: LitInt = value
        .parse()
        .map_err(|err| syn::Error::new(err.span(), format!("write {}", whole_number(min))))?;
    match lit.base10_parse::<u32>() {
        Ok(n) if n >= min => Ok(Some(n)),
        Ok(0) => {
            errors.spanned(&lit, format!("{zero}; give at least 1"));
            Ok(None)
        }
        _ => {
            errors.spanned(&lit, format!("write {}", whole_number(min)));
            Ok(None)
        }
    }
}

fn whole_number(min: u32) -> String {
    match min {
        0 => "a whole number, 0 or more".to_owned(),
        _ => format!("a whole number, at least {min}"),
    }
}

/// The name of a key (empty for a path that is not one identifier: no key has such a name).
fn key_name(meta: &ParseNestedMeta) -> String {
    meta.path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// `key = true` or `key = false` of a switch key (`breaker`, `hedge`); `None` when the key is
/// bare or takes settings in `(..)`. `forms` lists what may be written, for the error.
fn switch(meta: &ParseNestedMeta, forms: &str) -> syn::Result<Option<bool>> {
    if !meta.input.peek(syn::Token![=]) {
        return Ok(None);
    }
    let on: LitBool = meta
        .value()?
        .parse()
        .map_err(|err| syn::Error::new(err.span(), format!("write {forms}")))?;
    Ok(Some(on.value))
}

fn breaker(meta: &ParseNestedMeta, errors: &mut Errors) -> syn::Result<BreakerDef> {
    match switch(meta, "`breaker`, `breaker = false` or `breaker(..)`")? {
        Some(true) => return Ok(BreakerDef::On(BreakerSettings::default())),
        Some(false) => return Ok(BreakerDef::Off),
        None => {}
    }
    let mut settings = BreakerSettings::default();
    if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| {
            let key = key_name(&inner);
            match key.as_str() {
                "window" => settings.window = duration(&inner, errors)?,
                "open" => settings.open = duration(&inner, errors)?,
                "buckets" => {
                    let zero = "the window is counted in buckets: it needs at least one";
                    settings.buckets = number(&inner, 1, zero, errors)?;
                }
                "min_calls" => {
                    let zero = "min_calls is how many calls the window must hold before their \
                                failure rate may open the circuit: with 0, the first failed \
                                call would open it";
                    settings.min_calls = number(&inner, 1, zero, errors)?;
                }
                "trials" => {
                    let zero = "trials is how many calls an open circuit lets through to test \
                                the endpoint: with 0, it could never close again";
                    settings.trials = number(&inner, 1, zero, errors)?;
                }
                "threshold" => {
                    settings.threshold = match number(&inner, 0, "", errors)? {
                        Some(n) if n <= 100 => Some(n as u8),
                        Some(_) => {
                            return Err(inner.error(
                                "the threshold is the percentage of failed calls at which the \
                                 circuit opens, 0 to 100",
                            ))
                        }
                        None => None,
                    }
                }
                _ => {
                    return Err(inner.error(
                        "unknown breaker setting; the settings are `window = \"10s\"`, \
                         `buckets = 10`, `min_calls = 20`, `threshold = 50` (percent), \
                         `open = \"5s\"` and `trials = 3`",
                    ))
                }
            }
            Ok(())
        })?;
    }
    Ok(BreakerDef::On(settings))
}

fn hedge(meta: &ParseNestedMeta, errors: &mut Errors) -> syn::Result<HedgeDef> {
    let forms = "`hedge`, `hedge = false` or `hedge(delay = \"20ms\", max = 3)`";
    match switch(meta, forms)? {
        Some(true) => {
            return Ok(HedgeDef::On {
                delay: None,
                max: None,
            })
        }
        Some(false) => return Ok(HedgeDef::Off),
        None => {}
    }
    let (mut delay, mut max) = (None, None);
    if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| {
            let key = key_name(&inner);
            match key.as_str() {
                "delay" => delay = duration(&inner, errors)?,
                "max" => {
                    let lit: LitInt = inner.value()?.parse()?;
                    match lit.base10_parse::<u32>() {
                        Ok(n) if (2..=MAX_HEDGE_ATTEMPTS).contains(&n) => max = Some(n),
                        _ => errors.spanned(
                            &lit,
                            format!(
                                "`max` counts the attempts, the first included: 2 (one copy) \
                                 to {MAX_HEDGE_ATTEMPTS}; to send no copy, write \
                                 `hedge = false`"
                            ),
                        ),
                    }
                }
                _ => {
                    return Err(inner.error(
                        "unknown hedge setting; the settings are `delay = \"20ms\"` (without \
                         it, the delay adapts to the method's latency) and `max = 3` (attempts, \
                         the first included)",
                    ))
                }
            }
            Ok(())
        })?;
    }
    Ok(HedgeDef::On { delay, max })
}

impl PolicyDef {
    /// Whether no key was given.
    pub fn is_empty(&self) -> bool {
        self.timeout.is_none()
            && self.retries.is_none()
            && self.hedge.is_none()
            && self.concurrency.is_none()
            && self.breaker.is_none()
            && self.fallback.is_none()
    }

    /// The `MethodPolicy` constant of a method: its own settings over `defaults` (the
    /// trait's); `retries` and `hedge` only when the method is idempotent (the trait's
    /// defaults apply to idempotent methods only).
    pub fn method_policy_expr(
        &self,
        defaults: &PolicyDef,
        idempotent: bool,
        krate: &CratePath,
    ) -> TokenStream {
        let private = quote!(#krate::__private);
        let mut expr = quote!(#private::MethodPolicy::new());
        if let Some(timeout) = self.timeout.or(defaults.timeout) {
            let duration = duration_expr(timeout, krate);
            expr = quote!(#expr.with_timeout(#duration));
        }
        if idempotent {
            if let Some((retries, _)) = self.retries.or(defaults.retries) {
                expr = quote!(#expr.with_retries(#retries));
            }
            match self.hedge.as_ref().or(defaults.hedge.as_ref()) {
                None => {}
                Some((HedgeDef::Off, _)) => expr = quote!(#expr.without_hedge()),
                Some((HedgeDef::On { delay, max }, _)) => {
                    let mut config = quote!(#private::HedgeConfig::new());
                    if let Some(delay) = delay {
                        let delay = duration_expr(*delay, krate);
                        config = quote!(#config.after(#delay));
                    }
                    if let Some(max) = max {
                        config = quote!(#config.max_attempts(#max));
                    }
                    expr = quote!(#expr.with_hedge(#config));
                }
            }
        }
        if let Some(limit) = self.concurrency.or(defaults.concurrency) {
            expr = quote!(#expr.with_concurrency(#limit));
        }
        match self.breaker.as_ref().or(defaults.breaker.as_ref()) {
            None => {}
            Some(BreakerDef::Off) => expr = quote!(#expr.without_breaker()),
            Some(BreakerDef::On(settings)) => {
                let config = settings.config_expr(krate);
                expr = quote!(#expr.with_breaker(#config));
            }
        }
        expr
    }
}

impl BreakerSettings {
    fn config_expr(&self, krate: &CratePath) -> TokenStream {
        let config = quote!(#krate::__private::CircuitBreakerConfig);
        let mut expr = quote!(#config::new());
        if self.window.is_some() || self.buckets.is_some() {
            let window = match self.window {
                Some(window) => duration_expr(window, krate),
                None => quote!(#config::new().window()),
            };
            let buckets = match self.buckets {
                Some(buckets) => quote!(#buckets),
                None => quote!(#config::new().buckets()),
            };
            expr = quote!(#expr.rolling_window(#window, #buckets));
        }
        if let Some(calls) = self.min_calls {
            expr = quote!(#expr.minimum_calls(#calls));
        }
        if let Some(percent) = self.threshold {
            expr = quote!(#expr.error_threshold_percent(#percent));
        }
        if let Some(open) = self.open {
            let open = duration_expr(open, krate);
            expr = quote!(#expr.open_window(#open));
        }
        if let Some(trials) = self.trials {
            expr = quote!(#expr.trial_calls(#trials));
        }
        expr
    }
}

fn duration_expr(duration: Duration, krate: &CratePath) -> TokenStream {
    let secs = duration.as_secs();
    let nanos = duration.subsec_nanos();
    quote!(#krate::__private::Duration::new(#secs, #nanos))
}
