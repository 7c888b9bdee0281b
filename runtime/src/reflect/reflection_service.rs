//! The built-in reflection service, declared with `#[wirecall::service]` like any other: it
//! travels in every codec and describes itself.

use std::sync::Arc;

use bytes::Bytes;

use super::descriptors::{descriptor_set, DescriptorSetError};
use super::schema::{ReflectionError, ServiceSchema, ServiceSummary};

/// The Protobuf package of the messages `descriptors` describes: the gRPC door's default, so
/// the names a client sees are those of the gRPC door and of `wirecall proto`. The package
/// is not on the wire: it only names the messages.
pub const DESCRIPTORS_PACKAGE: &str = "wirecall.services";

/// Lists and describes the services a server serves. Every server serves it under the name
/// `wirecall.Reflection` unless `ServerBuilder::reflection(false)` turns it off.
#[wirecall_macros::service(name = "wirecall.Reflection")]
pub trait Reflection {
    /// The services this server serves, this one included, in the order they were added.
    #[idempotent]
    async fn list_services(&self) -> Vec<ServiceSummary>;

    /// The schema of `service`: its methods, their argument and reply types, and every
    /// named type they use.
    #[idempotent]
    async fn describe(&self, service: String) -> Result<ServiceSchema, ReflectionError>;

    /// The Protobuf messages of `service`: an encoded `google.protobuf.FileDescriptorSet`
    /// whose first file (package [`DESCRIPTORS_PACKAGE`]) holds the service and the messages
    /// of its methods, followed by the well-known files it imports. A client builds dynamic
    /// messages from it to speak the Protobuf codec without a `.proto` file.
    #[idempotent]
    async fn descriptors(&self, service: String) -> Result<Bytes, ReflectionError>;
}

/// The server's implementation of [`Reflection`]: answers from the schemas taken when the
/// server started.
#[derive(Debug, Clone, Default)]
pub struct ReflectionService {
    schemas: Arc<Vec<ServiceSchema>>,
}

impl ReflectionService {
    /// Answers with `schemas`.
    pub fn new(schemas: Vec<ServiceSchema>) -> Self {
        Self {
            schemas: Arc::new(schemas),
        }
    }

    /// The schemas it answers with.
    pub fn schemas(&self) -> &[ServiceSchema] {
        &self.schemas
    }
}

impl Reflection for ReflectionService {
    async fn list_services(&self) -> Vec<ServiceSummary> {
        self.schemas.iter().map(ServiceSchema::summary).collect()
    }

    async fn describe(&self, service: String) -> Result<ServiceSchema, ReflectionError> {
        self.schemas
            .iter()
            .find(|schema| schema.name == service)
            .cloned()
            .ok_or(ReflectionError::UnknownService(service))
    }

    async fn descriptors(&self, service: String) -> Result<Bytes, ReflectionError> {
        let schema = self.describe(service).await?;
        descriptor_set(&schema, DESCRIPTORS_PACKAGE)
            .map(Bytes::from)
            .map_err(|error| ReflectionError::NoProtobufForm {
                reason: match error {
                    DescriptorSetError::NotExported => {
                        "it does not speak Protobuf or does not describe its types".to_owned()
                    }
                    DescriptorSetError::NoProtoForm(error) => error.to_string(),
                },
                service: schema.name,
            })
    }
}

/// The reflection service for a server serving `services`: their schemas, then its own.
pub(crate) fn reflection_for(
    services: &[Arc<dyn crate::Service>],
) -> ReflectionServer<ReflectionService> {
    let own = crate::Service::schema(&ReflectionServer::new(ReflectionService::default()));
    let mut schemas: Vec<ServiceSchema> = services.iter().map(|service| service.schema()).collect();
    schemas.push(own);
    ReflectionServer::new(ReflectionService::new(schemas))
}
