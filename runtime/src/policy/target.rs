//! [`Target`]: what a run-time policy entry applies to, `Service.method` or `Service.*`.

/// What an entry applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Target {
    service: String,
    /// `None` for `Service.*`.
    method: Option<String>,
}

impl Target {
    /// `Service.method` or `Service.*`; the service's wire name may itself contain dots
    /// (`pkg.UserService.get_user`): the method is what follows the last one.
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let refused =
            || format!("`{text}` is not a policy target; write `Service.method` or `Service.*`");
        let (service, method) = text.rsplit_once('.').ok_or_else(refused)?;
        if service.is_empty() || method.is_empty() {
            return Err(refused());
        }
        Ok(Self {
            service: service.to_owned(),
            method: (method != "*").then(|| method.to_owned()),
        })
    }

    /// Whether it names one method (`Service.method`) rather than a whole service.
    pub(super) fn is_method(&self) -> bool {
        self.method.is_some()
    }

    /// Whether it names `method` of `service` (wire names).
    pub(super) fn matches(&self, service: &str, method: &str) -> bool {
        self.service == service && self.method.as_deref().is_none_or(|named| named == method)
    }
}
