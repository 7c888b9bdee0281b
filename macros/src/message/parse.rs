//! Parsing: the `#[message(...)]` arguments and the user's struct or enum into a
//! [`MessageDef`].
//!
//! Lenient, like the service's `parse.rs`: it records what the user wrote, every attribute the
//! macro reads included (with its span), and leaves judging it to `validate.rs`, so that every
//! problem can be reported at once.

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{
    Attribute, Expr, ExprLit, ExprUnary, Fields, Ident, Item, ItemEnum, ItemStruct, Lit, Meta,
    Path, Token, UnOp,
};

use crate::crate_path::{self, CratePath};

/// The arguments of `#[wirecall::message(...)]`: only `crate = "..."`.
#[derive(Default)]
pub struct MessageArgs {
    pub krate: Option<CratePath>,
}

impl Parse for MessageArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut args = MessageArgs::default();
        while !input.is_empty() {
            let key: Ident = input.call(Ident::parse_any)?;
            if key != "crate" {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!(
                        "unknown argument `{key}`; the only argument is \
                         `crate = \"path::to::wirecall\"`"
                    ),
                ));
            }
            if args.krate.is_some() {
                return Err(syn::Error::new_spanned(
                    &key,
                    "`crate` is given twice; keep one",
                ));
            }
            args.krate = Some(crate_path::parse_value(input, &key)?);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(args)
    }
}

/// The user's struct or enum, as the rest of the macro sees it.
pub struct MessageDef {
    /// The root of generated paths to wirecall: `crate = ...`, or `::wirecall`.
    pub krate: CratePath,
    /// The item as written minus the macro's own attributes (`#[wirecall(...)]`,
    /// `#[prost(skip_debug)]`), which must not reach the compiler.
    pub item: MessageItem,
    /// What the macro reads from the item's own attributes.
    pub attrs: Attrs,
    /// A struct's fields, in order (empty for an enum).
    pub fields: Vec<Attrs>,
    /// An enum's variants, in order (empty for a struct).
    pub variants: Vec<VariantDef>,
}

/// The two kinds of item a message can be.
pub enum MessageItem {
    Struct(ItemStruct),
    Enum(ItemEnum),
}

/// One variant of an enum.
pub struct VariantDef {
    /// What the macro reads from the variant's attributes.
    pub attrs: Attrs,
    /// The variant's fields, in order.
    pub fields: Vec<Attrs>,
    /// The variant's number as Rust assigns discriminants: the written one, or one more than
    /// the previous variant's, starting at 0 (only meaningful for a unit-only enum).
    pub number: i64,
    /// A written discriminant that is not an integer literal (its number is then counted on
    /// from the previous variant).
    pub unreadable_discriminant: Option<Expr>,
}

/// The attributes of a container, variant or field that the macro reads; everything else is
/// passed through untouched.
#[derive(Default)]
pub struct Attrs {
    /// Each key of `#[wirecall(...)]` (and of the older spelling `#[prost(skip_debug)]`).
    pub own: Vec<OwnKey>,
    /// Each key of `#[serde(...)]`, also inside `#[cfg_attr(..., serde(...))]`.
    pub serde: Vec<SerdeKey>,
    /// Every other `#[prost(...)]`.
    pub prost: Vec<Attribute>,
    /// The paths listed in `#[derive(...)]`.
    pub derives: Vec<Path>,
}

/// One key of the macro's own attribute, `#[wirecall(key)]`.
pub struct OwnKey {
    /// The whole attribute, for spans.
    pub attr: Attribute,
    /// The key; `None` when the attribute is not a list of plain words.
    pub key: Option<Ident>,
}

/// One key of a `#[serde(...)]` attribute.
pub struct SerdeKey {
    /// The whole attribute (or the `cfg_attr` holding it), for spans.
    pub attr: Attribute,
    /// The key (`rename`, `default`, ...); `None` when the attribute's contents cannot be read.
    pub key: Option<String>,
}

impl Attrs {
    /// Whether `#[wirecall(key)]` is present.
    pub fn has_own(&self, key: &str) -> bool {
        self.own
            .iter()
            .any(|own| own.key.as_ref().is_some_and(|ident| ident == key))
    }

