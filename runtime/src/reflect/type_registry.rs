//! [`Reflect`], the schema every type that travels has, the [`TypeRegistry`] that collects the
//! named types of one schema, and the helpers generated code builds schemas with.

use std::any::TypeId;
use std::collections::{HashMap, HashSet};

use super::schema::{
    EnumValue, FieldSchema, MethodSchema, ReplySchema, ServiceSchema, ServiceSummary, TypeDef,
    TypeKind, TypeRef, VariantSchema, VariantShape,
};

/// A type whose schema is known at compile time: every type that can travel in a wirecall
/// message. `#[wirecall::message]` implements it for structs and enums.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no wirecall schema",
    label = "add `#[wirecall::message]` to `{Self}`"
)]
pub trait Reflect {
    /// Describes the type, defining in `types` the named types it uses.
    fn type_ref(types: &mut TypeRegistry) -> TypeRef;
}

/// The named types of one schema, collected while describing a service: each Rust type
/// once, under a name no other type in the schema has.
#[derive(Debug, Default)]
pub struct TypeRegistry {
    defs: Vec<Option<TypeDef>>,
    by_type: HashMap<TypeId, (usize, String)>,
    names: HashSet<String>,
}

impl TypeRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Refers to the named type `T`, defining it with `define` on first use. `define` may
    /// refer to `T` again (a recursive type): it then gets the name without a second
    /// definition.
    pub fn named<T: 'static>(
        &mut self,
        name: &str,
        rust_path: &str,
        doc: &str,
        define: impl FnOnce(&mut Self) -> TypeKind,
    ) -> TypeRef {
        // Every named type of every service instantiates this, so only the call of `define`
        // is generic: the bookkeeping around it is compiled once, in `reserve` and
        // `define_at`.
        match self.reserve(TypeId::of::<T>(), name) {
            Reserved::Known(known) => known,
            Reserved::New(slot) => {
                let kind = define(self);
                self.define_at(slot, rust_path, doc, kind)
            }
        }
    }

    /// The name of the type `id` if it is known; otherwise a slot for its definition, under
    /// `name` or, if another type has it, `name` with the first free number appended.
    fn reserve(&mut self, id: TypeId, name: &str) -> Reserved {
        if let Some((_, name)) = self.by_type.get(&id) {
            return Reserved::Known(TypeRef::Named(name.clone()));
        }
        let mut unique = name.to_owned();
        let mut suffix = 2;
        while self.names.contains(&unique) {
            unique = format!("{name}{suffix}");
            suffix += 1;
        }
        let index = self.defs.len();
        self.defs.push(None);
        self.names.insert(unique.clone());
        self.by_type.insert(id, (index, unique.clone()));
        Reserved::New(Slot {
            index,
            name: unique,
        })
    }

    /// Fills a slot from [`reserve`](Self::reserve) with its type's definition.
    fn define_at(&mut self, slot: Slot, rust_path: &str, doc: &str, kind: TypeKind) -> TypeRef {
        self.defs[slot.index] = Some(TypeDef {
            name: slot.name.clone(),
            rust_path: rust_path.to_owned(),
            doc: doc.to_owned(),
            kind,
        });
        TypeRef::Named(slot.name)
    }

    /// The definitions, in the order their types were first met.
    pub fn finish(self) -> Vec<TypeDef> {
        self.defs.into_iter().flatten().collect()
    }
}

/// What [`TypeRegistry::reserve`] found.
enum Reserved {
    /// The type is defined (or being defined) under this name.
    Known(TypeRef),
    /// The type is new: define it into this slot.
    New(Slot),
}

/// A definition's place in a [`TypeRegistry`], and the name it was given.
struct Slot {
    index: usize,
    name: String,
}

/// Describes `T` (a helper for generated code).
pub fn type_ref<T: Reflect>(types: &mut TypeRegistry) -> TypeRef {
    T::type_ref(types)
}

/// A field of type `T` (a helper for generated code).
pub fn field<T: Reflect>(name: &str, doc: &str, types: &mut TypeRegistry) -> FieldSchema {
    FieldSchema {
        name: name.to_owned(),
        ty: T::type_ref(types),
        doc: doc.to_owned(),
    }
}

