//! Procedural macros for [wirecall](https://docs.rs/wirecall): `#[service]`, `#[message]` and
//! `#[events]`.
//!
//! Use them through the `wirecall` crate (`#[wirecall::service]`, `#[wirecall::message]`);
//! the generated code refers to `::wirecall` (or the path given with `crate = "..."`), so this
//! crate is not meant to be used alone.
//!
//! Layout: both macros run parse -> validate -> codegen. `#[service]`: `service.rs` joins
//! the stages, `parse.rs` reads the trait into a model, `validate.rs` checks it, `codegen/`
//! writes the trait, client, server and wire messages. `#[message]`: `message/` holds the same
//! three stages for a struct or enum. Shared by both: `codegen/proto_impls.rs` (the Protobuf
//! and serde impls of every wire struct and enum) and `codegen/reflect.rs` (schemas),
//! `proto_type.rs` (the rules for which types can travel, and how a type is written in serde),
//! `errors.rs` (collecting errors). `#[events]`: `events/` reuses the service parser and its
//! signature and type rules, and generates a publisher and a subscriber adapter. Method ids come from `wirecall-wire`, the crate the runtime
//! uses too, so both compute the same hash. How each type looks on the wire is decided by
//! trait impls in the runtime (`codec/proto`).

#![warn(missing_docs)]

mod codegen;
mod crate_path;
mod errors;
mod events;
mod expansion;
mod message;
mod parse;
mod policy;
mod proto_type;
mod service;
mod validate;

use proc_macro::TokenStream;

