//! `call`: one call with JSON arguments keyed by argument name, the reply printed as JSON
//! (a server stream's items are printed by `stream.rs`, and a method that takes an upload is
//! called by `upload.rs`).

use crate::output::out;
use std::io::Read as _;

use bytes::Bytes;
use futures::Stream;
use serde_json::Value;
use wirecall::client::reply_metadata::with_reply_metadata;
use wirecall::client::{ItemStream, Method};
use wirecall::reflect::{JsonArgs, JsonItem, MethodSchema, ReplySchema};
use wirecall::{Channel, Codec};

use crate::connect::ConnectOptions;
use crate::describe::fetch_method;
use crate::error::CliError;
use crate::reply_metadata::print_metadata;
use crate::upload_lines::UploadSource;

/// A method ready to be called: where, what, the encoded arguments and, for a method that
/// takes an upload, where its items come from.
pub struct PreparedCall {
    /// The channel, on the JSON codec.
    pub channel: Channel,
    /// `Service.method`.
    pub target: String,
    /// The method's schema.
    pub method: MethodSchema,
    /// The method as the channel calls it: by its names, idempotent as its schema says.
    pub declared: Method,
    /// The arguments as a JSON object.
    pub args: Value,
    /// The same, encoded.
    pub payload: Bytes,
    /// Where the upload is read from: `Some` exactly when the method takes one.
    pub upload_source: Option<UploadSource>,
}

impl PreparedCall {
    /// Connects with the JSON codec, learns the method by reflection and checks `args`
    /// against its argument names. `upload` is the `--upload` option: for a method that
    /// takes an upload, where its items come from (standard input when not given, which
    /// then cannot also carry the arguments); for any other method it must be `None`.
    pub async fn new(
        options: &ConnectOptions,
        addr: &str,
        target: &str,
        args: Option<&str>,
        upload: Option<UploadSource>,
    ) -> Result<Self, CliError> {
        options.json_only()?;
        // Arguments given on the command line are checked before connecting; standard input
        // is read only once the method says whether it carries the upload instead.
        let given_args = match args {
            None | Some("-") => None,
            Some(operand) => Some(read_args_operand(operand)?),
        };
        let channel = options.connect(addr, Some(Codec::Json)).await?;
        let (service, method) = fetch_method(&channel, target).await?;
        let declared = Method::named(service.name.clone(), method.name.clone());
        let declared = if method.idempotent {
            declared.idempotent()
        } else {
            declared
        };
        let upload_source = match (&method.upload, upload) {
            (Some(_), upload) => Some(upload.unwrap_or(UploadSource::Stdin)),
            (None, None) => None,
            (None, Some(_)) => {
                return Err(CliError::Input(format!(
                    "{target} takes no upload; drop `--upload`"
                )))
            }
        };
        let args = match given_args {
            Some(args) => args,
            None if upload_source.as_ref().is_some_and(UploadSource::is_stdin) => {
                if args == Some("-") {
                    return Err(CliError::Input(format!(
                        "standard input carries the upload of {target}, so it cannot carry \
                         the arguments too; give them as the operand or `@file`, or read the \
                         upload from a file with `--upload FILE`"
                    )));
                }
                Value::Object(Default::default())
            }
            None => read_args_from_stdin()?,
        };
        let payload = check_args(&method, &args)?;
        Ok(Self {
            channel,
            target: target.to_owned(),
            method,
            declared,
            args,
            payload,
            upload_source,
        })
    }

    /// Sends the call (a one-way method gets no reply: `None`).
    pub async fn send(&self) -> Result<Option<Bytes>, wirecall::Error> {
        if self.method.oneway {
            self.channel
                .notify_raw(&self.declared, Codec::Json, self.payload.clone())
                .await?;
            return Ok(None);
        }
        self.channel
            .call_raw(&self.declared, Codec::Json, self.payload.clone())
            .await
            .map(Some)
    }

    /// Opens the method as a server stream; each item is its whole item message.
    pub async fn open_stream(&self) -> Result<ItemStream<Value>, wirecall::Error> {
        self.channel
            .open_stream::<JsonArgs, JsonItem>(&self.declared, JsonArgs(self.args.clone()))
            .await
    }

    /// Opens a method that takes an upload, sending `items` (whole item messages,
    /// `{"value": ...}`) as the server's credit allows; the server's items (the one reply of
    /// a client-streaming method, or a bidirectional method's items) come as for
    /// [`open_stream`](Self::open_stream).
    pub async fn open_upload<S>(&self, items: S) -> Result<ItemStream<Value>, wirecall::Error>
    where
        S: Stream<Item = Value> + Send + 'static,
    {
        self.channel
            .open_upload::<JsonArgs, JsonItem, JsonItem, S>(
                &self.declared,
                JsonArgs(self.args.clone()),
                items,
            )
            .await
    }
}

