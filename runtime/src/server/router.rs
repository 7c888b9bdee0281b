//! Routes method ids to the services that own them, built once when the server starts.

use std::sync::Arc;

use crate::error::Error;
use crate::id_hash::IdMap;
use crate::method::{MethodDescriptor, MethodId};
use crate::server::metrics::RouteMetrics;
use crate::service::Service;

/// One routable method.
pub(crate) struct Route {
    pub(crate) service: Arc<dyn Service>,
    /// Where the service is in the router's list: what a call carries to its dispatcher, so
    /// the method is looked up once per call.
    pub(crate) service_index: usize,
    pub(crate) method: &'static MethodDescriptor,
    pub(crate) metrics: Arc<RouteMetrics>,
}

impl Route {
    /// `Service.method`, for logs and errors.
    pub(crate) fn full_name(&self) -> String {
        format!("{}.{}", self.service.descriptor().name, self.method.name)
    }
}

#[derive(Default)]
pub(crate) struct Router {
    routes: IdMap<MethodId, Route>,
    services: Vec<Arc<dyn Service>>,
}

impl Router {
    /// Indexes every method of every service; two methods with one id are a configuration
    /// error (two services with the same name, or a hash collision).
    pub(crate) fn build(services: &[Arc<dyn Service>]) -> Result<Self, Error> {
        let mut routes: IdMap<MethodId, Route> = IdMap::default();
        for (service_index, service) in services.iter().enumerate() {
            for method in service.descriptor().methods {
                let route = Route {
                    service: Arc::clone(service),
                    service_index,
                    method,
                    metrics: Arc::new(RouteMetrics::new(service.descriptor().name, method.name)),
                };
                if let Some(existing) = routes.get(&method.id) {
                    return Err(Error::Config(format!(
                        "method id {} of {} collides with {}; give one service another name \
                         with #[wirecall::service(name = \"...\")] or rename a method",
                        method.id,
                        route.full_name(),
                        existing.full_name()
                    )));
                }
                routes.insert(method.id, route);
            }
        }
        Ok(Self {
            routes,
            services: services.to_vec(),
        })
    }

    /// The service at `index` in the router's list (see [`Route::service_index`]).
    #[inline]
    pub(crate) fn service(&self, index: usize) -> Option<&Arc<dyn Service>> {
        self.services.get(index)
    }

    pub(crate) fn get(&self, method: MethodId) -> Option<&Route> {
        self.routes.get(&method)
    }
}
