//! Network configuration loading, as libcni does it: `*.conflist` files in
//! lexical order, the first whose `name` matches; otherwise the deprecated
//! single-plugin `*.conf`/`*.json`, up-converted to a one-plugin list.
//! `cniVersions` is negotiated down to the highest version we speak, and
//! `<dir>/<name>/*.conf` plugin files are appended unless
//! `loadOnlyInlinedPlugins` is set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use skel::gojson;

use crate::error::{Error, Result};

/// The highest spec version this runtime speaks.
pub const CURRENT: &str = skel::version::CURRENT;

/// One plugin object of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginConf {
    /// The object as written, unknown keys included.
    pub raw: Map<String, Value>,
    /// `type`: the binary to run.
    pub plugin_type: String,
    /// The plugin object's own `name`, if any (used only in messages).
    pub name: String,
    /// `capabilities`: which capability args the plugin wants.
    pub capabilities: BTreeMap<String, bool>,
}

impl PluginConf {
    /// Parse a plugin object (libcni `NetworkPluginConfFromBytes`).
    pub fn from_value(v: Value) -> Result<PluginConf> {
        let parse = |m: String| Error::config(format!("error parsing configuration: {m}"));
        let Value::Object(raw) = v else {
            return Err(parse(format!(
                "expected a JSON object, found {}",
                gojson::kind(&v)
            )));
        };
        let plugin_type = opt_string(&raw, "type").map_err(parse)?;
        if plugin_type.is_empty() {
            return Err(parse("missing 'type'".into()));
        }
        let name = opt_string(&raw, "name").map_err(parse)?;
        opt_string(&raw, "cniVersion").map_err(parse)?;
        let mut capabilities = BTreeMap::new();
        match raw.get("capabilities") {
            None | Some(Value::Null) => {}
            Some(Value::Object(caps)) => {
                for (k, v) in caps {
                    match v {
                        Value::Bool(b) => {
                            capabilities.insert(k.clone(), *b);
                        }
                        other => {
                            return Err(parse(format!(
                                "capability {k:?} must be a bool, found {}",
                                gojson::kind(other)
                            )));
                        }
                    }
                }
            }
            Some(other) => {
                return Err(parse(format!(
                    "'capabilities' must be an object, found {}",
                    gojson::kind(other)
                )));
            }
        }
        Ok(PluginConf {
            raw,
            plugin_type,
            name,
            capabilities,
        })
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<PluginConf> {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| Error::config(format!("error parsing configuration: {e}")))?;
        PluginConf::from_value(v)
    }

    /// The plugin object with `extra` keys set (libcni `InjectConf`),
    /// serialised as Go would.
    pub fn inject(&self, extra: &[(&str, Value)]) -> Vec<u8> {
        let mut obj = self.raw.clone();
        for (k, v) in extra {
            obj.insert((*k).to_string(), v.clone());
        }
        gojson::marshal(&obj).into_bytes()
    }

    /// `type="bridge" name="x"`, as libcni describes a plugin in errors.
    pub fn describe(&self) -> String {
        if self.name.is_empty() {
            format!("type={:?}", self.plugin_type)
        } else {
            format!("type={:?} name={:?}", self.plugin_type, self.name)
        }
    }
}

/// A network configuration list.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkList {
    pub name: String,
    /// The negotiated version every plugin receives.
    pub cni_version: String,
    pub disable_check: bool,
    pub disable_gc: bool,
    pub load_only_inlined_plugins: bool,
    /// The list as loaded; cached verbatim (base64) after ADD.
    pub bytes: Vec<u8>,
    pub plugins: Vec<PluginConf>,
}