/// A field whose type only serde knows (a helper for services without Protobuf).
pub fn opaque_field(name: &str, rust_type: &str, doc: &str) -> FieldSchema {
    FieldSchema {
        name: name.to_owned(),
        ty: TypeRef::Opaque(rust_type.to_owned()),
        doc: doc.to_owned(),
    }
}

impl ServiceSchema {
    /// The method named `name`.
    pub fn method(&self, name: &str) -> Option<&MethodSchema> {
        self.methods.iter().find(|method| method.name == name)
    }

    /// The definition of the named type `name`.
    pub fn type_def(&self, name: &str) -> Option<&TypeDef> {
        self.types.iter().find(|def| def.name == name)
    }

    /// A schema with names, ids and one-way marks only, for a service that does not
    /// describe its types (a hand-written [`Service`](crate::Service)).
    pub fn from_descriptor(descriptor: &crate::ServiceDescriptor) -> Self {
        Self {
            name: descriptor.name.to_owned(),
            doc: String::new(),
            codecs: descriptor
                .codecs
                .iter()
                .map(|codec| codec.name().to_owned())
                .collect(),
            methods: descriptor
                .methods
                .iter()
                .map(|method| MethodSchema {
                    name: method.name.to_owned(),
                    id: method.id.get(),
                    doc: String::new(),
                    args: Vec::new(),
                    reply: ReplySchema::Unit,
                    oneway: method.oneway,
                    idempotent: false,
                    policy: String::new(),
                    server_stream: matches!(
                        method.shape,
                        crate::MethodShape::ServerStream | crate::MethodShape::BidiStream
                    ),
                    upload: None,
                })
                .collect(),
            types: Vec::new(),
            described: false,
        }
    }

    /// What `list_services` reports about this service.
    pub fn summary(&self) -> ServiceSummary {
        ServiceSummary {
            name: self.name.clone(),
            summary: self
                .doc
                .split("\n\n")
                .next()
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            methods: self
                .methods
                .iter()
                .map(|method| method.name.clone())
                .collect(),
        }
    }
}

// Constructors for generated code: short calls keep the expansion readable.

#[doc(hidden)]
pub fn method(
    name: &str,
    id: u64,
    doc: &str,
    oneway: bool,
    idempotent: bool,
    args: Vec<FieldSchema>,
    reply: ReplySchema,
) -> MethodSchema {
    MethodSchema {
        name: name.to_owned(),
        id,
        doc: doc.to_owned(),
        args,
        reply,
        oneway,
        idempotent,
        policy: String::new(),
        server_stream: false,
        upload: None,
    }
}

impl MethodSchema {
    /// The schema with the method's declared `policy` (for generated code).
    #[doc(hidden)]
    pub fn with_policy(mut self, policy: crate::policy::method_policy::MethodPolicy) -> Self {
        if !policy.is_empty() {
            self.policy = policy.to_string();
        }
        self
    }

    /// The schema of a method that takes an upload of `item`s (for generated code).
    #[doc(hidden)]
    pub fn with_upload(mut self, item: TypeRef) -> Self {
        self.upload = Some(item);
        self
    }

    /// The schema marked as a server stream (for generated code).
    #[doc(hidden)]
    pub fn with_server_stream(mut self, server_stream: bool) -> Self {
        self.server_stream = server_stream;
        self
    }
}

#[doc(hidden)]
pub fn service(
    descriptor: &crate::ServiceDescriptor,
    doc: &str,
    methods: Vec<MethodSchema>,
    types: TypeRegistry,
) -> ServiceSchema {
    ServiceSchema {
        name: descriptor.name.to_owned(),
        doc: doc.to_owned(),
        codecs: descriptor
            .codecs
            .iter()
            .map(|codec| codec.name().to_owned())
            .collect(),
        methods,
        types: types.finish(),
        described: true,
    }
}

#[doc(hidden)]
pub fn enum_value(name: &str, number: i32, doc: &str, other: bool) -> EnumValue {
    EnumValue {
        name: name.to_owned(),
        number,
        doc: doc.to_owned(),
        other,
    }
}

#[doc(hidden)]
pub fn variant(name: &str, tag: u32, doc: &str, other: bool, shape: VariantShape) -> VariantSchema {
    VariantSchema {
        name: name.to_owned(),
        tag,
        doc: doc.to_owned(),
        shape,
        other,
    }
}
