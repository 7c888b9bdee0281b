//! Every public method of the builders (the gateway's too) has a row in its chapter's option
//! tables, and every flag of the `user` example a row in the quick start's flag table. The
//! methods and flags are read from the source with `syn`, so a method added without a row
//! fails here.

use std::path::Path;

fn read(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|err| panic!("reading {}: {err}", file.display()))
}

fn parse(path: &str) -> syn::File {
    syn::parse_file(&read(path)).unwrap_or_else(|err| panic!("parsing {path}: {err}"))
}

/// The names of the `pub` methods in every `impl {type_name}` block of `path`.
fn public_methods(path: &str, type_name: &str) -> Vec<String> {
    let mut names = Vec::new();
    for item in parse(path).items {
        let syn::Item::Impl(block) = item else {
            continue;
        };
        let syn::Type::Path(self_ty) = &*block.self_ty else {
            continue;
        };
        if block.trait_.is_some() || !self_ty.path.is_ident(type_name) {
            continue;
        }
        for item in &block.items {
            if let syn::ImplItem::Fn(method) = item {
                if matches!(method.vis, syn::Visibility::Public(_)) {
                    names.push(method.sig.ident.to_string());
                }
            }
        }
    }
    assert!(
        !names.is_empty(),
        "{path} has no pub methods on {type_name}"
    );
    names
}

/// The first cells of the chapter's table rows.
fn first_cells(chapter: &str) -> Vec<String> {
    read(chapter)
        .lines()
        .filter_map(|line| line.strip_prefix('|'))
        .filter_map(|row| row.split('|').next())
        .map(|cell| cell.trim().to_owned())
        .collect()
}

/// Fails naming every method of `type_name` that no table row of `chapter` starts with
/// (`` `name(..)` `` in the first cell).
fn assert_every_method_has_a_row(path: &str, type_name: &str, chapter: &str) {
    let cells = first_cells(chapter);
    let missing: Vec<String> = public_methods(path, type_name)
        .into_iter()
        .filter(|name| {
            let call = format!("`{name}(");
            !cells.iter().any(|cell| cell.contains(&call))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "{chapter} has no table row for {type_name}::{missing:?} (a row whose first cell is \
         `name(..)`, with its default and what it does)"
    );
}

#[test]
fn every_server_builder_method_has_a_row() {
    assert_every_method_has_a_row(
        "runtime/src/server/builder.rs",
        "ServerBuilder",
        "book/src/server.md",
    );
}

#[test]
fn every_channel_builder_method_has_a_row() {
    assert_every_method_has_a_row(
        "runtime/src/client/builder.rs",
        "ChannelBuilder",
        "book/src/client.md",
    );
}

#[test]
fn every_balanced_channel_builder_method_has_a_row() {
    assert_every_method_has_a_row(
        "runtime/src/discovery/balanced/builder.rs",
        "BalancedChannelBuilder",
        "book/src/discovery.md",
    );
}

#[test]
fn every_gateway_builder_method_has_a_row() {
    assert_every_method_has_a_row(
        "gateway/src/lib.rs",
        "GatewayBuilder",
        "book/src/outside-rust.md",
    );
}

#[test]
fn every_flag_of_the_user_example_has_a_row() {
    let options = parse("examples/user.rs")
        .items
        .into_iter()
        .find_map(|item| match item {
            syn::Item::Struct(item) if item.ident == "Options" => Some(item),
            _ => None,
        })
        .expect("examples/user.rs has a struct Options");
    let flags: Vec<String> = options
        .fields
        .iter()
        .filter_map(|field| field.ident.as_ref())
        .map(|ident| format!("--{}", ident.to_string().replace('_', "-")))
        .collect();
    assert!(flags.len() > 5, "{flags:?}");
    let cells = first_cells("book/src/quick-start.md");
    let missing: Vec<_> = flags
        .iter()
        .filter(|flag| {
            let exact = format!("`{flag}`");
            let with_value = format!("`{flag} ");
            !cells
                .iter()
                .any(|cell| cell.contains(&exact) || cell.contains(&with_value))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "book/src/quick-start.md's flag table has no row for {missing:?}"
    );
}

#[test]
fn the_method_reader_sees_what_it_must() {
    // Guards the test itself: a reader that found nothing, or private helpers, would pass.
    let methods = public_methods("runtime/src/client/builder.rs", "ChannelBuilder");
    for expected in ["codecs", "layer", "metadata", "connect_with"] {
        assert!(methods.iter().any(|m| m == expected), "{methods:?}");
    }
    assert!(
        !methods.iter().any(|m| m == "default_timeout"),
        "{methods:?}"
    );
}
