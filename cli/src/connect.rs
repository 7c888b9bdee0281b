//! The options every command shares, and the channel they make.

use std::time::Duration;

use clap::Args;
use wirecall::policy::Policies;
use wirecall::{Channel, ClientTlsConfig, Codec};

use crate::error::CliError;

/// How to reach the server.
#[derive(Debug, Args)]
pub struct ConnectOptions {
    /// Present this token in the handshake (servers started with a token require it)
    #[arg(long, global = true, env = "WIRECALL_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Use TLS, trusting the CA certificates in this PEM file
    #[arg(long, global = true, value_name = "PEM")]
    tls_ca: Option<std::path::PathBuf>,
    /// The name to expect in the server's certificate (default: the address's host)
    #[arg(long, global = true, requires = "tls_ca")]
    server_name: Option<String>,
    /// The codec for reflection calls (`list`, `describe`, `proto`): json, msgpack or
    /// protobuf. `call` and `bench` send JSON and accept only json here
    #[arg(long, global = true, value_parser = parse_codec)]
    codec: Option<Codec>,
    /// The deadline of each call, or of a whole stream: a server stream, or an upload and
    /// its answer (`500ms`, `5s`, `2m`; a bare number is seconds). A shorter `timeout` in the
    /// method's run-time policy (WIRECALL_POLICY, WIRECALL_POLICY_FILE) wins
    #[arg(long, global = true, value_parser = parse_duration, default_value = "10s")]
    timeout: Duration,
    /// Call metadata to send, `key=value`; repeat for more entries
    #[arg(long = "metadata", global = true, value_name = "KEY=VALUE", value_parser = parse_metadata)]
    metadata: Vec<(String, String)>,
}

impl ConnectOptions {
    /// The codec for reflection calls.
    pub fn reflection_codec(&self) -> Option<Codec> {
        self.codec
    }

    /// `call` and `bench` send JSON payloads; another `--codec` is a usage error.
    pub fn json_only(&self) -> Result<(), CliError> {
        match self.codec {
            None | Some(Codec::Json) => Ok(()),
            Some(other) => Err(CliError::Input(format!(
                "`call` and `bench` send the arguments as JSON, so they use the json codec; \
                 drop `--codec {other}`"
            ))),
        }
    }

    /// Connects to `addr`, offering `codec` (or every codec). The channel applies the run-time
    /// policies of `WIRECALL_POLICY_FILE` and `WIRECALL_POLICY` to every call, as a Rust
    /// client's channel does.
    pub async fn connect(&self, addr: &str, codec: Option<Codec>) -> Result<Channel, CliError> {
        // The channel reads the policy variables itself when it is built, and would report a
        // malformed one as a failed connection (exit 3). Reading them first makes it the
        // input error it is, before anything is dialled.
        Policies::from_env()?;
        let connect_error = |source| CliError::Connect {
            addr: addr.to_owned(),
            source,
        };
        let mut builder = Channel::builder().timeout(self.timeout).reconnect(false);
        if let Some(codec) = codec {
            builder = builder.codec(codec);
        }
        if let Some(token) = &self.token {
            builder = builder.token(token.as_str());
        }
        if let Some(ca) = &self.tls_ca {
            let pem = std::fs::read(ca).map_err(|error| {
                CliError::Input(format!("cannot read --tls-ca {}: {error}", ca.display()))
            })?;
            let server_name = match &self.server_name {
                Some(name) => name.clone(),
                None => host_of(addr).to_owned(),
            };
            let tls = ClientTlsConfig::new(pem, server_name).map_err(connect_error)?;
            builder = builder.tls(tls);
        }
        for (key, value) in &self.metadata {
            builder = builder.metadata(key.as_str(), value.as_str());
        }
        builder.connect(addr).await.map_err(connect_error)
    }
}

/// `host` of `host:port` or `[v6]:port`.
fn host_of(addr: &str) -> &str {
    if let Some(rest) = addr.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    addr.rsplit_once(':').map_or(addr, |(host, _)| host)
}

fn parse_codec(name: &str) -> Result<Codec, String> {
    name.parse::<Codec>().map_err(|error| error.to_string())
}

/// `500ms`, `5s`, `2m`, or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(ms) = text.strip_suffix("ms") {
        (ms, 0.001)
    } else if let Some(s) = text.strip_suffix('s') {
        (s, 1.0)
    } else if let Some(m) = text.strip_suffix('m') {
        (m, 60.0)
    } else {
        (text, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a duration; write e.g. 500ms, 5s or 2m"))?;
    Duration::try_from_secs_f64(value * scale)
        .ok()
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| format!("`{text}` is not a positive duration"))
}

fn parse_metadata(text: &str) -> Result<(String, String), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not key=value"))?;
    Ok((key.to_owned(), value.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn the_host_is_the_address_without_its_port() {
        assert_eq!(host_of("localhost:7000"), "localhost");
        assert_eq!(host_of("[::1]:7000"), "::1");
    }
}
