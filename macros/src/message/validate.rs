//! Validation: everything a message's struct or enum must satisfy before code is generated,
//! its attributes included (each one the macro is handed is either understood or refused).
//!
//! Each check pushes a spanned error onto one list, so the user sees every problem in one
//! build.

use syn::{Field, Fields, Generics, ItemEnum, ItemStruct};

use super::parse::{Attrs, MessageDef, MessageItem};
use crate::errors::Errors;
use crate::proto_type;

/// Checks the whole message; `Err` holds every problem found.
pub fn validate(def: &MessageDef) -> syn::Result<()> {
    let mut errors = Errors::default();
    match &def.item {
        MessageItem::Struct(item) => validate_struct(def, item, &mut errors),
        MessageItem::Enum(item) => validate_enum(def, item, &mut errors),
    }
    errors.finish()
}

fn validate_struct(def: &MessageDef, item: &ItemStruct, errors: &mut Errors) {
    check_generics(&item.generics, errors);
    match &item.fields {
        Fields::Named(_) => {}
        Fields::Unnamed(fields) => errors.spanned(
            fields,
            "a message needs named fields (protobuf fields have names); \
             write `struct Name { field: Type }`",
        ),
        Fields::Unit => errors.spanned(
            &item.ident,
            "a message needs named fields; write `struct Name {}` for an empty message",
        ),
    }
    check_container(&def.attrs, true, errors);
    for (field, attrs) in item.fields.iter().zip(&def.fields) {
        check_field(field, attrs, Place::Field, errors);
    }
}

fn validate_enum(def: &MessageDef, item: &ItemEnum, errors: &mut Errors) {
    check_generics(&item.generics, errors);
    check_container(&def.attrs, false, errors);
    if item.variants.is_empty() {
        errors.spanned(
            &item.ident,
            "an enum with no variants has no value to send; add a variant",
        );
    }
    check_variant_attrs(def, item, errors);
    for (variant, variant_def) in item.variants.iter().zip(&def.variants) {
        for (field, attrs) in variant.fields.iter().zip(&variant_def.fields) {
            check_field(field, attrs, Place::VariantField, errors);
        }
    }
    if def.unit_only() {
        check_unit_numbers(def, item, errors);
    } else {
        for variant in &item.variants {
            if let Some((_, discriminant)) = &variant.discriminant {
                errors.spanned(
                    discriminant,
                    "an enum with data numbers its variants by position; remove the \
                     discriminant",
                );
            }
        }
    }
}

fn check_generics(generics: &Generics, errors: &mut Errors) {
    if !generics.params.is_empty() || generics.where_clause.is_some() {
        errors.spanned(
            generics,
            "a message cannot be generic: protobuf fields have one fixed type; \
             use concrete field types",
        );
    }
}

/// The struct's or enum's own attributes: a derived `Default` on a struct (which gets one
/// from the macro; an enum does not), and the macro's own keys.
fn check_container(attrs: &Attrs, provides_default: bool, errors: &mut Errors) {
    if provides_default {
        for path in attrs.derived("Default") {
            errors.spanned(
                path,
                "remove `Default`: #[wirecall::message] provides it \
                 (every field starts at its protobuf default)",
            );
        }
    }
    for own in &attrs.own {
        match &own.key {
            Some(key) if key == "skip_debug" => {}
            Some(key) if key == "other" => errors.spanned(
                &own.attr,
                "#[wirecall(other)] goes on the last variant of an enum, not on the type",
            ),
            Some(key) => errors.spanned(
                &own.attr,
                format!(
                    "unknown key `{key}`; the only #[wirecall(...)] on a message type is \
                     `#[wirecall(skip_debug)]` (when you implement `Debug` yourself)"
                ),
            ),
            None => errors.spanned(
                &own.attr,
                "write `#[wirecall(skip_debug)]`: the only #[wirecall(...)] on a message type",
            ),
        }
    }
    check_prost(attrs, errors);
    check_serde(attrs, Place::Type, errors);
}

