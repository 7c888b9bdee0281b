//! The errors chapter (`book/src/errors.md`) has a table row for every variant of the public
//! error enums: `Error`, `NegotiationError`, the wire `ErrorCode` and the server's
//! `CallError`. The variants are read from the enums' own source with `syn`, so a variant
//! added without a row fails here, whatever its formatting or attributes.

use std::path::Path;

const CHAPTER: &str = include_str!("../book/src/errors.md");

/// The variant names of `pub enum {name}` in the source file at `path` (from the workspace
/// root).
fn variants(path: &str, name: &str) -> Vec<String> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let source = std::fs::read_to_string(&file)
        .unwrap_or_else(|err| panic!("reading {}: {err}", file.display()));
    let syntax = syn::parse_file(&source).unwrap_or_else(|err| panic!("parsing {path}: {err}"));
    let found = syntax.items.iter().find_map(|item| match item {
        syn::Item::Enum(item) if item.ident == name => Some(item),
        _ => None,
    });
    let item = found.unwrap_or_else(|| panic!("{path} has no enum {name}"));
    item.variants.iter().map(|v| v.ident.to_string()).collect()
}

/// The lines of the chapter's section `## {heading}`, up to the next `## ` heading.
fn section(heading: &str) -> Vec<&'static str> {
    let start = format!("## {heading}");
    let mut lines = CHAPTER.lines().skip_while(|line| *line != start);
    assert!(
        lines.next().is_some(),
        "book/src/errors.md has no section {start:?}"
    );
    lines.take_while(|line| !line.starts_with("## ")).collect()
}

/// Whether a table row of `section` starts with this variant: `` | `Name` ``,
/// `` | `Name { .. }` `` or `` | `Name(..)` ``.
fn has_row(section: &[&str], variant: &str) -> bool {
    section.iter().any(|line| {
        let Some(cell) = line.strip_prefix("| `") else {
            return false;
        };
        cell.strip_prefix(variant)
            .and_then(|rest| rest.chars().next())
            .is_some_and(|next| matches!(next, '`' | ' ' | '('))
    })
}

fn assert_every_variant_has_a_row(path: &str, name: &str, heading: &str) {
    let variants = variants(path, name);
    assert!(!variants.is_empty(), "{name} has no variants in {path}");
    let section = section(heading);
    let missing: Vec<_> = variants.iter().filter(|v| !has_row(&section, v)).collect();
    assert!(
        missing.is_empty(),
        "the section {heading:?} of book/src/errors.md has no table row for {name}::{missing:?}; \
         add one (what it means, when it happens, whether a retry can help, what to do)"
    );
}

#[test]
fn every_error_variant_has_a_row() {
    assert_every_variant_has_a_row("runtime/src/error.rs", "Error", "`wirecall::Error`");
}

#[test]
fn every_handshake_refusal_has_a_row() {
    assert_every_variant_has_a_row(
        "runtime/src/negotiate/error.rs",
        "NegotiationError",
        "Handshake refusals",
    );
}

#[test]
fn every_wire_error_code_has_a_row() {
    assert_every_variant_has_a_row("wire/src/error_code.rs", "ErrorCode", "Wire error codes");
}

#[test]
fn every_call_error_variant_has_a_row() {
    assert_every_variant_has_a_row(
        "runtime/src/error.rs",
        "CallError",
        "On the server: `CallError`",
    );
}

#[test]
fn the_parser_sees_the_variants_it_must() {
    // Guards the test itself: a parser that found nothing would pass every check above.
    let errors = variants("runtime/src/error.rs", "Error");
    for expected in [
        "Connect",
        "Negotiation",
        "Endpoint",
        "NoEndpoints",
        "Config",
    ] {
        assert!(errors.iter().any(|v| v == expected), "{errors:?}");
    }
    let section = section("`wirecall::Error`");
    assert!(has_row(&section, "Connect"));
    assert!(!has_row(&section, "NotAVariant"));
    // `Conn` is a prefix of `Connect`, not a variant with a row.
    assert!(!has_row(&section, "Conn"));
}
