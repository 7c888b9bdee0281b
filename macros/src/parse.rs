//! Parsing: the `#[service(...)]` arguments and the user's trait into a [`ServiceDef`].
//!
//! Parsing is lenient: it records what the user wrote (with spans) and leaves judging it to
//! `validate.rs`, so that every problem can be reported at once.

use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{
    Attribute, FnArg, Ident, ItemTrait, LitStr, Pat, Receiver, ReturnType, Signature, Token,
    TraitItem, TraitItemFn, Type,
};

use crate::crate_path::{self, CratePath};
use crate::errors::Errors;
use crate::policy::{take_policy, PolicyDef};

/// The arguments of `#[wirecall::service(...)]`.
#[derive(Default)]
pub struct ServiceArgs {
    /// `name = "pkg.UserService"`: the wire name.
    pub name: Option<LitStr>,
    /// `codecs(json, msgpack)`: the codecs the service's types support (default: all).
    pub codecs: Option<Vec<CodecName>>,
    /// `crate = "rpc"`: the path generated code names wirecall by.
    pub krate: Option<CratePath>,
}

/// A codec named in `codecs(...)`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum CodecName {
    Json,
    MessagePack,
    Protobuf,
}

impl Parse for ServiceArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut args = ServiceArgs::default();
        while !input.is_empty() {
            let key: Ident = input.call(Ident::parse_any)?;
            if key == "codecs" {
                if args.codecs.is_some() {
                    return Err(syn::Error::new_spanned(
                        &key,
                        "`codecs` is given twice; keep one",
                    ));
                }
                args.codecs = Some(parse_codecs(input, &key)?);
            } else if key == "name" {
                input.parse::<Token![=]>()?;
                let value: LitStr = input.parse()?;
                if args.name.is_some() {
                    return Err(syn::Error::new_spanned(
                        &key,
                        "`name` is given twice; keep one",
                    ));
                }
                if value.value().is_empty() {
                    return Err(syn::Error::new_spanned(
                        &value,
                        "the service name cannot be empty; write e.g. `name = \"pkg.UserService\"`",
                    ));
                }
                args.name = Some(value);
            } else if key == "crate" {
                if args.krate.is_some() {
                    return Err(syn::Error::new_spanned(
                        &key,
                        "`crate` is given twice; keep one",
                    ));
                }
                args.krate = Some(crate_path::parse_value(input, &key)?);
            } else {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!(
                        "unknown argument `{key}`; the arguments are `name = \"pkg.Service\"`, \
                         `codecs(json, msgpack, protobuf)` and `crate = \"path::to::wirecall\"`"
                    ),
                ));
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(args)
    }
}

/// `(json, msgpack, ...)` after `codecs`.
fn parse_codecs(input: ParseStream, key: &Ident) -> syn::Result<Vec<CodecName>> {
    let content;
    syn::parenthesized!(content in input);
    let names = content.parse_terminated(Ident::parse_any, Token![,])?;
    let mut codecs = Vec::new();
    for name in &names {
        let codec = match name.to_string().as_str() {
            "json" => CodecName::Json,
            "msgpack" => CodecName::MessagePack,
            "protobuf" => CodecName::Protobuf,
            _ => {
                return Err(syn::Error::new_spanned(
                    name,
                    "unknown codec; write `json`, `msgpack` or `protobuf`",
                ))
            }
        };
        if !codecs.contains(&codec) {
            codecs.push(codec);
        }
    }
    if codecs.is_empty() {
        return Err(syn::Error::new_spanned(
            key,
            "list at least one codec, e.g. `codecs(json, msgpack)`",
        ));
    }
    Ok(codecs)
}

impl ServiceDef {
    /// Whether the service's types travel in Protobuf (and so must map to it).
    pub fn protobuf(&self) -> bool {
        self.codecs.contains(&CodecName::Protobuf)
    }
}

/// The user's trait, as the rest of the macro sees it.
pub struct ServiceDef {
    /// The trait as written, minus `#[oneway]`, `#[idempotent]` and `#[wirecall(..)]`
    /// attributes: what we emit if validation fails.
    pub item: ItemTrait,
    /// The name on the wire: `name = ...` or the trait's identifier.
    pub wire_name: String,
    /// The codecs of `codecs(...)`, or every codec.
    pub codecs: Vec<CodecName>,
    /// The root of generated paths to wirecall: `crate = ...`, or `::wirecall`.
    pub krate: CratePath,
    /// The trait's `fn` items, in order.
    pub methods: Vec<MethodDef>,
    /// The trait's `#[wirecall(..)]`: the policy defaults of its methods.
    pub policy: PolicyDef,
    /// Malformed `#[wirecall(..)]` keys and values, reported with validation's errors.
    pub policy_errors: Option<syn::Error>,
}

