//! The Debug file that drives and records noop (the reference's
//! `debug.Debug`), and the command log. Both are JSON with Go's field names
//! and no tags, because Go test suites read and write them with
//! `encoding/json`; what we write is byte-identical to Go's `json.Marshal`.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use skel::{CmdArgs, Error, base64, gojson, io_text};

/// What the test asked for (`Report*`, `ExitWithCode`) and what noop saw
/// (`Command`, `CmdArgs`). Field order is Go's declaration order; decoded
/// by Go's rules ([`gojson`]).
#[derive(Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename = "debug.Debug", rename_all = "PascalCase")]
pub struct Debug {
    pub report_result: String,
    pub report_error: String,
    pub report_error_code: u64,
    pub report_stderr: String,
    /// `null` (use the default list) is distinct from `[]`.
    pub report_version_support: Option<Vec<String>>,
    pub exit_with_code: i64,
    pub command: String,
    /// Not read back: every invocation overwrites it.
    #[serde(skip_deserializing)]
    pub cmd_args: Recorded,
}

/// The reference skel's `CmdArgs` as Go serialises it: `StdinData` is a
/// `[]byte`, hence base64 (or `null` for a nil slice).
#[derive(Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename = "skel.CmdArgs")]
pub struct Recorded {
    #[serde(rename = "ContainerID")]
    pub container_id: String,
    #[serde(rename = "Netns")]
    pub netns: String,
    #[serde(rename = "IfName")]
    pub ifname: String,
    #[serde(rename = "Args")]
    pub args: String,
    #[serde(rename = "Path")]
    pub path: String,
    #[serde(rename = "NetnsOverride")]
    pub netns_override: String,
    #[serde(rename = "StdinData", deserialize_with = "base64_text")]
    pub stdin_data: Option<String>,
}

/// A Go `[]byte`: base64 text that must decode.
fn base64_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let text = Option::<String>::deserialize(d)?;
    if let Some(t) = &text {
        base64::decode(t).map_err(serde::de::Error::custom)?;
    }
    Ok(text)
}

impl Recorded {
    pub fn of(args: &CmdArgs) -> Recorded {
        Recorded {
            container_id: args.container_id.clone(),
            netns: args.netns_path.clone(),
            ifname: args.ifname.clone(),
            args: args.args.clone(),
            path: args.path.clone(),
            netns_override: args.netns_override.clone(),
            stdin_data: Some(base64::encode(&args.stdin)),
        }
    }
}

/// One line of the command log (`CmdLogEntry`).
#[derive(Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename = "debug.CmdLogEntry")]
pub struct LogEntry {
    #[serde(rename = "Command")]
    pub command: String,
    #[serde(rename = "CmdArgs")]
    pub cmd_args: Recorded,
}

fn read(path: &str) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::internal(format!("open {path}: {}", io_text(&e))))
}

/// Write like Go's `os.WriteFile`: truncate, create with `mode` if missing.
fn write(path: &str, data: &str, mode: u32) -> Result<(), Error> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .and_then(|mut f| f.write_all(data.as_bytes()))
        .map_err(|e| Error::internal(format!("open {path}: {}", io_text(&e))))
}

impl Debug {
    /// Decode like `json.Unmarshal` into the Go struct (except `CmdArgs`,
    /// which every invocation overwrites).
    pub fn parse(bytes: &[u8]) -> Result<Debug, String> {
        Ok(gojson::unmarshal(bytes)?)
    }

    pub fn read(path: &str) -> Result<Debug, Error> {
        Debug::parse(&read(path)?)
            .map_err(|e| Error::internal(format!("decode debug file {path}: {e}")))
    }

    /// Rewrite the file with this invocation recorded (mode 0600 if created).
    pub fn write(&self, path: &str) -> Result<(), Error> {
        write(path, &gojson::marshal(self), 0o600)
    }
}

