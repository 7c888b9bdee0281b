//! `call`: one call with JSON arguments keyed by argument name, the reply printed as JSON
//! (a server stream's items are printed by `stream.rs`).

use crate::output::out;
use std::io::Read as _;

use bytes::Bytes;
use serde_json::Value;
use wirecall::client::ItemStream;
use wirecall::reflect::{JsonArgs, JsonItem, MethodSchema, ReplySchema};
use wirecall::{Channel, Codec, MethodId};

use crate::connect::ConnectOptions;
use crate::describe::{fetch_method, type_name};
use crate::error::CliError;

/// A method ready to be called: where, what, and the encoded arguments.
pub struct PreparedCall {
    /// The channel, on the JSON codec.
    pub channel: Channel,
    /// `Service.method`.
    pub target: String,
    /// The method's schema.
    pub method: MethodSchema,
    /// The arguments as a JSON object.
    pub args: Value,
    /// The same, encoded.
    pub payload: Bytes,
}

impl PreparedCall {
    /// Connects with the JSON codec, learns the method by reflection and checks `args`
    /// against its argument names.
    pub async fn new(
        options: &ConnectOptions,
        addr: &str,
        target: &str,
        args: Option<&str>,
    ) -> Result<Self, CliError> {
        options.json_only()?;
        let args = read_args(args)?;
        let channel = options.connect(addr, Some(Codec::Json)).await?;
        let (_, method) = fetch_method(&channel, target).await?;
        let payload = check_args(&method, &args)?;
        Ok(Self {
            channel,
            target: target.to_owned(),
            method,
            args,
            payload,
        })
    }

    /// Sends the call (a one-way method gets no reply: `None`).
    pub async fn send(&self) -> Result<Option<Bytes>, wirecall::Error> {
        let id = MethodId::new(self.method.id);
        if self.method.oneway {
            self.channel.notify_raw(id, self.payload.clone()).await?;
            return Ok(None);
        }
        self.channel
            .call_raw(id, self.payload.clone())
            .await
            .map(Some)
    }

    /// Opens the method as a server stream; each item is its whole item message.
    pub async fn open_stream(&self) -> Result<ItemStream<Value>, wirecall::Error> {
        self.channel
            .open_stream::<JsonArgs, JsonItem>(
                MethodId::new(self.method.id),
                JsonArgs(self.args.clone()),
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
    let reply = prepared.send().await?;
    let Some(reply) = reply else {
        eprintln!("sent (one-way: the server sends no reply)");
        // Let the queued frame go out before the process exits.
        prepared.channel.close().await;
        return Ok(());
    };
    let reply: Value = serde_json::from_slice(&reply)
        .map_err(|error| CliError::Input(format!("the reply is not JSON: {error}")))?;
    match Answer::read(&prepared.method.reply, &reply) {
        Answer::Nothing => {}
        Answer::Value(value) => out!("{}", pretty(value))?,
        Answer::ApplicationError(error) => {
            eprintln!("{}", pretty(error));
            return Err(CliError::Application {
                method: prepared.target,
            });
        }
    }
    Ok(())
}

/// The arguments text: the operand, `@file`, or standard input for `-` or nothing.
fn read_args(args: Option<&str>) -> Result<Value, CliError> {
    let text = match args {
        None | Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|error| {
                    CliError::Input(format!(
                        "cannot read the arguments from standard input: {error}"
                    ))
                })?;
            text
        }
        Some(path) if path.starts_with('@') => std::fs::read_to_string(&path[1..])
            .map_err(|error| CliError::Input(format!("cannot read {}: {error}", &path[1..])))?,
        Some(text) => text.to_owned(),
    };
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(&text)
        .map_err(|error| CliError::Input(format!("the arguments are not JSON: {error}")))
}

/// Checks that `args` is an object whose keys are argument names; returns it encoded.
fn check_args(method: &MethodSchema, args: &Value) -> Result<Bytes, CliError> {
    let expected = || {
        let names: Vec<String> = method
            .args
            .iter()
            .map(|arg| format!("{}: {}", arg.name, type_name(&arg.ty)))
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