/// What a reply message (or one item message of a stream) says, read with the method's
/// reply schema.
pub enum Answer<'a> {
    /// Nothing to print: the method returns `()` (or `Result<(), E>` with `Ok`).
    Nothing,
    /// The value the method returned (or its `Ok` value).
    Value(&'a Value),
    /// The method's application error (`Err(e)`).
    ApplicationError(&'a Value),
}

impl<'a> Answer<'a> {
    /// Reads `message`, `{"value": ...}` or `{"ok": ...}` / `{"err": ...}`, as `reply` says.
    pub fn read(reply: &ReplySchema, message: &'a Value) -> Self {
        match reply {
            ReplySchema::Unit => Self::Nothing,
            ReplySchema::Value(_) => Self::Value(&message["value"]),
            ReplySchema::Result { ok, .. } => {
                if !message["err"].is_null() {
                    Self::ApplicationError(&message["err"])
                } else if ok.is_some() {
                    Self::Value(&message["ok"])
                } else {
                    Self::Nothing
                }
            }
        }
    }
}

/// A value as the CLI prints a reply: indented JSON.
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Calls a unary (or one-way) method and prints its reply; a server stream is printed by
/// `stream::print_items` instead.
pub async fn print_reply(prepared: PreparedCall) -> Result<(), CliError> {
    let (reply, metadata) = with_reply_metadata(prepared.send()).await;
    let reply = reply?;
    print_metadata(&metadata);
    let Some(reply) = reply else {
        eprintln!("sent (one-way: the server sends no reply)");
        // Let the queued frame go out before the process exits.
        prepared.channel.close().await;
        return Ok(());
    };
    let reply: Value = serde_json::from_slice(&reply)
        .map_err(|error| CliError::Input(format!("the reply is not JSON: {error}")))?;
    print_answer(&prepared, &reply)
}

/// Prints a reply message as `call` does: the value indented on stdout, nothing for `()`, an
/// application error on stderr (then [`CliError::Application`]).
pub fn print_answer(prepared: &PreparedCall, reply: &Value) -> Result<(), CliError> {
    match Answer::read(&prepared.method.reply, reply) {
        Answer::Nothing => {}
        Answer::Value(value) => out!("{}", pretty(value))?,
        Answer::ApplicationError(error) => {
            eprintln!("{}", pretty(error));
            return Err(CliError::Application {
                method: prepared.target.clone(),
            });
        }
    }
    Ok(())
}

/// The arguments given as the operand: a JSON object, or `@file` to read it from a file.
fn read_args_operand(operand: &str) -> Result<Value, CliError> {
    match operand.strip_prefix('@') {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|error| CliError::Input(format!("cannot read {path}: {error}")))?;
            parse_args(&text)
        }
        None => parse_args(operand),
    }
}

/// The arguments read from standard input (the operand `-`, or none).
fn read_args_from_stdin() -> Result<Value, CliError> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|error| {
            CliError::Input(format!(
                "cannot read the arguments from standard input: {error}"
            ))
        })?;
    parse_args(&text)
}

/// The arguments text as JSON; nothing at all means none (`{}`).
fn parse_args(text: &str) -> Result<Value, CliError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(text)
        .map_err(|error| CliError::Input(format!("the arguments are not JSON: {error}")))
}

/// Checks that `args` is an object whose keys are argument names; returns it encoded.
fn check_args(method: &MethodSchema, args: &Value) -> Result<Bytes, CliError> {
    let expected = || {
        let names: Vec<String> = method
            .args
            .iter()
            .map(|arg| format!("{}: {}", arg.name, arg.ty))
            .collect();
        if names.is_empty() {
            format!("{} takes no arguments; pass {{}}", method.name)
        } else {
            format!("{} takes {{{}}}", method.name, names.join(", "))
        }
    };
    let Value::Object(object) = args else {
        return Err(CliError::Input(format!(
            "the arguments must be a JSON object keyed by argument name; {}",
            expected()
        )));
    };
    if let Some(unknown) = object
        .keys()
        .find(|key| !method.args.iter().any(|arg| &arg.name == *key))
    {
        return Err(CliError::Input(format!(
            "unknown argument `{unknown}`; {}",
            expected()
        )));
    }
    serde_json::to_vec(args)
        .map(Bytes::from)
        .map_err(|error| CliError::Input(error.to_string()))
}
