//! Harness for cnitool's black-box tests: a temporary config directory,
//! cache directory and CNI_PATH per test, noop plugin objects whose debug
//! files record what each plugin received, and a runner for the binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use testsupport::{TempDir, cni_path_with};

pub struct Setup {
    pub conf: TempDir,
    pub cache: TempDir,
    pub path: TempDir,
    pub work: TempDir,
}

#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Assert success and return stdout parsed (Null when empty).
    pub fn ok(&self) -> Value {
        assert_eq!(self.code, 0, "cnitool failed: {self:#?}");
        if self.stdout.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&self.stdout)
                .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
        }
    }

    /// Assert failure with `exit` and return the error object on stdout.
    pub fn fails(&self, exit: i32) -> Value {
        assert_eq!(self.code, exit, "unexpected exit status: {self:#?}");
        let v: Value = serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not an error object ({e}): {self:#?}"));
        assert!(v["code"].is_u64() && v["msg"].is_string(), "{self:#?}");
        assert!(
            self.stderr.contains(v["msg"].as_str().unwrap_or_default()),
            "stderr does not carry the message: {self:#?}"
        );
        v
    }
}

impl Setup {
    pub fn new() -> Setup {
        Setup::with_plugins(&["noop"])
    }

    pub fn with_plugins(names: &[&str]) -> Setup {
        Setup {
            conf: TempDir::new("cf"),
            cache: TempDir::new("cc"),
            path: cni_path_with(names),
            work: TempDir::new("wk"),
        }
    }

    /// A noop debug file with the given `Report*` settings.
    pub fn debug(&self, name: &str, settings: Value) -> PathBuf {
        let p = self.work.join(&format!("{name}.json"));
        std::fs::write(&p, settings.to_string()).unwrap();
        p
    }

    /// An empty command log shared by plugins.
    pub fn log(&self) -> PathBuf {
        let p = self.work.join("commands.log");
        if !p.exists() {
            std::fs::write(&p, "").unwrap();
        }
        p
    }

    /// A noop plugin object that records into debug file `name` and the
    /// shared log; `marker` identifies it in the log.
    pub fn noop(&self, name: &str, settings: Value) -> Value {
        let debug = self.debug(name, settings);
        json!({
            "type": "noop",
            "marker": name,
            "debugFile": debug,
            "commandLog": self.log(),
        })
    }

    pub fn write_conf(&self, file: &str, content: &Value) {
        std::fs::write(self.conf.join(file), content.to_string()).unwrap();
    }

    /// A shell-script plugin in CNI_PATH.
    pub fn script(&self, name: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt;
        let p = self.path.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_env(args, &[])
    }

    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        self.run_cmd(Command::new(env!("CARGO_BIN_EXE_cnitool")), args, env)
    }

    /// Run cnitool inside network namespace `host` (`ip netns exec`), so
    /// that what plugins do on the "host" side stays in a throwaway
    /// namespace.
    pub fn run_in(&self, host: &str, args: &[&str]) -> Run {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", host, env!("CARGO_BIN_EXE_cnitool")]);
        self.run_cmd(cmd, args, &[])
    }

    fn run_cmd(&self, mut cmd: Command, args: &[&str], env: &[(&str, &str)]) -> Run {
        cmd.arg("--cache-dir")
            .arg(self.cache.path())
            .args(args)
            .env("NETCONFPATH", self.conf.path())
            .env("CNI_PATH", self.path.path());
        for var in ["CNI_ARGS", "CAP_ARGS", "CNI_IFNAME", "CNI_COMMAND"] {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run cnitool");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub fn cache_file(&self, net: &str, id: &str, ifname: &str) -> PathBuf {
        self.cache
            .join("results")
            .join(format!("{net}-{id}-{ifname}"))
    }

    /// Every logged invocation: (command, marker of the plugin, container
    /// id, stdin as JSON).
    pub fn calls(&self) -> Vec<Call> {
        let text = std::fs::read_to_string(self.log()).unwrap();
        if text.trim().is_empty() {
            return Vec::new();
        }
        let entries: Vec<Value> = serde_json::from_str(&text).unwrap();
        entries
            .iter()
            .map(|e| {
                let stdin = decode_stdin(&e["CmdArgs"]["StdinData"]);
                Call {
                    command: e["Command"].as_str().unwrap_or_default().to_string(),
                    marker: stdin["marker"].as_str().unwrap_or_default().to_string(),
                    container_id: e["CmdArgs"]["ContainerID"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    args: e["CmdArgs"]["Args"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    stdin,
                }
            })
            .collect()
    }

    pub fn clear_log(&self) {
        std::fs::write(self.log(), "").unwrap();
    }
}

#[derive(Debug, Clone)]
pub struct Call {
    pub command: String,
    pub marker: String,
    pub container_id: String,
    pub args: String,
    pub stdin: Value,
}

fn decode_stdin(v: &Value) -> Value {
    let bytes = skel::base64::decode(v.as_str().unwrap_or_default()).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// (command, marker) of each call, for order assertions.
pub fn order(calls: &[Call]) -> Vec<(String, String)> {
    calls
        .iter()
        .map(|c| (c.command.clone(), c.marker.clone()))
        .collect()
}

pub fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The container ID the Go cnitool derives for `netns`.
pub fn id_for(netns: &str) -> String {
    cnitool::cli::container_id_for(netns)
}

pub fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}
