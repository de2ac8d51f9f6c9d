//! Helpers shared by noop's black-box tests: the binary, a Debug file in a
//! temp dir, and a libcni-like ADD call.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;
use testsupport::{Call, TempDir};

/// The same decoder noop uses, to check `StdinData` independently of JSON
/// libraries (the encoder side is what is under test).
pub use skel::base64;

pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_noop"))
}

/// The default supported versions, as skel prints them in errors.
pub const DEFAULT_SUPPORTS: &str =
    r#"["0.-42.0" "0.1.0" "0.2.0" "0.3.0" "0.3.1" "0.4.0" "1.0.0" "1.1.0"]"#;

/// A Debug file (and an empty command log next to it) in a temp dir.
pub struct DebugFile {
    dir: TempDir,
    pub path: PathBuf,
    pub log: PathBuf,
}

impl DebugFile {
    pub fn new(debug: Value) -> DebugFile {
        let dir = TempDir::new("noop");
        let path = dir.join("debug.json");
        let log = dir.join("commands.json");
        std::fs::write(&log, "").unwrap();
        let d = DebugFile { dir, path, log };
        d.write(debug);
        d
    }

    pub fn write(&self, debug: Value) {
        std::fs::write(&self.path, serde_json::to_vec(&debug).unwrap()).unwrap();
    }

    pub fn raw(&self) -> String {
        std::fs::read_to_string(&self.path).unwrap()
    }

    pub fn read(&self) -> Value {
        serde_json::from_str(&self.raw()).unwrap()
    }

    pub fn read_log(&self) -> Value {
        serde_json::from_slice(&std::fs::read(&self.log).unwrap()).unwrap()
    }

    pub fn path_str(&self) -> &str {
        self.path.to_str().unwrap()
    }

    pub fn log_str(&self) -> &str {
        self.log.to_str().unwrap()
    }

    /// `CNI_ARGS` pointing at this file, with an extra key as the Go
    /// suite uses.
    pub fn args(&self) -> String {
        format!("DEBUG={};FOO=BAR", self.path_str())
    }

    pub fn dir(&self) -> &TempDir {
        &self.dir
    }
}

/// A complete call as libcni makes it, with no CNI_ARGS.
pub fn call(command: &str, stdin: &str) -> Call {
    Call::new(command)
        .container_id("some-container-id")
        .netns("/some/netns/path")
        .ifname("eth0")
        .path("/some/bin/path")
        .stdin(stdin)
}

/// Decode a recorded `StdinData`.
pub fn stdin_data(v: &Value) -> Vec<u8> {
    base64::decode(v.as_str().expect("StdinData is a string")).unwrap()
}