    /// The derived paths whose last segment is `name` (`Debug`, `std::fmt::Debug`, ...).
    pub fn derived(&self, name: &str) -> impl Iterator<Item = &Path> {
        let name = name.to_owned();
        self.derives.iter().filter(move |path| {
            path.segments
                .last()
                .is_some_and(|segment| segment.ident == name)
        })
    }

    /// Whether `Debug` must not be derived: the user derives it, or implements it and said
    /// `#[wirecall(skip_debug)]`.
    pub fn skip_debug(&self) -> bool {
        self.has_own("skip_debug") || self.derived("Debug").next().is_some()
    }
}

impl MessageDef {
    /// Whether every variant of the enum is a unit variant (a protobuf `enum`).
    pub fn unit_only(&self) -> bool {
        match &self.item {
            MessageItem::Struct(_) => false,
            MessageItem::Enum(item) => item
                .variants
                .iter()
                .all(|variant| matches!(variant.fields, Fields::Unit)),
        }
    }

    /// The catch-all variant: the last one, when it carries no data and is marked
    /// `#[wirecall(other)]` (validation refuses the mark anywhere else).
    pub fn catch_all(&self) -> Option<&Ident> {
        let MessageItem::Enum(item) = &self.item else {
            return None;
        };
        let (variant, def) = item.variants.iter().zip(&self.variants).next_back()?;
        (matches!(variant.fields, Fields::Unit) && def.attrs.has_own("other"))
            .then_some(&variant.ident)
    }

    /// The item as written without the attributes only the macro understands (its own, serde's
    /// and prost's), for the output when the macro fails: the type stays defined, so its uses
    /// add no errors, and no attribute is left that the compiler would report a second time.
    pub fn fallback_item(&self) -> Item {
        fn strip(attrs: &mut Vec<Attribute>) {
            attrs.retain(|attr| !is_serde(attr) && !attr.path().is_ident("prost"));
        }
        match &self.item {
            MessageItem::Struct(item) => {
                let mut item = item.clone();
                strip(&mut item.attrs);
                item.fields
                    .iter_mut()
                    .for_each(|field| strip(&mut field.attrs));
                Item::Struct(item)
            }
            MessageItem::Enum(item) => {
                let mut item = item.clone();
                strip(&mut item.attrs);
                for variant in &mut item.variants {
                    strip(&mut variant.attrs);
                    variant
                        .fields
                        .iter_mut()
                        .for_each(|field| strip(&mut field.attrs));
                }
                Item::Enum(item)
            }
        }
    }
}

/// Parses the item. Only an item that is neither a struct nor an enum fails here; everything
/// else is judged by `validate`.
pub fn parse_message(krate: CratePath, item: Item) -> syn::Result<MessageDef> {
    match item {
        Item::Struct(mut item) => {
            let attrs = take_attrs(&mut item.attrs);
            let fields = item
                .fields
                .iter_mut()
                .map(|field| take_attrs(&mut field.attrs))
                .collect();
            Ok(MessageDef {
                krate,
                item: MessageItem::Struct(item),
                attrs,
                fields,
                variants: Vec::new(),
            })
        }
        Item::Enum(mut item) => {
            let attrs = take_attrs(&mut item.attrs);
            let mut variants = Vec::with_capacity(item.variants.len());
            let mut next: i64 = 0;
            for variant in &mut item.variants {
                let (number, unreadable_discriminant) = match &variant.discriminant {
                    Some((_, expr)) => match discriminant_value(expr) {
                        Some(value) => (value, None),
                        None => (next, Some(expr.clone())),
                    },
                    None => (next, None),
                };
                next = number.saturating_add(1);
                variants.push(VariantDef {
                    attrs: take_attrs(&mut variant.attrs),
                    fields: variant
                        .fields
                        .iter_mut()
                        .map(|field| take_attrs(&mut field.attrs))
                        .collect(),
                    number,
                    unreadable_discriminant,
                });
            }
            Ok(MessageDef {
                krate,
                item: MessageItem::Enum(item),
                attrs,
                fields: Vec::new(),
                variants,
            })
        }
        other => Err(syn::Error::new_spanned(
            other,
            "#[wirecall::message] goes on a struct with named fields or an enum",
        )),
    }
}