impl NetworkList {
    /// Parse a list (libcni `NetworkConfFromBytes`). Plugin files from a
    /// directory are not added here; see [`NetworkList::from_file`].
    pub fn from_bytes(bytes: &[u8]) -> Result<NetworkList> {
        let parse = |m: String| Error::config(format!("error parsing configuration list: {m}"));
        let v: Value = serde_json::from_slice(bytes).map_err(|e| parse(e.to_string()))?;
        let Value::Object(raw) = v else {
            return Err(parse(format!(
                "expected a JSON object, found {}",
                gojson::kind(&v)
            )));
        };
        let name = match raw.get("name") {
            None => return Err(parse("no name".into())),
            Some(Value::String(s)) => s.clone(),
            Some(other) => return Err(parse(format!("invalid name type {}", gojson::kind(other)))),
        };
        let mut cni_version = match raw.get("cniVersion") {
            None => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(parse(format!(
                    "invalid cniVersion type {}",
                    gojson::kind(other)
                )));
            }
        };
        if let Some(versions) = raw.get("cniVersions") {
            cni_version = negotiate(versions, &cni_version).map_err(parse)?;
        }
        let read_bool = |key: &str| -> Result<bool> {
            match raw.get(key) {
                None => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(Value::String(s)) => match s.to_ascii_lowercase().as_str() {
                    "true" => Ok(true),
                    "false" => Ok(false),
                    other => Err(parse(format!("invalid value {other:?} for {key}"))),
                },
                Some(other) => Err(parse(format!(
                    "invalid type {} for {key}",
                    gojson::kind(other)
                ))),
            }
        };
        let mut list = NetworkList {
            name,
            cni_version,
            disable_check: read_bool("disableCheck")?,
            disable_gc: read_bool("disableGC")?,
            load_only_inlined_plugins: read_bool("loadOnlyInlinedPlugins")?,
            bytes: bytes.to_vec(),
            plugins: Vec::new(),
        };
        let plugins = match raw.get("plugins") {
            None if list.load_only_inlined_plugins => {
                return Err(parse(
                    "`loadOnlyInlinedPlugins` is true, and no 'plugins' key".into(),
                ));
            }
            None => return Ok(list),
            Some(Value::Array(p)) => p,
            Some(other) => {
                return Err(parse(format!(
                    "invalid 'plugins' type {}",
                    gojson::kind(other)
                )));
            }
        };
        if plugins.is_empty() {
            return Err(parse("no plugins in list".into()));
        }
        for (i, p) in plugins.iter().enumerate() {
            let conf = PluginConf::from_value(p.clone())
                .map_err(|e| e.context(format!("failed to parse plugin config {i}")))?;
            list.plugins.push(conf);
        }
        Ok(list)
    }

    /// Load a `.conflist` file and the `<dir>/<name>/*.conf` plugin files
    /// that belong to it.
    pub fn from_file(path: &Path) -> Result<NetworkList> {
        let bytes = read_file(path)?;
        let mut list = NetworkList::from_bytes(&bytes)
            .map_err(|e| e.context(format!("load {}", path.display())))?;
        if !list.load_only_inlined_plugins {
            let dir = path.parent().unwrap_or(Path::new(".")).join(&list.name);
            for file in conf_files(&dir, &["conf"])? {
                list.plugins.push(plugin_conf_file(&file)?);
            }
        }
        if list.plugins.is_empty() {
            return Err(Error::config(format!(
                "load {}: no plugin configs found",
                path.display()
            )));
        }
        Ok(list)
    }

    /// Up-convert a single-plugin config (libcni `ConfListFromConf`).
    pub fn from_single(conf: &PluginConf) -> Result<NetworkList> {
        let version = opt_string(&conf.raw, "cniVersion").unwrap_or_default();
        let mut wrapper = Map::new();
        wrapper.insert("cniVersion".into(), Value::String(version));
        wrapper.insert("name".into(), Value::String(conf.name.clone()));
        wrapper.insert(
            "plugins".into(),
            Value::Array(vec![Value::Object(conf.raw.clone())]),
        );
        NetworkList::from_bytes(gojson::marshal(&wrapper).as_bytes())
    }

    /// Find network `name` in `dir` (libcni `LoadNetworkConf`).
    pub fn load(dir: &Path, name: &str) -> Result<NetworkList> {
        let lists = conf_files(dir, &["conflist"])?;
        for file in &lists {
            let list = NetworkList::from_file(file)?;
            if list.name == name {
                return Ok(list);
            }
        }
        let singles = conf_files(dir, &["conf", "json"])?;
        if singles.is_empty() && lists.is_empty() {
            return Err(Error::config(format!(
                "no net configurations found in {}",
                dir.display()
            )));
        }
        for file in &singles {
            let conf = plugin_conf_file(file)?;
            if conf.name == name {
                return NetworkList::from_single(&conf)
                    .map_err(|e| e.context(format!("load {}", file.display())));
            }
        }
        Err(Error::config(format!(
            "no net configuration with name {name:?} in {}",
            dir.display()
        )))
    }
}

/// Pick the highest of `cniVersions` (plus `cniVersion`) that is not newer
/// than what we speak.
fn negotiate(versions: &Value, cni_version: &str) -> std::result::Result<String, String> {
    use skel::version::parse;
    let Value::Array(items) = versions else {
        return Err(format!(
            "invalid type for cniVersions: {}",
            gojson::kind(versions)
        ));
    };
    let current = parse(CURRENT)?;
    let mut candidates = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Value::String(v) = item else {
            return Err(format!(
                "invalid type for cniVersions index {i}: {}",
                gojson::kind(item)
            ));
        };
        let parsed =
            parse(v).map_err(|e| format!("invalid cniVersions entry {v} at index {i}: {e}"))?;
        if parsed <= current {
            candidates.push((parsed, v.clone()));
        }
    }
    if !cni_version.is_empty() {
        let parsed =
            parse(cni_version).map_err(|e| format!("invalid cniVersion {cni_version}: {e}"))?;
        if parsed <= current {
            candidates.push((parsed, cni_version.to_string()));
        }
    }
    Ok(candidates
        .into_iter()
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, v)| v)
        .unwrap_or_else(|| cni_version.to_string()))
}

