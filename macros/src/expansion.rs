//! `WIRECALL_EXPAND`: prints a service's expansion to stderr while compiling, so the generated
//! code can be read without extra tools.
//!
//! The layout is a small heuristic (one item, statement, field or attribute per line, indented
//! by brace depth): not rustfmt, but readable, and it needs nothing beyond `proc-macro2`.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// Prints `tokens` when `WIRECALL_EXPAND` is `1` (every service) or the trait's name.
pub fn print_if_requested(trait_name: &str, tokens: &TokenStream) {
    let Some(wanted) = std::env::var_os("WIRECALL_EXPAND") else {
        return;
    };
    let wanted = wanted.to_string_lossy();
    if wanted != "1" && wanted != trait_name {
        return;
    }
    let mut out = String::new();
    write_block(&mut out, tokens.clone(), 0);
    eprintln!("// ---- #[wirecall::service] expansion of `{trait_name}` ----\n{out}");
}

/// Writes the contents of a `{ ... }` block (or the top level), one line per item.
fn write_block(out: &mut String, tokens: TokenStream, depth: usize) {
    let indent = "    ".repeat(depth);
    let mut line = String::new();
    // Commas inside `<...>` separate generic arguments, not fields or arms.
    let mut angle_depth = 0usize;
    let mut previous_punct: Option<char> = None;
    let flush = |out: &mut String, line: &mut String| {
        let text = line.trim_end();
        if !text.is_empty() {
            out.push_str(&indent);
            out.push_str(text);
            out.push('\n');
        }
        line.clear();
    };
    let mut trees = tokens.into_iter().peekable();
    while let Some(tree) = trees.next() {
        let mut punct_char = None;
        match &tree {
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                if group.stream().is_empty() {
                    line.push_str("{}");
                } else {
                    line.push('{');
                    flush(out, &mut line);
                    write_block(out, group.stream(), depth + 1);
                    line.push('}');
                }
                // A block ends the line unless a `;`, `,` or `.` continues it.
                let continues = matches!(
                    trees.peek(),
                    Some(TokenTree::Punct(p)) if matches!(p.as_char(), ';' | ',' | '.')
                );
                if !continues {
                    flush(out, &mut line);
                }
            }
            TokenTree::Punct(punct) => {
                let c = punct.as_char();
                punct_char = Some(c);
                line.push(c);
                match c {
                    '<' => angle_depth += 1,
                    '>' if !matches!(previous_punct, Some('-' | '=')) => {
                        angle_depth = angle_depth.saturating_sub(1);
                    }
                    _ => {}
                }
                if c == ';' || (c == ',' && angle_depth == 0) {
                    flush(out, &mut line);
                } else if c == '#' {
                    // An attribute: `#[...]` on its own line.
                    if let Some(attr @ TokenTree::Group(_)) = trees.peek() {
                        line.push_str(&inline(attr.clone().into()));
                        trees.next();
                        flush(out, &mut line);
                    }
                } else if punct.spacing() == Spacing::Alone {
                    line.push(' ');
                }
            }
            other => line.push_str(&inline(other.clone().into())),
        }
        previous_punct = punct_char;
    }
    flush(out, &mut line);
}

/// Formats tokens on one line.
fn inline(tokens: TokenStream) -> String {
    let mut out = String::new();
    for tree in tokens {
        match tree {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{ ", " }"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                out.push_str(inline(group.stream()).trim_end());
                out.push_str(close);
                out.push(' ');
            }
            TokenTree::Punct(punct) => {
                out.push(punct.as_char());
                if punct.spacing() == Spacing::Alone {
                    out.push(' ');
                }
            }
            other => {
                out.push_str(&other.to_string());
                out.push(' ');
            }
        }
    }
    out
}
