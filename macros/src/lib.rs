//! Procedural macros for [wirecall](https://docs.rs/wirecall): `#[service]` and `#[message]`.
//!
//! Use them through the `wirecall` crate (`#[wirecall::service]`, `#[wirecall::message]`);
//! the generated code refers to `::wirecall`, so this crate is not meant to be used alone.
//!
//! Layout: `parse.rs` reads the trait into a model, `validate.rs` checks it, `codegen/` writes
//! the trait, client, server and wire messages, `proto_type.rs` maps Rust types to protobuf
//! fields (shared with `message.rs`), and `method_id.rs` computes method ids.

#![warn(missing_docs)]

mod codegen;
mod expansion;
mod message;
mod method_id;
mod parse;
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
/// - **`TClient`**: `connect(addr)`, `new(channel)`, `channel()`, `codec()`,
///   `with_timeout(duration)`, the constant `SERVICE_NAME`, and one method per trait method with
///   the same arguments and the user's doc comments:
///   - `async fn m(&self, ..) -> R` becomes `async fn m(&self, ..) -> Result<R, wirecall::Error>`;
///   - `-> Result<T, E>` becomes `-> Result<Result<T, E>, wirecall::Error>`: the service's own
///     error `E` travels to the client as a value, `wirecall::Error` is a transport or
///     protocol failure.
/// - **`TServer<S>`**: `TServer::new(impl)` or `TServer::from_arc(arc)`, which implements
///   `wirecall::Service`; pass it to `wirecall::ServerBuilder::serve`.
/// - Private per-method argument and reply structs that every codec (JSON, MessagePack,
///   Protobuf) can encode.
///
/// `TClient` and `TServer` get the trait's visibility.
///
/// # Methods
///
/// Every method is `async fn name(&self, arg: Type, ...)`, with owned, concretely typed
/// arguments bound to plain names. Not allowed: generics, lifetimes, `&mut self` or `self`,
/// references (take `String`, not `&str`), `impl Trait`, default bodies, associated types or
/// consts, and the names `connect`, `new`, `channel`, `codec` and `with_timeout` (the client
/// has methods with those names). Each mistake is a compile error on the offending tokens that
/// says what to write instead.
///
/// # `#[oneway]`
///
/// A method marked `#[oneway]` returns `()` and gets no reply: the client method resolves once
/// the request is queued, and the server runs the handler without answering.
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
/// Arguments and return values must map to protobuf, the most restrictive of the codecs:
/// `bool`, `u32`, `u64`, `i32`, `i64`, `f32`, `f64`, `String`, `Vec<u8>`, `Bytes`, structs
/// marked [`#[wirecall::message]`](macro@message), and `Vec<T>`, `Option<T>`,
/// `HashMap<K, V>` and `BTreeMap<K, V>` of those (map keys: integers, `bool` or `String`).
/// Inside `Result<T, E>`, `T` and `E` are each a single value (or `T` is `()`): wrap lists and
/// maps in a message. 8- and 16-bit integers, `usize`, `char`, tuples, arrays, `Option<Vec<T>>`
/// and nested lists are refused with a hint.
///
/// # Seeing the expansion
///
/// Set `WIRECALL_EXPAND=1` (every service) or `WIRECALL_EXPAND=UserService` (one trait) while
/// compiling to print the generated code to stderr. Cargo does not rebuild when only the
/// variable changes; touch the file that holds the trait.
#[proc_macro_attribute]
pub fn service(args: TokenStream, item: TokenStream) -> TokenStream {
    service::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// One line: `#[wirecall::message]` makes a struct work with JSON, MessagePack and Protobuf.
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
/// }
/// ```
///
/// It adds the serde `Serialize`/`Deserialize` derives and prost's `Message` derive (through
/// `wirecall`'s re-exports, so you add no dependencies), and gives each field a protobuf tag:
/// its 1-based position. Reordering fields therefore changes the Protobuf encoding; add new
/// fields at the end. A field that already has its own `#[prost(...)]` attribute is left as
/// written.
///
/// Field types follow the same rule as service arguments (see
/// [`#[wirecall::service]`](macro@service#types)).
///
/// The struct also gets `Default` (every field at its protobuf default) and, unless you derive
/// `Debug` yourself, a `Debug` impl. Do not derive `Default`: it would conflict.
///
/// Only structs with named fields and no generics are messages; enums, tuple structs and unit
/// structs are refused with a hint.
#[proc_macro_attribute]
pub fn message(args: TokenStream, item: TokenStream) -> TokenStream {
    message::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
