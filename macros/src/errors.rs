//! Collecting errors so that the user sees every problem of one item in one build, as
//! separate compiler errors on their own spans (`syn::Error::combine`).

use quote::ToTokens;

/// The errors found so far; empty until the first [`push`](Errors::push).
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    /// Adds `error` after the ones already collected.
    pub fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(first) => first.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// Adds an error with `message` on the span of `tokens`.
    pub fn spanned(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// The errors collected, combined (`None`: none).
    pub fn into_error(self) -> Option<syn::Error> {
        self.0
    }

    /// `Ok` when nothing was collected, otherwise every error combined.
    pub fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}