/// One `fn` of the trait.
pub struct MethodDef {
    /// The method name with any `r#` removed: its name on the wire.
    pub wire_name: String,
    /// Every attribute the user wrote, minus `#[oneway]`, `#[idempotent]` and
    /// `#[wirecall(..)]`.
    pub attrs: Vec<Attribute>,
    /// The `#[oneway]` attribute, kept for its span.
    pub oneway: Option<Attribute>,
    /// The `#[idempotent]` attribute: the call may run twice with no harm, so a balanced
    /// client may retry it on another endpoint.
    pub idempotent: Option<Attribute>,
    /// The signature as written.
    pub sig: Signature,
    /// Whether the method has a default body (refused by validation).
    pub default_body: Option<syn::Block>,
    /// `self`, `&self`, ...; `None` when the first parameter is not a receiver.
    pub receiver: Option<Receiver>,
    /// The non-receiver parameters.
    pub args: Vec<ArgDef>,
    /// What the method returns.
    pub reply: ReplyShape,
    /// The argument of type `Streaming<T>` (the index in `args`), for a method the client
    /// streams items to (client or bidirectional streaming).
    pub upload: Option<usize>,
    /// The method's `#[wirecall(..)]`: its call policy.
    pub policy: PolicyDef,
}

/// One non-receiver parameter.
pub struct ArgDef {
    /// The pattern as written (validation requires a plain identifier).
    pub pat: Pat,
    /// The argument type as written.
    pub ty: Type,
}

impl ArgDef {
    /// The argument's name when the pattern is a plain identifier (`name` or `mut name`).
    pub fn ident(&self) -> Option<&Ident> {
        match &self.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => Some(&pat.ident),
            _ => None,
        }
    }
}

/// The three shapes a method's return type can take on the wire.
pub enum ReplyShape {
    /// No return type, or `-> ()`.
    Unit,
    /// `-> T`.
    Value(Type),
    /// `-> Result<T, E>`; `ok` is `None` for `Result<(), E>`.
    Result {
        /// The written return type, for spans.
        whole: Box<Type>,
        ok: Option<Box<Type>>,
        err: Box<Type>,
    },
    /// `-> Streaming<I>` (any path ending in `Streaming` with one type argument): a server
    /// stream whose items have the shape `item` (validation refuses a `Unit` or `Stream` one).
    Stream {
        /// The written return type, for spans.
        whole: Box<Type>,
        item: Box<ReplyShape>,
    },
}

impl ReplyShape {
    /// The shape of one message of the reply: the reply itself, or one item of a stream.
    pub fn message(&self) -> &ReplyShape {
        match self {
            Self::Stream { item, .. } => item,
            other => other,
        }
    }

    /// Whether the method is a server stream.
    pub fn is_stream(&self) -> bool {
        matches!(self, Self::Stream { .. })
    }
}

impl MethodDef {
    /// The upload argument and the type of its items, for a method that takes one.
    pub fn upload(&self) -> Option<(&ArgDef, &Type)> {
        let arg = &self.args[self.upload?];
        Some((arg, streaming_arg(&arg.ty)?))
    }

    /// Whether the method is called with an `Open` frame: it streams either way.
    pub fn is_stream_call(&self) -> bool {
        self.upload.is_some() || self.reply.is_stream()
    }
}

/// Parses the trait. Only non-trait input fails here; everything else is judged by `validate`.
pub fn parse_service(args: ServiceArgs, mut item: ItemTrait) -> ServiceDef {
    let wire_name = match &args.name {
        Some(name) => name.value(),
        None => item.ident.unraw().to_string(),
    };
    let mut errors = Errors::default();
    let policy = take_policy(&mut item.attrs, &mut errors);
    let mut methods = Vec::new();
    for trait_item in &mut item.items {
        if let TraitItem::Fn(method) = trait_item {
            let oneway = take_marker(&mut method.attrs, "oneway");
            let idempotent = take_marker(&mut method.attrs, "idempotent");
            let policy = take_policy(&mut method.attrs, &mut errors);
            methods.push(parse_method(method, oneway, idempotent, policy));
            strip_patterns(&mut method.sig);
        }
    }
    ServiceDef {
        item,
        wire_name,
        codecs: args
            .codecs
            .unwrap_or_else(|| vec![CodecName::MessagePack, CodecName::Protobuf, CodecName::Json]),
        methods,
        krate: args.krate.unwrap_or_default(),
        policy,
        policy_errors: errors.into_error(),
    }
}

