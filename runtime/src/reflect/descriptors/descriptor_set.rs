//! One service's Protobuf messages as an encoded `FileDescriptorSet`: what a client needs to
//! build dynamic messages and speak the Protobuf codec without a `.proto` file.

use prost::Message as _;
use prost_types::FileDescriptorSet;

use super::services_file::file_descriptors;
use crate::reflect::proto_model::is_exported;
use crate::reflect::{ProtoFileError, ServiceSchema};

/// Why a service has no descriptors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DescriptorSetError {
    /// It does not speak Protobuf or does not describe its types.
    NotExported,
    /// Its types have no `.proto` form.
    NoProtoForm(ProtoFileError),
}

/// The files of `schema` exported in `package`, encoded as a `FileDescriptorSet`: the
/// services' file first, then each well-known file it imports, so that a descriptor pool
/// that adds them in reverse order finds every import.
pub(crate) fn descriptor_set(
    schema: &ServiceSchema,
    package: &str,
) -> Result<Vec<u8>, DescriptorSetError> {
    if !is_exported(schema) {
        return Err(DescriptorSetError::NotExported);
    }
    let file = file_descriptors(std::slice::from_ref(schema), package)
        .map_err(DescriptorSetError::NoProtoForm)?;
    Ok(FileDescriptorSet { file }.encode_to_vec())
}

#[cfg(test)]
#[path = "descriptor_set_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "python_fixture_tests.rs"]
mod python_fixture_tests;