/// Append `entry` to the JSON array in `path`, which must exist (an empty
/// file is an empty log), as the reference's `WriteCommandLog` does.
pub fn append_command_log(path: &str, entry: LogEntry) -> Result<(), Error> {
    let bytes = read(path)?;
    let decode_err = |e: String| Error::internal(format!("decode command log {path}: {e}"));
    let mut entries = Vec::new();
    if !bytes.is_empty() {
        match gojson::parse(&bytes).map_err(|e| decode_err(e.into()))? {
            Value::Null => {}
            Value::Array(items) => {
                for item in &items {
                    entries.push(gojson::from_value(item).map_err(|e| decode_err(e.into()))?);
                }
            }
            other => {
                return Err(decode_err(format!(
                    "json: cannot unmarshal {} into Go value of type debug.CmdLog",
                    gojson::kind(&other)
                )));
            }
        }
    }
    entries.push(entry);
    write(path, &gojson::marshal(&entries), 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str, content: &str) -> String {
        let p = std::env::temp_dir().join(format!("cnirs-noop-unit-{tag}-{}", std::process::id()));
        std::fs::write(&p, content).unwrap();
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn serialises_with_go_names_order_and_escaping() {
        let d = Debug {
            report_result: "<r>".into(),
            command: "ADD".into(),
            cmd_args: Recorded {
                container_id: "c".into(),
                stdin_data: Some(base64::encode(b"{}")),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            gojson::marshal(&d),
            r#"{"ReportResult":"\u003cr\u003e","ReportError":"","ReportErrorCode":0,"ReportStderr":"","ReportVersionSupport":null,"ExitWithCode":0,"Command":"ADD","CmdArgs":{"ContainerID":"c","Netns":"","IfName":"","Args":"","Path":"","NetnsOverride":"","StdinData":"e30="}}"#
        );
    }

    #[test]
    fn parses_what_go_writes() {
        let d = Debug::parse(
            br#"{"ReportResult":"r","ReportError":"e","ReportErrorCode":7,"ReportStderr":"s",
                "ReportVersionSupport":["0.4.0"],"ExitWithCode":2,"Command":"DEL",
                "CmdArgs":{"ContainerID":"x","StdinData":null}}"#,
        )
        .unwrap();
        assert_eq!(d.report_error_code, 7);
        assert_eq!(d.report_version_support, Some(vec!["0.4.0".to_string()]));
        assert_eq!(d.exit_with_code, 2);
        assert_eq!(d.command, "DEL");
        assert_eq!(Debug::parse(b"{}").unwrap(), Debug::default());
        assert_eq!(
            Debug::parse(br#"{"ReportVersionSupport":[]}"#)
                .unwrap()
                .report_version_support,
            Some(vec![])
        );
    }

    #[test]
    fn unreadable_files_name_the_path() {
        let e = Debug::read("/nonexistent/cnirs-debug").unwrap_err();
        assert_eq!(
            e,
            Error::internal("open /nonexistent/cnirs-debug: no such file or directory")
        );
        let p = temp("bad", "{");
        assert!(
            Debug::read(&p)
                .unwrap_err()
                .msg
                .starts_with(&format!("decode debug file {p}: "))
        );
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn parses_with_go_key_matching_and_type_errors() {
        let d = Debug::parse(br#"{"reportresult":"x","EXITWITHCODE":3,"ReportErrorCode":null}"#)
            .unwrap();
        assert_eq!((d.report_result.as_str(), d.exit_with_code), ("x", 3));
        assert_eq!(d.report_version_support, None);
        for (json, want) in [
            (
                r#"{"ReportErrorCode":-1}"#,
                "json: cannot unmarshal number -1 into Go struct field Debug.ReportErrorCode of type uint",
            ),
            (
                r#"{"ReportResult":5}"#,
                "json: cannot unmarshal number into Go struct field Debug.ReportResult of type string",
            ),
            (
                r#"{"ReportVersionSupport":"1.0.0"}"#,
                "json: cannot unmarshal string into Go struct field Debug.ReportVersionSupport of type []string",
            ),
            (
                "[]",
                "json: cannot unmarshal array into Go value of type debug.Debug",
            ),
            (" ", "unexpected end of JSON input"),
        ] {
            assert_eq!(Debug::parse(json.as_bytes()).unwrap_err(), want, "{json}");
        }
    }

    #[test]
    fn command_log_appends() {
        let p = temp("log", "");
        let entry = |c: &str| LogEntry {
            command: c.into(),
            cmd_args: Recorded {
                stdin_data: Some("e30=".into()),
                ..Default::default()
            },
        };
        append_command_log(&p, entry("ADD")).unwrap();
        append_command_log(&p, entry("DEL")).unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        assert_eq!(v[0]["Command"], "ADD");
        assert_eq!(v[1]["Command"], "DEL");
        assert_eq!(v[1]["CmdArgs"]["StdinData"], "e30=");
        std::fs::write(&p, "{}").unwrap();
        assert!(
            append_command_log(&p, entry("ADD"))
                .unwrap_err()
                .msg
                .contains("debug.CmdLog")
        );
        std::fs::write(&p, r#"[{"CmdArgs":{"StdinData":"!!"}}]"#).unwrap();
        assert!(
            append_command_log(&p, entry("ADD"))
                .unwrap_err()
                .msg
                .contains("illegal base64")
        );
        std::fs::remove_file(&p).unwrap();
        assert!(
            append_command_log(&p, entry("ADD"))
                .unwrap_err()
                .msg
                .starts_with("open ")
        );
    }
}