/// `#[wirecall(other)]`: only on the last variant, which carries no data, and only once.
fn check_variant_attrs(def: &MessageDef, item: &ItemEnum, errors: &mut Errors) {
    let mut found = false;
    let last = item.variants.len().saturating_sub(1);
    for (index, (variant, variant_def)) in item.variants.iter().zip(&def.variants).enumerate() {
        for own in &variant_def.attrs.own {
            let is_other = own.key.as_ref().is_some_and(|key| key == "other");
            if !is_other {
                errors.spanned(
                    &own.attr,
                    "the only variant attribute is `#[wirecall(other)]`",
                );
                continue;
            }
            if !matches!(variant.fields, Fields::Unit) || index != last {
                errors.spanned(
                    &own.attr,
                    "#[wirecall(other)] goes on the last variant, which must carry no data \
                     (unknown variants from a newer peer decode to it)",
                );
            } else if found {
                errors.spanned(&own.attr, "only one variant can be #[wirecall(other)]");
            } else {
                found = true;
            }
        }
        check_prost(&variant_def.attrs, errors);
        check_serde(&variant_def.attrs, Place::Variant, errors);
    }
}

/// The numbers of a unit-only enum: integer literals that fit an `i32`, each used once, one
/// of them 0.
fn check_unit_numbers(def: &MessageDef, item: &ItemEnum, errors: &mut Errors) {
    let mut numbers = Vec::with_capacity(def.variants.len());
    for (variant, variant_def) in item.variants.iter().zip(&def.variants) {
        if let Some(expr) = &variant_def.unreadable_discriminant {
            errors.spanned(
                expr,
                "write the discriminant as an integer literal: it is the variant's \
                 protobuf number",
            );
        }
        match i32::try_from(variant_def.number) {
            Ok(number) => {
                if numbers.contains(&number) {
                    errors.spanned(&variant.ident, format!("number {number} is used twice"));
                }
                numbers.push(number);
            }
            Err(_) => errors.spanned(
                &variant.ident,
                "protobuf enum numbers are `i32`; use a smaller discriminant",
            ),
        }
    }
    if !numbers.is_empty() && !numbers.contains(&0) {
        errors.spanned(
            &item.ident,
            "a protobuf enum needs a variant numbered 0 (what a missing field decodes to); \
             give one variant `= 0` or remove the discriminants",
        );
    }
}

/// A field of a struct or of a variant: no attribute of the macro's own, no `#[prost(...)]`
/// or `#[serde(...)]`, and a type that can travel.
fn check_field(field: &Field, attrs: &Attrs, place: Place, errors: &mut Errors) {
    for own in &attrs.own {
        errors.spanned(
            &own.attr,
            "a field takes no #[wirecall(...)] attribute: its name on the wire is its Rust \
             name and its number its position; remove it",
        );
    }
    check_prost(attrs, errors);
    check_serde(attrs, place, errors);
    if let Err(error) = proto_type::check(&field.ty) {
        errors.push(error);
    }
}

fn check_prost(attrs: &Attrs, errors: &mut Errors) {
    for attr in &attrs.prost {
        errors.spanned(
            attr,
            "remove `#[prost(...)]`: #[wirecall::message] numbers fields by position and picks \
             their protobuf types itself",
        );
    }
}

/// Where an attribute sits, for the words of its error.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// On the struct or enum itself.
    Type,
    Variant,
    /// A field of a struct: read by the runtime's tolerant reader.
    Field,
    /// A field of an enum variant: read by serde's derive.
    VariantField,
}

impl Place {
    fn noun(self) -> &'static str {
        match self {
            Place::Type => "type",
            Place::Variant => "variant",
            Place::Field | Place::VariantField => "field",
        }
    }
}