/// Removes `#[oneway]` or `#[idempotent]` from `attrs`: they are our markers, not real
/// attributes, and must not reach the compiler.
fn take_marker(attrs: &mut Vec<Attribute>, marker: &str) -> Option<Attribute> {
    let index = attrs.iter().position(|attr| attr.path().is_ident(marker))?;
    Some(attrs.remove(index))
}

/// Rust refuses patterns (even `mut name`) in a method without a body, and the trait we emit
/// has none; keep the names and drop the rest so that the trait itself always compiles.
fn strip_patterns(sig: &mut Signature) {
    for input in &mut sig.inputs {
        let FnArg::Typed(typed) = input else { continue };
        match &mut *typed.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                pat.mutability = None;
            }
            other => {
                *other = Pat::Wild(syn::PatWild {
                    attrs: Vec::new(),
                    underscore_token: Default::default(),
                })
            }
        }
    }
}

fn parse_method(
    method: &TraitItemFn,
    oneway: Option<Attribute>,
    idempotent: Option<Attribute>,
    policy: PolicyDef,
) -> MethodDef {
    let mut receiver = None;
    let mut args = Vec::new();
    for (index, input) in method.sig.inputs.iter().enumerate() {
        match input {
            FnArg::Receiver(recv) if index == 0 => receiver = Some(recv.clone()),
            // A receiver anywhere else is already a rustc error; keep going.
            FnArg::Receiver(_) => {}
            FnArg::Typed(typed) => args.push(ArgDef {
                pat: (*typed.pat).clone(),
                ty: (*typed.ty).clone(),
            }),
        }
    }
    let upload = args.iter().position(|arg| streaming_arg(&arg.ty).is_some());
    MethodDef {
        wire_name: method.sig.ident.unraw().to_string(),
        attrs: method.attrs.clone(),
        oneway,
        idempotent,
        sig: method.sig.clone(),
        default_body: method.default.clone(),
        receiver,
        args,
        reply: reply_shape(&method.sig.output),
        upload,
        policy,
    }
}

fn reply_shape(output: &ReturnType) -> ReplyShape {
    let ty = match output {
        ReturnType::Default => return ReplyShape::Unit,
        ReturnType::Type(_, ty) => ty,
    };
    if let Some(item) = streaming_arg(ty) {
        return ReplyShape::Stream {
            whole: ty.clone(),
            item: Box::new(type_shape(item)),
        };
    }
    type_shape(ty)
}

/// The shape of one reply message of type `ty` (a stream inside a stream is kept as one, for
/// validation to refuse).
fn type_shape(ty: &Type) -> ReplyShape {
    if let Some(item) = streaming_arg(ty) {
        return ReplyShape::Stream {
            whole: Box::new(ty.clone()),
            item: Box::new(type_shape(item)),
        };
    }
    if is_unit(ty) {
        return ReplyShape::Unit;
    }
    if let Some((ok, err)) = result_args(ty) {
        return ReplyShape::Result {
            whole: Box::new(ty.clone()),
            ok: if is_unit(ok) {
                None
            } else {
                Some(Box::new(ok.clone()))
            },
            err: Box::new(err.clone()),
        };
    }
    ReplyShape::Value(ty.clone())
}

/// `I` of a type written `Streaming<I>` (any path ending in `Streaming` with one type
/// argument, such as `wirecall::Streaming<I>`).
pub fn streaming_arg(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() {
        return None;
    }
    let segment = path.path.segments.last()?;
    if segment.ident != "Streaming" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(generics) = &segment.arguments else {
        return None;
    };
    match generics.args.iter().collect::<Vec<_>>()[..] {
        [syn::GenericArgument::Type(item)] => Some(item),
        _ => None,
    }
}

/// `T` and `E` of a type written `Result<T, E>` (any path ending in `Result` with two type
/// arguments; a one-argument alias such as `io::Result<T>` is not a result shape).
fn result_args(ty: &Type) -> Option<(&Type, &Type)> {
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() {
        return None;
    }
    let segment = path.path.segments.last()?;
    if segment.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(generics) = &segment.arguments else {
        return None;
    };
    let mut types = generics.args.iter().filter_map(|arg| match arg {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    });
    let ok = types.next()?;
    let err = types.next()?;
    if types.next().is_some() || generics.args.len() != 2 {
        return None;
    }
    Some((ok, err))
}

/// `()`, possibly behind parentheses or a `macro_rules!` group.
pub fn is_unit(ty: &Type) -> bool {
    match ty {
        Type::Tuple(tuple) => tuple.elems.is_empty(),
        Type::Paren(paren) => is_unit(&paren.elem),
        Type::Group(group) => is_unit(&group.elem),
        _ => false,
    }
}