/// Turns a trait into an RPC service: a client, a server and the wire messages between them.
///
/// ```ignore
/// #[wirecall::service]
/// pub trait UserService {
///     /// Returns the id of `name`.
///     async fn get_user_id(&self, name: String) -> u64;
///     async fn find(&self, id: u64) -> Result<UserModel, NotFound>;
///     #[oneway]
///     async fn notify(&self, message: String);
/// }
///
/// struct Users;
///
/// impl UserService for Users {
///     async fn get_user_id(&self, name: String) -> u64 { 7 }
///     async fn find(&self, id: u64) -> Result<UserModel, NotFound> { Err(NotFound::default()) }
///     async fn notify(&self, message: String) {}
/// }
///
/// // Server side:
/// let server = wirecall::Server::builder().serve(UserServiceServer::new(Users)).bind(addr).await?;
/// // Client side:
/// let client = UserServiceClient::connect(addr).await?;
/// let id: u64 = client.get_user_id("ada".to_owned()).await?;
/// ```
///
/// # What is generated
///
/// For a trait `T`:
///
/// - **The trait itself**, with `Send + Sync + 'static` added and each `async fn` rewritten to
///   return `impl Future<Output = R> + Send`. Implement it with plain `async fn`; the futures
///   must be `Send` (they run on a multi-threaded runtime).
/// - **`TClient`**, over a `wirecall::Channel` to one server or to a balanced fleet:
///   `connect(addr)`, `discover(&registry, balance)`, `new(channel)`, `channel()`, `codec()`,
///   `with_timeout(duration)`, the constant `SERVICE_NAME`, and one method per trait method with
///   the same arguments and the user's doc comments:
///   - `async fn m(&self, ..) -> R` becomes `async fn m(&self, ..) -> Result<R, wirecall::Error>`;
///   - `-> Result<T, E>` becomes `-> Result<Result<T, E>, wirecall::Error>`: the service's own
///     error `E` travels to the client as a value, `wirecall::Error` is a transport or
///     protocol failure.
/// - **`TServer<S>`**: `TServer::new(impl)` or `TServer::from_arc(arc)`, which implements
///   `wirecall::Service`; pass it to `wirecall::ServerBuilder::serve`.
/// - A private type per method naming its messages (arguments, reply or items, upload) as the
///   runtime's generic messages, which every codec (JSON, MessagePack, Protobuf) encodes.
///
/// `TClient` and `TServer` get the trait's visibility.
///
/// # Methods
///
/// Every method is `async fn name(&self, arg: Type, ...)`, with at most 16 owned, concretely
/// typed arguments bound to plain names. Not allowed: generics, lifetimes, `&mut self` or `self`,
/// references (take `String`, not `&str`), `impl Trait`, default bodies, associated types or
/// consts, the names `connect`, `discover`, `new`, `channel`, `codec` and `with_timeout` (the client
/// has methods with those names) and the names of its trait methods (`clone`, `fmt`, ...).
/// `#[cfg]` on a method reaches everything generated for it; `#[deprecated]` warns callers of
/// the client method, not the generated code. Each mistake is a compile error on the offending tokens that
/// says what to write instead.
///
/// # `#[oneway]`
///
/// A method marked `#[oneway]` returns `()` and gets no reply: the client method resolves once
/// the request is queued, and the server runs the handler without answering.
///
/// # `#[idempotent]`
///
/// A method marked `#[idempotent]` may run more than once with the same effect as once (a
/// read, a put of a whole value). A client over a balanced
/// [`Channel`](../wirecall/struct.Channel.html) retries such a call on another endpoint when
/// its connection fails, within the call's deadline and the retry budget; other methods are
/// only retried when the server certainly did not run them (`Error::outcome()`). The
/// mark also appears in the service's reflection schema (`wirecall::reflect`), so callers and
/// tools know a retry is safe.
///
/// # Reflection
///
/// The generated server describes the service (methods, argument names and types, reply and
/// error types, marks, doc comments) through `wirecall::Service::schema`, which the built-in
/// `wirecall.Reflection` service serves; argument and reply types are described through
/// `wirecall::reflect::Reflect`, which `#[wirecall::message]` implements.
///
/// # `name = "..."`
///
/// `#[wirecall::service(name = "pkg.UserService")]` sets the service's wire name (default: the
/// trait's name). Method ids are the 64-bit FNV-1a hash of `"{service name}.{method name}"`
/// (the same as `wirecall::method_id`), so renaming the service or a method is a wire
/// change, while reordering methods is not.
///
/// # Types
///
/// Arguments and return values are the types of the book's type table, in all three codecs:
/// every integer up to 64 bits, `f32`, `f64`, `bool`, `char`, `String`, `Vec<u8>`, `Bytes`,
/// `Duration`, `SystemTime`, structs and enums marked
/// [`#[wirecall::message]`](macro@message), and `Option`, `Box`, `Vec`, `HashSet`,
/// `BTreeSet`, `HashMap`, `BTreeMap`, arrays and tuples (up to 8) of those, nested as you like;
/// `Result<T, E>` takes any of them on either side. `usize`, `isize`, 128-bit integers,
/// references and a few collections are refused with a hint; any other type is reported on
/// the type itself with "add `#[wirecall::message]`".
///
/// # `codecs(...)`
///
/// `#[wirecall::service(codecs(json, msgpack))]` makes a service whose types need only serde's
/// `Serialize`/`Deserialize`: it never uses Protobuf, its client's `connect` offers only the
/// listed codecs, and a server serving it offers only the codecs all its services support.
///
/// # `crate = "..."`
///
/// Generated code reaches wirecall through `::wirecall`. A crate that depends on it under
/// another name (`rpc = { package = "wirecall", .. }` in `Cargo.toml`), or through a
/// re-export, gives that path as a string, like serde's `#[serde(crate = "...")]`:
///
/// ```ignore
/// #[rpc::service(crate = "rpc")]
/// pub trait Pinger {
///     async fn ping(&self, count: u32) -> u32;
/// }
/// ```
///
/// `"rpc"`, `"::rpc"` and `"deps::wirecall"` are all accepted; give the same argument to
/// [`#[message]`](macro@message) on the service's types.
///
/// # Seeing the expansion
///
/// Set `WIRECALL_EXPAND=1` (every service) or `WIRECALL_EXPAND=UserService` (one trait) while
/// compiling to print the generated code to stderr, formatted by `prettyplease`. Cargo does not rebuild when only the
/// variable changes; touch the file that holds the trait.
#[proc_macro_attribute]
pub fn service(args: TokenStream, item: TokenStream) -> TokenStream {
    service::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// One line: `#[wirecall::message]` makes a struct or an enum work with JSON, MessagePack
/// and Protobuf.
///
/// ```ignore
/// #[wirecall::message]
/// #[derive(Clone, PartialEq)]
/// pub struct UserModel {
///     pub id: u64,
///     pub name: String,
///     pub tags: Vec<String>,
///     pub manager: Option<Manager>,
///     pub settings: HashMap<String, String>,
///     pub role: Role,
/// }
///
/// #[wirecall::message]
/// #[derive(Clone, Copy, PartialEq)]
/// pub enum Role { Guest, Member, #[wirecall(other)] Unknown }
/// ```
///
/// A struct with named fields gets serde's `Serialize`, a `Deserialize` that tolerates added
/// and removed trailing fields, the Protobuf encoding (field `n` is the `n`th field, so add new
/// fields at the end), `Default` (do not derive it) and, unless you derive `Debug` yourself or
/// write `#[wirecall(skip_debug)]`, a `Debug` impl. You add no dependencies.
///
/// A unit-only enum is a protobuf `enum` (variant numbers are the discriminants; one must be
/// 0), the variant name in JSON and its number in MessagePack. An enum with data is a message
/// with one `oneof` field per variant, externally tagged in JSON and MessagePack. A unit
/// variant marked `#[wirecall(other)]` (the last one) receives variants this side does not
/// know; without it they are a decode error.
///
/// `#[serde(...)]` attributes are refused wherever they appear (the three codecs use the Rust
/// names and field numbers, so serde's would hold in some codecs and not others), each with
/// what to write instead; so are `#[prost(...)]` and `#[wirecall(...)]` keys other than
/// `skip_debug` (on the type) and `other` (on a variant).
///
/// Field types follow the same rule as service arguments (see
/// [`#[wirecall::service]`](macro@service#types)). Generic messages, tuple and unit structs
/// are refused with a hint.
///
/// The only argument is `crate = "..."`, the path to wirecall for a crate that renames the
/// dependency or reaches it through a re-export (`#[rpc::message(crate = "rpc")]`; see
/// [`#[wirecall::service]`](macro@service#crate--)). `#[wirecall(other)]` keeps its name
/// either way.
#[proc_macro_attribute]
pub fn message(args: TokenStream, item: TokenStream) -> TokenStream {
    message::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns a trait into an event contract: a typed publisher, and a subscriber adapter for
/// implementations of the trait.
///
/// ```ignore
/// #[wirecall::events]
/// pub trait UserEvents {
///     /// A user signed up.
///     async fn user_created(&self, user: UserModel);
///     async fn user_deleted(&self, id: u64) -> Result<(), BillingError>;
/// }
///
/// let bus = wirecall::events::EventBus::in_process();
/// let _billing = bus.subscribe("billing", UserEventsSubscriber::new(Billing)).await?;
/// UserEventsPublisher::new(&bus).user_created(user).await?;
/// ```
///
/// # What is generated
///
/// - **The trait itself**, with `Send + Sync + 'static` added and each `async fn` returning a
///   `Send` future, as `#[service]` does.
/// - **`TPublisher`**: `new(&bus)`, `with_codec(codec)`, `with_metadata(metadata)`, `bus()`,
///   `codec()`, the constant `CONTRACT` (a `wirecall::events::ContractDescriptor`), and one
///   `async fn event(&self, ..) -> Result<(), wirecall::events::PublishError>` per event,
///   with the user's doc comments.
/// - **`TSubscriber<S>`**: `TSubscriber::new(impl)` or `from_arc(arc)`, which implements
///   `wirecall::events::EventHandler`; pass it to `EventBus::subscribe`. (A subscriber is a
///   wrapper rather than the implementation itself because the bus's trait is foreign to the
///   user's crate: a blanket impl over every `S: T` is not allowed there.)
///
/// # Events
///
/// Every event is `async fn name(&self, arg: Type, ...)` with the same argument and type
/// rules as a `#[service]` method (the arguments are the payload, encoded like a call's
/// arguments), returning nothing or `Result<(), E>` with `E: Display`: an `Err` or a panic
/// retries the event. Anything else, `#[oneway]`/`#[idempotent]`, and the names of the
/// publisher's own methods are compile errors that say what to write instead.
///
/// The arguments `name = "..."` (the contract's name: the exchange, default the trait's
/// name), `codecs(...)` and `crate = "..."` are those of `#[service]`.
#[proc_macro_attribute]
pub fn events(args: TokenStream, item: TokenStream) -> TokenStream {
    events::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;

    /// Every absolute path in `expansion` starts at `::core`, `::std` or `::wirecall`, and
    /// prost is only reached through `::wirecall::__private`: a user needs no dependency but
    /// wirecall, and their own imports cannot change what generated code names.
    fn assert_paths_go_through_wirecall(expansion: &TokenStream) {
        let mut text = expansion.to_string();
        for delimiter in ["(", ")", "[", "]", "{", "}", ",", ";", "<", ">", "&", "#"] {
            text = text.replace(delimiter, &format!(" {delimiter} "));
        }
        let tokens: Vec<&str> = text.split_whitespace().collect();
        for (index, token) in tokens.iter().enumerate() {
            if *token != "::" {
                continue;
            }
            let previous = index.checked_sub(1).map(|i| tokens[i]);
            let continues_a_path = previous.is_some_and(|prev| {
                prev == ">" || prev.chars().all(|c| c.is_alphanumeric() || c == '_')
            });
            if !continues_a_path {
                let root = tokens.get(index + 1).copied().unwrap_or_default();
                assert!(
                    ["core", "std", "wirecall"].contains(&root),
                    "absolute path from `::{root}` in {text}"
                );
            }
            if tokens.get(index + 1) == Some(&"prost") {
                assert_eq!(
                    previous,
                    Some("__private"),
                    "prost named directly in {text}"
                );
            }
        }
    }

    #[test]
    fn a_service_expansion_names_only_wirecall_core_and_std() {
        let expansion = crate::service::expand(
            TokenStream::new(),
            quote! {
                pub trait Catalog {
                    async fn index(&self, by: BTreeMap<String, Vec<u8>>) -> Result<Option<Item>, Missing>;
                    #[oneway]
                    async fn touch(&self, at: SystemTime);
                }
            },
        )
        .expect("expands");
        assert_paths_go_through_wirecall(&expansion);
    }

    #[test]
    fn message_expansions_name_only_wirecall_core_and_std() {
        for item in [
            quote!(
                pub struct Item {
                    pub parent: Option<Item>,
                    pub tags: BTreeMap<u32, Tag>,
                }
            ),
            quote!(
                pub enum Tag {
                    Red,
                    Blue = 3,
                    #[wirecall(other)]
                    Other = 9,
                }
            ),
            quote!(
                pub enum Event {
                    Start(u64),
                    Move {
                        to: String,
                    },
                    Stop,
                    #[wirecall(other)]
                    Unknown,
                }
            ),
        ] {
            let expansion = crate::message::expand(TokenStream::new(), item).expect("expands");
            assert_paths_go_through_wirecall(&expansion);
        }
    }

    #[test]
    fn an_events_expansion_names_only_wirecall_core_and_std() {
        let contract = quote! {
            pub trait Audit {
                async fn happened(&self, what: BTreeMap<String, Vec<u8>>, at: SystemTime);
                async fn failed(&self, id: u64) -> Result<(), Missing>;
                async fn ticked(&self);
            }
        };
        let expansion =
            crate::events::expand(TokenStream::new(), contract.clone()).expect("expands");
        assert!(!expansion.to_string().contains("compile_error"));
        assert_paths_go_through_wirecall(&expansion);
        let renamed = crate::events::expand(quote!(crate = "rpc"), contract).expect("expands");
        assert!(!renamed.to_string().contains("compile_error"));
        assert!(!names_wirecall(renamed));
    }

    /// Whether `tokens` name wirecall other than through the chosen crate path: an identifier
    /// `wirecall`, or a string such as serde's `crate = "::wirecall::..."`.
    fn names_wirecall(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|tree| match tree {
            proc_macro2::TokenTree::Group(group) => names_wirecall(group.stream()),
            proc_macro2::TokenTree::Ident(ident) => ident == "wirecall",
            proc_macro2::TokenTree::Literal(literal) => literal.to_string().contains("::wirecall"),
            proc_macro2::TokenTree::Punct(_) => false,
        })
    }

    #[test]
    fn a_crate_path_replaces_every_path_to_wirecall() {
        let service = quote! {
            pub trait Catalog {
                async fn index(&self, by: BTreeMap<String, Option<Option<u8>>>) -> Result<Option<Item>, Missing>;
                #[oneway]
                async fn touch(&self, at: SystemTime);
            }
        };
        let messages = [
            quote!(
                pub struct Item {
                    pub parent: Option<Option<Item>>,
                }
            ),
            quote!(
                pub enum Tag {
                    Red,
                    #[wirecall(other)]
                    Other,
                }
            ),
            quote!(
                pub enum Event {
                    Start(u64),
                    Move { to: String },
                }
            ),
        ];
        for (args, root, serde_crate) in [
            (
                quote!(crate = "rpc"),
                "rpc :: __private",
                "\"rpc::__private::serde\"",
            ),
            (
                quote!(crate = "::my_reexports::rpc"),
                ":: my_reexports :: rpc :: __private",
                "\"::my_reexports::rpc::__private::serde\"",
            ),
        ] {
            let mut expansions = vec![
                crate::service::expand(args.clone(), service.clone()).expect("expands"),
                crate::service::expand(quote!(codecs(json), #args), service.clone())
                    .expect("expands"),
            ];
            for message in &messages {
                expansions
                    .push(crate::message::expand(args.clone(), message.clone()).expect("expands"));
            }
            for expansion in expansions {
                let text = expansion.to_string();
                assert!(!text.contains("compile_error"), "{text}");
                assert!(
                    !names_wirecall(expansion),
                    "wirecall named directly in {text}"
                );
                assert!(text.contains(root), "no `{root}` in {text}");
                if text.contains("serde (crate") {
                    assert!(text.contains(serde_crate), "no {serde_crate} in {text}");
                }
            }
        }
        // The default still names `::wirecall`.
        let default = crate::service::expand(TokenStream::new(), service).expect("expands");
        assert!(names_wirecall(default));
    }
}
