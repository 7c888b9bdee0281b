//! Claims of the README and the book that the code decides: the README's hello is
//! `examples/hello.rs` (which CI runs), and the services chapter lists the method names the
//! macro reserves, read from the macro's own list; the feature tables of the README and the
//! crate docs list every feature `Cargo.toml` declares, with its default.

use std::path::Path;

fn read(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|err| panic!("reading {}: {err}", file.display()))
}

#[test]
fn the_readme_hello_is_the_hello_example() {
    let example = read("examples/hello.rs");
    // The example without its `//!` header is the README's block, line for line.
    let code: String = example
        .lines()
        .skip_while(|line| line.starts_with("//!") || line.is_empty())
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(code.contains("#[tokio::main]"), "{code}");
    let readme = read("README.md");
    assert!(
        readme.contains(&format!("```rust\n{code}```")),
        "README.md's hello differs from examples/hello.rs; copy the example into the README"
    );
}

#[test]
fn the_services_chapter_lists_every_reserved_method_name() {
    let source = read("macros/src/validate.rs");
    let file = syn::parse_file(&source).expect("macros/src/validate.rs parses");
    let list = file
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Const(item) if item.ident == "CLIENT_METHODS" => Some(item),
            _ => None,
        })
        .expect("macros/src/validate.rs has CLIENT_METHODS");
    let syn::Expr::Reference(reference) = &*list.expr else {
        panic!("CLIENT_METHODS is not `&[..]`");
    };
    let syn::Expr::Array(names) = &*reference.expr else {
        panic!("CLIENT_METHODS is not `&[..]`");
    };
    let names: Vec<String> = names
        .elems
        .iter()
        .map(|name| match name {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(name),
                ..
            }) => name.value(),
            other => panic!("not a string literal: {other:?}"),
        })
        .collect();
    assert!(names.len() > 10, "{names:?}");
    let chapter = read("book/src/services.md");
    // The paragraph that lists what a method may not be called.
    let paragraph = chapter
        .split("\n\n")
        .find(|paragraph| paragraph.contains("Not allowed"))
        .expect("the services chapter has its \"Not allowed\" paragraph");
    let missing: Vec<_> = names
        .iter()
        .filter(|name| !paragraph.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "book/src/services.md's \"Not allowed\" paragraph misses the reserved names {missing:?}"
    );
}

/// `MethodPolicy`'s table names the error a call over the concurrency limit fails with: the
/// variant `policies::the_call_over_the_concurrency_limit_fails_at_once_without_reaching_the_server`
/// asserts.
#[test]
fn the_method_policy_docs_name_the_concurrency_limit_error() {
    let source = read("runtime/src/policy/method_policy.rs");
    let row = source
        .lines()
        .find(|line| line.starts_with("/// | [`concurrency`]"))
        .expect("MethodPolicy's table has a `concurrency` row");
    let named: Vec<&str> = row
        .split("Error::")
        .skip(1)
        .map(|rest| {
            rest.split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap_or("")
        })
        .collect();
    assert_eq!(named.first().copied(), Some("ConcurrencyLimit"), "{row}");
    // The variant exists and is the one the limit returns (a compile error otherwise).
    let limited = wirecall::Error::ConcurrencyLimit {
        service: "S".to_owned(),
        method: "m".to_owned(),
        limit: 1,
    };
    assert!(matches!(limited, wirecall::Error::ConcurrencyLimit { .. }));
}

/// The facade's features as `Cargo.toml` declares them: each name, and whether `default`
/// turns it on. Every feature carries a `##` comment there (the `document-features`
/// convention), which the check below also requires.
fn declared_features() -> Vec<(String, bool)> {
    let manifest = read("Cargo.toml");
    let section = manifest
        .split("\n[features]\n")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .expect("Cargo.toml has a [features] section");
    let mut defaults = Vec::new();
    let mut features = Vec::new();
    let mut documented = false;
    for line in section.lines() {
        if line.starts_with("##") {
            documented = true;
            continue;
        }
        let Some((name, value)) = line.split_once(" = ") else {
            continue;
        };
        if name == "default" {
            defaults = value
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .map(|item| item.trim().trim_matches('"').to_owned())
                .collect();
            continue;
        }
        assert!(
            documented,
            "feature `{name}` has no `##` comment in Cargo.toml"
        );
        documented = false;
        features.push(name.to_owned());
    }
    features
        .into_iter()
        .map(|name| {
            let on = defaults.contains(&name);
            (name, on)
        })
        .collect()
}

/// The rows of a feature table (`| \`a\`, \`b\` | on | ... |`): each feature named in the
/// first cell, and whether the second cell says `on`.
fn feature_table(text: &str, prefix: &str) -> Vec<(String, bool)> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let Some(row) = line
            .strip_prefix(prefix)
            .and_then(|row| row.strip_prefix("| `"))
        else {
            continue;
        };
        let cells: Vec<&str> = row.split(" | ").collect();
        let on = match cells.get(1).map(|cell| cell.trim()) {
            Some("on") => true,
            Some("off") => false,
            _ => continue,
        };
        for name in cells[0].split(',') {
            rows.push((name.trim().trim_matches('`').to_owned(), on));
        }
    }
    rows.sort();
    rows
}

#[test]
fn the_feature_tables_list_every_feature_with_its_default() {
    let mut declared = declared_features();
    declared.sort();
    assert!(
        declared.iter().any(|(name, _)| name == "tls"),
        "{declared:?}"
    );
    assert_eq!(
        feature_table(&read("README.md"), ""),
        declared,
        "README.md's feature table disagrees with Cargo.toml's [features]"
    );
    assert_eq!(
        feature_table(&read("src/lib.rs"), "//! "),
        declared,
        "the crate docs' feature table (src/lib.rs) disagrees with Cargo.toml's [features]"
    );
}
