//! The network configuration as the plugin and the daemon read it (the
//! reference's `NetConf` with its `IPAMConfig`), decoded by Go's rules.
//! The plugin uses the socket path (and our call deadline); the daemon,
//! which gets the same bytes in `StdinData`, the rest.

use std::path::PathBuf;
use std::time::Duration;

use skel::gojson::{self, DecodeError, Object};

use crate::duration;

/// Where the daemon listens unless told otherwise, on both sides.
pub const DEFAULT_SOCKET: &str = "/run/cni/dhcp.sock";
/// How long the plugin waits for the daemon's answer by default: more
/// than the daemon's default budget for one acquisition (`-resendtimeout`
/// 208 s, plus the last attempt's `-timeout`).
pub const DEFAULT_DAEMON_TIMEOUT: Duration = Duration::from_secs(300);

/// An entry of `ipam.provide`: an option to send, with its value given
/// here or taken from a CNI_ARGS key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provide {
    pub option: String,
    pub value: String,
    pub from_arg: String,
}

/// An entry of `ipam.request`: an option to ask for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub option: String,
    pub skip_default: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The network's name (part of the DHCP client identifier).
    pub name: String,
    /// `ipam.daemonSocketPath`.
    pub socket_path: PathBuf,
    /// `ipam.daemonTimeout` (ours, a Go duration): how long the plugin
    /// waits for the daemon.
    pub daemon_timeout: Duration,
    pub provide: Vec<Provide>,
    pub request: Vec<Request>,
    /// `ipam.priority`: the metric of every route returned.
    pub priority: i64,
}

impl Config {
    /// Decode `stdin`. A config without an `ipam` object has the defaults
    /// (the reference plugin dereferences a nil pointer there and dies).
    pub fn parse(stdin: &[u8]) -> Result<Config, String> {
        let s = |e: DecodeError| e.to_string();
        let doc = gojson::parse(stdin).map_err(s)?;
        let conf = Object::new(&doc, "main.NetConf").map_err(s)?;
        let mut c = Config {
            name: conf.field("name").map_err(s)?,
            socket_path: PathBuf::from(DEFAULT_SOCKET),
            daemon_timeout: DEFAULT_DAEMON_TIMEOUT,
            provide: Vec::new(),
            request: Vec::new(),
            priority: 0,
        };
        let Some(ipam) = conf.object("ipam", "*main.IPAMConfig").map_err(s)? else {
            return Ok(c);
        };
        let socket: String = ipam.field("daemonSocketPath").map_err(s)?;
        if !socket.is_empty() {
            c.socket_path = PathBuf::from(socket);
        }
        let timeout: String = ipam.field("daemonTimeout").map_err(s)?;
        if !timeout.is_empty() {
            c.daemon_timeout =
                duration::parse(&timeout).map_err(|e| format!("ipam.daemonTimeout: {e}"))?;
        }
        for item in ipam
            .get("provide")
            .items("[]main.ProvideOption")
            .map_err(s)?
        {
            let o = item.as_struct("main.ProvideOption").map_err(s)?;
            c.provide.push(Provide {
                option: o.field("option").map_err(s)?,
                value: o.field("value").map_err(s)?,
                from_arg: o.field("fromArg").map_err(s)?,
            });
        }
        for item in ipam
            .get("request")
            .items("[]main.RequestOption")
            .map_err(s)?
        {
            let o = item.as_struct("main.RequestOption").map_err(s)?;
            c.request.push(Request {
                option: o.field("option").map_err(s)?,
                skip_default: o.field("skipDefault").map_err(s)?,
            });
        }
        c.priority = ipam.field("priority").map_err(s)?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_without_ipam() {
        let c = Config::parse(br#"{"cniVersion":"1.0.0","name":"n","type":"dhcp"}"#).unwrap();
        assert_eq!(c.name, "n");
        assert_eq!(c.socket_path, PathBuf::from(DEFAULT_SOCKET));
        assert_eq!(c.daemon_timeout, DEFAULT_DAEMON_TIMEOUT);
        assert!(c.provide.is_empty() && c.request.is_empty());
    }

    #[test]
    fn reads_every_key_as_go_matches_them() {
        let c = Config::parse(
            br#"{"name":"n","IPAM":{"type":"dhcp","DaemonSocketPath":"/x.sock","daemonTimeout":"90s",
                "provide":[{"option":"host-name","fromArg":"K8S_POD_NAME"},{"option":"60","value":"v"}],
                "request":[{"option":"121"},{"skipDefault":true}],"priority":7}}"#,
        )
        .unwrap();
        assert_eq!(c.socket_path, PathBuf::from("/x.sock"));
        assert_eq!(c.daemon_timeout, Duration::from_secs(90));
        assert_eq!(
            c.provide,
            vec![
                Provide {
                    option: "host-name".into(),
                    value: String::new(),
                    from_arg: "K8S_POD_NAME".into()
                },
                Provide {
                    option: "60".into(),
                    value: "v".into(),
                    from_arg: String::new()
                }
            ]
        );
        assert_eq!(c.request.len(), 2);
        assert!(c.request[1].skip_default);
        assert_eq!(c.priority, 7);
    }

    #[test]
    fn type_errors_read_as_go() {
        assert_eq!(
            Config::parse(br#"{"name":"n","ipam":{"daemonSocketPath":5}}"#).unwrap_err(),
            "json: cannot unmarshal number into Go struct field IPAMConfig.ipam.daemonSocketPath of type string"
        );
        assert_eq!(
            Config::parse(b"").unwrap_err(),
            "unexpected end of JSON input"
        );
        assert!(Config::parse(br#"{"name":"n","ipam":{"daemonTimeout":"soon"}}"#).is_err());
    }
}