/// Every `#[serde(...)]` key is refused: the macro writes all three codecs from the Rust
/// names and the field numbers, and serde's derive (the JSON and MessagePack writer of a
/// struct, both directions of an enum) would follow the attribute while Protobuf, the
/// struct's reader and the schema would not. Each key gets its own error on its attribute.
fn check_serde(attrs: &Attrs, place: Place, errors: &mut Errors) {
    for serde in &attrs.serde {
        let written = serde.key.as_deref().unwrap_or("...");
        errors.spanned(
            &serde.attr,
            format!(
                "`#[serde({written})]` is refused on a #[wirecall::message]: all three codecs \
                 use the Rust names and field numbers, and serde would honour it in some \
                 codecs and not others; {}",
                serde_fix(serde.key.as_deref(), place)
            ),
        );
    }
}

/// What to write instead of `#[serde(key)]`.
fn serde_fix(key: Option<&str>, place: Place) -> String {
    const SEPARATE: &str = "keep a separate serde type for that JSON API and convert with `From`";
    let noun = place.noun();
    match key.unwrap_or_default() {
        "rename" => format!(
            "for another name in JSON, rename the Rust {noun} itself (`r#type` works for a \
             keyword), or {SEPARATE}"
        ),
        "rename_all" => format!(
            "for other names in JSON, spell the Rust names that way (with \
             `#[allow(non_snake_case)]`), or {SEPARATE}"
        ),
        "alias" if place == Place::Variant => format!(
            "a variant has one name, its Rust name; Protobuf peers find a renamed variant by \
             its number, and for JSON or MessagePack peers that send the old name, {SEPARATE}"
        ),
        "alias" => format!(
            "a {noun} has one name, its Rust name; Protobuf and MessagePack peers find a \
             renamed field by its number, and for JSON peers that send the old name, \
             {SEPARATE}"
        ),
        "skip" | "skip_serializing" | "skip_deserializing" if place == Place::Variant => {
            "every variant travels in every codec (serde would refuse to write or read a \
             skipped one, Protobuf would not); remove it"
                .to_owned()
        }
        "skip" | "skip_serializing" | "skip_deserializing" => format!(
            "every {noun} travels in every codec (a skipped one would shift the MessagePack \
             positions after it and come back as a default); move values that must not \
             travel out of the message, e.g. into a struct that holds the message and them"
        ),
        "skip_serializing_if" => "Protobuf already leaves out a field at its default value, \
             and in MessagePack a left-out field would shift the ones after it; remove it"
            .to_owned(),
        "default" if place == Place::VariantField => "a variant's fields are read by serde's \
             derive, which needs every one of them in JSON and MessagePack (Protobuf gives a \
             missing one its default); remove it, and to send more data later, add a variant"
            .to_owned(),
        "default" => "a missing field already takes its default in every codec (zero, empty, \
             `None`, the variant numbered 0), so remove it; a different default cannot work: \
             Protobuf does not write a field at its default, so a reader cannot tell it from \
             a missing one; use an `Option` and apply the default where you read it"
            .to_owned(),
        "flatten" => "a flattened field has no number of its own in Protobuf and would shift \
             the MessagePack positions; make it an ordinary field of a #[wirecall::message] \
             type (a nested message in every codec), or copy its fields into this one"
            .to_owned(),
        "tag" | "untagged" | "content" => format!(
            "an enum's form is fixed in every codec: the variant name or number for a \
             unit-only enum, externally tagged (`{{\"Variant\": data}}`) in JSON and \
             MessagePack and a `oneof` in Protobuf for one with data; for another JSON form, \
             {SEPARATE}"
        ),
        "other" => "write `#[wirecall(other)]` on the last variant instead: unknown variants \
             decode to it in every codec"
            .to_owned(),
        "crate" => "give the path to wirecall as `#[wirecall::message(crate = \"...\")]` \
             instead; the macro names serde through it"
            .to_owned(),
        "deny_unknown_fields" => "messages skip unknown fields on purpose, so that a newer \
             peer can add fields at the end; remove it"
            .to_owned(),
        _ => "remove it, or keep a separate serde type with it for the API that needs it and \
             convert with `From`"
            .to_owned(),
    }
}