/// Regular (non-directory) files in `dir` with one of `extensions`, sorted.
/// A missing directory has no files, as in libcni.
fn conf_files(dir: &Path, extensions: &[&str]) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::config(format!(
                "read config directory {}: {}",
                dir.display(),
                skel::io_text(&e)
            )));
        }
    };
    let mut files = Vec::new();
    for entry in entries.flatten() {
        if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        let path = entry.path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if extensions.contains(&ext) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// A config file's bytes; the error names the file.
fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Error::config(format!(
            "error reading {}: {}",
            path.display(),
            skel::io_text(&e)
        ))
    })
}

/// A single-plugin config file (`.conf`, `.json`).
fn plugin_conf_file(path: &Path) -> Result<PluginConf> {
    PluginConf::from_bytes(&read_file(path)?)
        .map_err(|e| e.context(format!("load {}", path.display())))
}

fn opt_string(obj: &Map<String, Value>, key: &str) -> std::result::Result<String, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "{key:?} must be a string, found {}",
            gojson::kind(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(json: &str) -> Result<NetworkList> {
        NetworkList::from_bytes(json.as_bytes())
    }

    #[test]
    fn parses_list_fields() {
        let l = list(
            r#"{"cniVersion":"1.0.0","name":"n","disableCheck":"TRUE","disableGC":false,
                "plugins":[{"type":"bridge","capabilities":{"portMappings":true,"mac":false}},{"type":"noop","name":"x"}]}"#,
        )
        .unwrap();
        assert_eq!(l.name, "n");
        assert_eq!(l.cni_version, "1.0.0");
        assert!(l.disable_check && !l.disable_gc);
        assert_eq!(l.plugins.len(), 2);
        assert_eq!(l.plugins[0].capabilities.get("portMappings"), Some(&true));
        assert_eq!(l.plugins[1].describe(), r#"type="noop" name="x""#);
    }

    #[test]
    fn rejects_bad_lists() {
        let err = |j: &str| list(j).unwrap_err().msg;
        assert_eq!(
            err(r#"{"plugins":[]}"#),
            "error parsing configuration list: no name"
        );
        assert_eq!(
            err(r#"{"name":"n","plugins":[]}"#),
            "error parsing configuration list: no plugins in list"
        );
        assert_eq!(
            err(r#"{"name":"n","disableCheck":"yes","plugins":[{"type":"a"}]}"#),
            "error parsing configuration list: invalid value \"yes\" for disableCheck"
        );
        assert_eq!(
            err(r#"{"name":"n","plugins":[{"name":"x"}]}"#),
            "failed to parse plugin config 0: error parsing configuration: missing 'type'"
        );
        assert!(
            err(r#"{"name":"n","cniVersions":[1],"plugins":[{"type":"a"}]}"#)
                .contains("invalid type for cniVersions index 0")
        );
        assert!(err("[1]").contains("expected a JSON object"));
        assert_eq!(
            list(r#"{"name":"n","plugins":[{"type":"a"}]}"#)
                .unwrap()
                .cni_version,
            ""
        );
    }

    #[test]
    fn negotiates_cni_versions() {
        let v = |j: &str| list(j).unwrap().cni_version;
        assert_eq!(
            v(
                r#"{"name":"n","cniVersion":"0.4.0","cniVersions":["1.0.0","9.9.9","0.3.1"],"plugins":[{"type":"a"}]}"#
            ),
            "1.0.0"
        );
        assert_eq!(
            v(
                r#"{"name":"n","cniVersion":"1.1.0","cniVersions":["1.0.0"],"plugins":[{"type":"a"}]}"#
            ),
            "1.1.0"
        );
        assert_eq!(
            v(r#"{"name":"n","cniVersions":["2.0.0"],"cniVersion":"","plugins":[{"type":"a"}]}"#),
            ""
        );
    }

    #[test]
    fn inject_sorts_keys_and_overrides() {
        let p = PluginConf::from_bytes(br#"{"type":"a","name":"old","z":1,"b":"<"}"#).unwrap();
        let out = p.inject(&[
            ("name", Value::from("net")),
            ("cniVersion", Value::from("1.0.0")),
        ]);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"b":"\u003c","cniVersion":"1.0.0","name":"net","type":"a","z":1}"#
        );
    }

    #[test]
    fn single_conf_is_up_converted_like_libcni() {
        let p = PluginConf::from_bytes(
            br#"{"cniVersion":"0.3.1","name":"n","type":"bridge","bridge":"br0"}"#,
        )
        .unwrap();
        let l = NetworkList::from_single(&p).unwrap();
        assert_eq!(
            String::from_utf8(l.bytes).unwrap(),
            r#"{"cniVersion":"0.3.1","name":"n","plugins":[{"bridge":"br0","cniVersion":"0.3.1","name":"n","type":"bridge"}]}"#
        );
        assert_eq!(l.cni_version, "0.3.1");
    }
}
