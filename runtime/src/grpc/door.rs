//! What the gRPC door knows about the server, built once when it starts: which gRPC path
//! names which method, and the answers of reflection.

use std::collections::HashMap;
use std::sync::Arc;

use super::reflection::Reflection;
use crate::method::MethodId;
use crate::reflect::proto_model::{is_exported, service_identifier};
use crate::reflect::schema::ServiceSchema;
use crate::service::Service;

/// A method as the door routes to it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GrpcMethod {
    pub(crate) id: MethodId,
    /// Whether the method takes arguments besides its upload: then the first message of an
    /// upload carries them (in its field 2) and no item.
    pub(crate) has_args: bool,
}

/// The gRPC door of one server.
pub(crate) struct GrpcDoor {
    /// The service's protobuf identifier, then the method's name, to the method: looked up
    /// with the path's two parts as they are, allocating nothing.
    methods: HashMap<String, HashMap<String, GrpcMethod>>,
    /// Services that exist but have no gRPC form (no Protobuf, or types not described), by
    /// protobuf identifier, for a clear refusal.
    unexported: Vec<String>,
    /// Every service's wire name and protobuf identifier, for the health check.
    names: Vec<String>,
    /// `wirecall.Health.check`, when the server serves the health service.
    health_check: Option<MethodId>,
    /// Server reflection's answers, from the exported services' schemas.
    pub(crate) reflection: Reflection,
    pub(crate) package: String,
}

impl GrpcDoor {
    /// The door for `services`, named in gRPC package `package`.
    pub(crate) fn new(services: &[Arc<dyn Service>], package: &str) -> Self {
        let schemas: Vec<ServiceSchema> = services.iter().map(|service| service.schema()).collect();
        let mut methods: HashMap<String, HashMap<String, GrpcMethod>> = HashMap::new();
        let mut unexported = Vec::new();
        let mut names = Vec::new();
        let mut health_check = None;
        for (service, schema) in services.iter().zip(&schemas) {
            let name = service_identifier(&schema.name);
            names.push(schema.name.clone());
            names.push(name.clone());
            if schema.name == HEALTH_SERVICE {
                health_check = service
                    .descriptor()
                    .methods
                    .iter()
                    .find(|method| method.name == "check")
                    .map(|method| method.id);
            }
            if !is_exported(schema) {
                unexported.push(name);
                continue;
            }
            for (descriptor, method) in service.descriptor().methods.iter().zip(&schema.methods) {
                methods.entry(name.clone()).or_default().insert(
                    descriptor.name.to_owned(),
                    GrpcMethod {
                        id: descriptor.id,
                        has_args: !method.args.is_empty(),
                    },
                );
            }
        }
        let exported: Vec<ServiceSchema> = schemas.into_iter().filter(is_exported).collect();
        Self {
            reflection: Reflection::new(&exported, package),
            methods,
            unexported,
            names,
            health_check,
            package: package.to_owned(),
        }
    }

    /// The method a request path (`/package.Service/method`) names. The package is not
    /// checked: a `.proto` exported under any package (`wirecall proto --package`) calls the
    /// same methods.
    pub(crate) fn method(&self, path: &str) -> Result<GrpcMethod, String> {
        let Some((service, method)) = path.strip_prefix('/').and_then(|p| p.split_once('/')) else {
            return Err(format!(
                "`{path}` is not a gRPC path (/package.Service/method)"
            ));
        };
        let service = service.rsplit('.').next().unwrap_or(service);
        if let Some(found) = self
            .methods
            .get(service)
            .and_then(|methods| methods.get(method))
        {
            return Ok(*found);
        }
        if self.unexported.iter().any(|name| name == service) {
            return Err(format!(
                "service {service} is not served over gRPC: it does not speak Protobuf or does \
                 not describe its types"
            ));
        }
        Err(format!(
            "no method {method} in service {service} on this server"
        ))
    }
}

impl GrpcDoor {
    /// Whether the server serves a service of this wire name or protobuf identifier.
    pub(crate) fn serves(&self, name: &str) -> bool {
        self.names.iter().any(|known| known == name)
    }

    /// The health service's `check`, if the server serves it.
    pub(crate) fn health_check(&self) -> Option<MethodId> {
        self.health_check
    }
}

/// The wire name of the built-in health service ([`crate::health`]).
const HEALTH_SERVICE: &str = "wirecall.Health";