/// Reads the attributes the macro cares about, and removes its own from `attrs`.
fn take_attrs(attrs: &mut Vec<Attribute>) -> Attrs {
    let mut read = Attrs::default();
    attrs.retain(|attr| {
        if attr.path().is_ident("wirecall") {
            read.own.extend(own_keys(attr));
            false
        } else if is_legacy_skip_debug(attr) {
            read.own.push(OwnKey {
                attr: attr.clone(),
                key: Some(Ident::new("skip_debug", attr.pound_token.span)),
            });
            false
        } else {
            if attr.path().is_ident("prost") {
                read.prost.push(attr.clone());
            }
            read.serde.extend(serde_keys(&attr.meta, attr));
            read.derives.extend(derived_paths(attr));
            true
        }
    });
    read
}

/// The keys of `#[wirecall(a, b)]`; one entry without a key when it is not a list of words.
fn own_keys(attr: &Attribute) -> Vec<OwnKey> {
    let words = match &attr.meta {
        Meta::List(_) => attr
            .parse_args_with(Punctuated::<Ident, Token![,]>::parse_terminated)
            .ok()
            .filter(|words| !words.is_empty()),
        _ => None,
    };
    match words {
        Some(words) => words
            .into_iter()
            .map(|key| OwnKey {
                attr: attr.clone(),
                key: Some(key),
            })
            .collect(),
        None => vec![OwnKey {
            attr: attr.clone(),
            key: None,
        }],
    }
}

/// `#[prost(skip_debug)]`, the older spelling of `#[wirecall(skip_debug)]`.
fn is_legacy_skip_debug(attr: &Attribute) -> bool {
    attr.path().is_ident("prost")
        && attr
            .parse_args::<Ident>()
            .is_ok_and(|word| word == "skip_debug")
}

/// `#[serde(...)]`, or a `#[cfg_attr(...)]` that holds one.
fn is_serde(attr: &Attribute) -> bool {
    !serde_keys(&attr.meta, attr).is_empty()
}

/// The keys of `meta` when it is `serde(...)`, or of the `serde(...)` inside a
/// `cfg_attr(predicate, ...)`; `attr` is the outer attribute, which errors point at.
fn serde_keys(meta: &Meta, attr: &Attribute) -> Vec<SerdeKey> {
    let unreadable = || {
        vec![SerdeKey {
            attr: attr.clone(),
            key: None,
        }]
    };
    if meta.path().is_ident("serde") {
        let Meta::List(list) = meta else {
            return unreadable();
        };
        return match list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
            Ok(metas) if !metas.is_empty() => metas
                .iter()
                .map(|meta| SerdeKey {
                    attr: attr.clone(),
                    key: meta
                        .path()
                        .get_ident()
                        .map(|ident| ident.unraw().to_string()),
                })
                .collect(),
            _ => unreadable(),
        };
    }
    if meta.path().is_ident("cfg_attr") {
        if let Meta::List(list) = meta {
            // `cfg_attr(predicate, attr, attr, ...)`: the attributes after the predicate.
            if let Ok(metas) = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            {
                return metas
                    .iter()
                    .skip(1)
                    .flat_map(|inner| serde_keys(inner, attr))
                    .collect();
            }
        }
    }
    Vec::new()
}

/// The paths listed in a `#[derive(...)]` attribute; nothing for other attributes.
fn derived_paths(attr: &Attribute) -> Vec<Path> {
    if !attr.path().is_ident("derive") {
        return Vec::new();
    }
    attr.parse_args_with(Punctuated::<Path, Token![,]>::parse_terminated)
        .map(|paths| paths.into_iter().collect())
        // A malformed derive is reported by rustc itself.
        .unwrap_or_default()
}

fn discriminant_value(expr: &Expr) -> Option<i64> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => int.base10_parse().ok(),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => discriminant_value(expr).map(|value| -value),
        Expr::Group(group) => discriminant_value(&group.expr),
        Expr::Paren(paren) => discriminant_value(&paren.expr),
        _ => None,
    }
}
