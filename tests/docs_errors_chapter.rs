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
    assert_every_variant_has_a_row("runtime/src/error/caller.rs", "Error", "`wirecall::Error`");
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
        "runtime/src/error/call_error.rs",
        "CallError",
        "On the server: `CallError`",
    );
}

#[test]
fn the_parser_sees_the_variants_it_must() {
    // Guards the test itself: a parser that found nothing would pass every check above.
    let errors = variants("runtime/src/error/caller.rs", "Error");
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

/// The row of `variant` in the `wirecall::Error` table, split into its cells.
fn error_row(variant: &str) -> Vec<&'static str> {
    let section = section("`wirecall::Error`");
    let line = section
        .iter()
        .find(|line| has_row(&[**line], variant))
        .unwrap_or_else(|| panic!("no row for {variant}"));
    line.split(" | ").collect()
}

#[test]
fn the_outcome_column_says_what_error_outcome_returns() {
    use std::time::Duration;
    use wirecall::{method_id, Error, ErrorCode, NegotiationError, Outcome};

    let method = method_id("S", "m");
    let io = || std::io::Error::other("refused");
    // One error of each variant (two where the outcome depends on a field), by the name of
    // its row.
    let errors = [
        (
            "Connect",
            Error::Connect {
                addr: "a".into(),
                cause: io(),
            },
        ),
        (
            "Bind",
            Error::Bind {
                addr: "a".into(),
                cause: io(),
            },
        ),
        ("Negotiation", Error::Negotiation(NegotiationError::Busy)),
        (
            "HandlerPanicked",
            Error::HandlerPanicked {
                method,
                message: String::new(),
            },
        ),
        ("UnknownMethod", Error::UnknownMethod { method }),
        ("FrameTooLarge", Error::FrameTooLarge { len: 2, max: 1 }),
        (
            "ConnectionClosed",
            Error::ConnectionClosed {
                reason: String::new(),
                code: None,
            },
        ),
        (
            "ConnectionClosed",
            Error::ConnectionClosed {
                reason: String::new(),
                code: Some(ErrorCode::ShuttingDown),
            },
        ),
        (
            "Unavailable",
            Error::Unavailable {
                reason: String::new(),
                retry_after: None,
            },
        ),
        (
            "Timeout",
            Error::Timeout {
                after: Duration::from_secs(1),
            },
        ),
        (
            "Remote",
            Error::Remote {
                code: ErrorCode::Overloaded,
                message: String::new(),
            },
        ),
        (
            "Remote",
            Error::Remote {
                code: ErrorCode::EncodeFailed,
                message: String::new(),
            },
        ),
        (
            "Remote",
            Error::Remote {
                code: ErrorCode::LayerFailed,
                message: String::new(),
            },
        ),
        ("PermissionDenied", Error::PermissionDenied { method }),
        (
            "Layer",
            Error::Layer {
                code: ErrorCode::Overloaded,
                cause: "shed".into(),
            },
        ),
        (
            "Layer",
            Error::Layer {
                code: ErrorCode::LayerFailed,
                cause: "no".into(),
            },
        ),
        ("Tls", Error::Tls(io())),
        (
            "NoEndpoints",
            Error::NoEndpoints {
                service: "S".into(),
                reason: String::new(),
            },
        ),
        (
            "CircuitOpen",
            Error::CircuitOpen {
                method,
                endpoint: None,
                retry_after: Duration::ZERO,
            },
        ),
        (
            "StreamsUnsupported",
            Error::StreamsUnsupported { method, version: 2 },
        ),
        (
            "ConcurrencyLimit",
            Error::ConcurrencyLimit {
                service: "S".into(),
                method: "m".into(),
                limit: 1,
            },
        ),
        ("Config", Error::Config(String::new())),
    ];
    for (variant, error) in errors {
        let name = match error.outcome() {
            Outcome::NotRun => "`NotRun`",
            Outcome::MaybeRan => "`MaybeRan`",
            Outcome::Ran => "`Ran`",
        };
        let row = error_row(variant);
        assert!(
            row[2].contains(name),
            "the outcome cell of {variant} ({:?}) does not name {name}, which {error:?} gives",
            row[2]
        );
    }
}
