//! Running a network list the way libcni does: ADD in order with each
//! result as the next plugin's `prevResult`, DEL in reverse with the cached
//! result, CHECK forward, GC (stale cached attachments deleted, then GC sent
//! to every plugin), STATUS, and the VERSION probe.

use std::path::PathBuf;

use serde_json::{Map, Value};
use skel::CniResult;

use crate::cache::{self, Cache};
use crate::config::{NetworkList, PluginConf};
use crate::error::{Error, Kind, Result};
use crate::exec::{Exec, Invocation, excerpt};

/// Per-attachment runtime arguments (libcni `RuntimeConf`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuntimeConf {
    pub container_id: String,
    pub netns: String,
    pub ifname: String,
    /// `CNI_ARGS` pairs.
    pub args: Vec<(String, String)>,
    /// Capability args; each goes into `runtimeConfig` of the plugins that
    /// declare that capability.
    pub capability_args: Map<String, Value>,
}

impl RuntimeConf {
    /// `K=V;K2=V2`, as libcni joins the pairs.
    pub fn args_string(&self) -> String {
        self.args
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// An attachment GC must keep (`cni.dev/valid-attachments`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub container_id: String,
    pub ifname: String,
}

/// What CHECK or STATUS did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    /// Every plugin was run.
    All,
    /// Nothing was run: `disableCheck` / `disableGC` is set.
    Disabled,
    /// Nothing was run: the list version predates the verb.
    TooOld,
}

/// What GC did.
#[derive(Debug, Default)]
pub struct GcReport {
    /// Stale attachments that were deleted.
    pub deleted: Vec<Attachment>,
    /// Whether GC was sent to the plugins (list version ≥ 1.1.0).
    pub sent_gc: bool,
    pub disabled: bool,
}

/// A plugin's VERSION answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionInfo {
    pub cni_version: String,
    pub supported_versions: Vec<String>,
}

impl VersionInfo {
    /// What a plugin prints for VERSION (Go's `json.Marshal`).
    pub fn to_json(&self) -> String {
        skel::gojson::marshal(&serde_json::json!({
            "cniVersion": self.cni_version,
            "supportedVersions": self.supported_versions,
        }))
    }
}

/// The runtime side: where plugins are, where the cache is, how to run.
#[derive(Debug, Clone)]
pub struct Cni {
    /// Plugin directories (`CNI_PATH`).
    pub path: Vec<String>,
    pub cache: Cache,
    pub exec: Exec,
}

impl Cni {
    pub fn new(path: Vec<String>, cache_dir: impl Into<PathBuf>) -> Cni {
        Cni {
            path,
            cache: Cache::new(cache_dir),
            exec: Exec::default(),
        }
    }

    fn path_string(&self) -> String {
        self.path.join(":")
    }

    fn find(&self, plugin_type: &str) -> Result<PathBuf> {
        skel::invoke::find_in_path(plugin_type, &self.path_string())
            .map_err(|e| Error::from_skel(Kind::Config, e))
    }

    fn invocation(&self, command: &str, rt: &RuntimeConf) -> Invocation {
        Invocation {
            command: command.into(),
            container_id: rt.container_id.clone(),
            netns: rt.netns.clone(),
            ifname: rt.ifname.clone(),
            args: rt.args_string(),
            path: self.path_string(),
        }
    }

    /// Run one plugin; errors are described as libcni does
    /// (`plugin type="x" failed (add): ...`).
    fn run(
        &self,
        verb: &str,
        plugin: &PluginConf,
        stdin: &[u8],
        inv: &Invocation,
    ) -> Result<Vec<u8>> {
        let fail = |e: Error| e.context(format!("plugin {} failed ({verb})", plugin.describe()));
        let bin = self.find(&plugin.plugin_type).map_err(fail)?;
        self.exec
            .run(&bin, stdin, inv)
            .map(|out| out.stdout)
            .map_err(|f| fail(f.into_error()))
    }

    /// The plugin object with `name`, `cniVersion`, `prevResult` and the
    /// declared capability args injected (libcni `buildOneConfig`).
    fn build_conf(
        list: &NetworkList,
        plugin: &PluginConf,
        prev: Option<&CniResult>,
        rt: &RuntimeConf,
    ) -> Vec<u8> {
        let mut extra = vec![
            ("name", Value::from(list.name.as_str())),
            ("cniVersion", Value::from(list.cni_version.as_str())),
        ];
        if let Some(p) = prev {
            extra.push(("prevResult", p.to_value()));
        }
        let runtime: Map<String, Value> = plugin
            .capabilities
            .iter()
            .filter(|(_, on)| **on)
            .filter_map(|(cap, _)| {
                rt.capability_args
                    .get(cap)
                    .map(|v| (cap.clone(), v.clone()))
            })
            .collect();
        if !runtime.is_empty() {
            extra.push(("runtimeConfig", Value::Object(runtime)));
        }
        plugin.inject(&extra)
    }

    fn validate(list: &NetworkList, rt: &RuntimeConf) -> Result<()> {
        let usage = |e| Error::from_skel(Kind::Usage, e);
        skel::validate_container_id(&rt.container_id).map_err(usage)?;
        skel::validate_network_name(&list.name).map_err(|e| Error::from_skel(Kind::Config, e))?;
        skel::validate_ifname(&rt.ifname).map_err(usage)
    }

    /// ADD: run the chain in order and cache the final result.
    pub fn add(&self, list: &NetworkList, rt: &RuntimeConf) -> Result<CniResult> {
        Self::validate(list, rt)?;
        // A result that cannot be cached would leave an attachment DEL
        // knows nothing of: refuse before anything is set up.
        self.cache.path(&list.name, &rt.container_id, &rt.ifname)?;
        let inv = self.invocation("ADD", rt);
        let mut prev: Option<CniResult> = None;
        for plugin in &list.plugins {
            let stdin = Self::build_conf(list, plugin, prev.as_ref(), rt);
            let out = self.run("add", plugin, &stdin, &inv)?;
            let result = parse_result(&out, &list.cni_version)
                .map_err(|e| e.context(format!("plugin {} failed (add)", plugin.describe())))?;
            prev = Some(result);
        }
        let Some(result) = prev else {
            return Err(Error::config(format!(
                "network {:?} has no plugins",
                list.name
            )));
        };
        let entry = cache::Entry {
            container_id: rt.container_id.clone(),
            config: list.bytes.clone(),
            ifname: rt.ifname.clone(),
            network_name: list.name.clone(),
            netns: rt.netns.clone(),
            cni_args: rt.args.clone(),
            capability_args: rt.capability_args.clone(),
            result: Some(result.to_value()),
        };
        self.cache.write(&entry).map_err(|e| {
            e.context(format!(
                "failed to set network {:?} cached result",
                list.name
            ))
        })?;
        Ok(result)
    }

    /// DEL: run the chain in reverse with the cached result as
    /// `prevResult` (lists ≥ 0.4.0), then drop the cache entry. The first
    /// failure stops the chain and keeps the cache entry for a retry.
    pub fn del(&self, list: &NetworkList, rt: &RuntimeConf) -> Result<()> {
        Self::validate(list, rt)?;
        let mut prev = None;
        if at_least(&list.cni_version, "0.4.0")? {
            // An unreadable cache is dropped and DEL goes on without it,
            // as libcni does: DEL must be able to clean up regardless.
            match self
                .cache
                .result(&list.name, &rt.container_id, &rt.ifname, &list.cni_version)
            {
                Ok(r) => prev = r,
                Err(e) => {
                    eprintln!("cnitool: ignoring unusable cached result: {e}");
                    let _ = self.cache.remove(&list.name, &rt.container_id, &rt.ifname);
                }
            }
        }
        let inv = self.invocation("DEL", rt);
        for plugin in list.plugins.iter().rev() {
            let stdin = Self::build_conf(list, plugin, prev.as_ref(), rt);
            self.run("delete", plugin, &stdin, &inv)?;
        }
        // The attachment is gone; a cache entry we failed to remove only
        // costs a repeated DEL at the next GC, so warn instead of failing.
        if let Err(e) = self.cache.remove(&list.name, &rt.container_id, &rt.ifname) {
            eprintln!("cnitool: warning: {e}");
        }
        Ok(())
    }

    /// CHECK: forward order with the cached result as `prevResult`.
    pub fn check(&self, list: &NetworkList, rt: &RuntimeConf) -> Result<Ran> {
        Self::validate(list, rt)?;
        if !at_least(&list.cni_version, "0.4.0")? {
            return Err(Error::config(format!(
                "configuration version {:?} does not support the CHECK command",
                list.cni_version
            )));
        }
        if list.disable_check {
            return Ok(Ran::Disabled);
        }
        let prev = self
            .cache
            .result(&list.name, &rt.container_id, &rt.ifname, &list.cni_version)
            .map_err(|e| {
                e.context(format!(
                    "failed to get network {:?} cached result",
                    list.name
                ))
            })?;
        let inv = self.invocation("CHECK", rt);
        for plugin in &list.plugins {
            let stdin = Self::build_conf(list, plugin, prev.as_ref(), rt);
            self.run("check", plugin, &stdin, &inv)?;
        }
        Ok(Ran::All)
    }

    /// GC: delete every cached attachment of this network that is not in
    /// `valid`, then (lists ≥ 1.1.0) send GC with the valid set to every
    /// plugin. Errors are collected; everything is attempted.
    pub fn gc(&self, list: &NetworkList, valid: &[Attachment]) -> Result<GcReport> {
        let mut report = GcReport::default();
        if list.disable_gc {
            report.disabled = true;
            return Ok(report);
        }
        let mut errors: Vec<Error> = Vec::new();
        for entry in self.cache.entries()? {
            if entry.network_name != list.name {
                continue;
            }
            let att = Attachment {
                container_id: entry.container_id.clone(),
                ifname: entry.ifname.clone(),
            };
            if valid.contains(&att) {
                continue;
            }
            let rt = RuntimeConf {
                container_id: entry.container_id,
                netns: entry.netns,
                ifname: entry.ifname,
                args: entry.cni_args,
                capability_args: entry.capability_args,
            };
            match self.del(list, &rt) {
                Ok(()) => report.deleted.push(att),
                Err(e) => errors.push(e.context(format!(
                    "failed to delete stale attachment {} {}",
                    att.container_id, att.ifname
                ))),
            }
        }
        if at_least(&list.cni_version, "1.1.0")? {
            report.sent_gc = true;
            let valid_json = Value::Array(
                valid
                    .iter()
                    .map(|a| serde_json::json!({"containerID": a.container_id, "ifname": a.ifname}))
                    .collect(),
            );
            let inv = self.invocation("GC", &RuntimeConf::default());
            for plugin in &list.plugins {
                let stdin = plugin.inject(&[
                    ("name", Value::from(list.name.as_str())),
                    ("cniVersion", Value::from(list.cni_version.as_str())),
                    ("cni.dev/valid-attachments", valid_json.clone()),
                    // The spec's first, wrong key (cni#1101); libcni sends both.
                    ("cni.dev/attachments", valid_json.clone()),
                ]);
                if let Err(e) = self.run("gc", plugin, &stdin, &inv) {
                    errors.push(e);
                }
            }
        }
        join_errors(errors).map(|()| report)
    }

    /// STATUS (lists ≥ 1.1.0): every plugin must be ready; stops at the
    /// first that is not, keeping its code (50, 51, ...).
    pub fn status(&self, list: &NetworkList) -> Result<Ran> {
        if !at_least(&list.cni_version, "1.1.0")? {
            return Ok(Ran::TooOld);
        }
        let inv = self.invocation("STATUS", &RuntimeConf::default());
        for plugin in &list.plugins {
            let stdin = plugin.inject(&[
                ("name", Value::from(list.name.as_str())),
                ("cniVersion", Value::from(list.cni_version.as_str())),
            ]);
            self.run("status", plugin, &stdin, &inv)?;
        }
        Ok(Ran::All)
    }

    /// VERSION probe of a plugin by name (in `CNI_PATH`) or by path.
    pub fn version(&self, plugin: &str) -> Result<VersionInfo> {
        let bin = if plugin.contains('/') {
            PathBuf::from(plugin)
        } else {
            self.find(plugin)?
        };
        // Fake values for plugins built on old skels that demand them.
        let inv = Invocation {
            command: "VERSION".into(),
            netns: "dummy".into(),
            ifname: "dummy".into(),
            path: "dummy".into(),
            ..Default::default()
        };
        let stdin = format!(r#"{{"cniVersion":{:?}}}"#, skel::version::CURRENT);
        let fail = |e: Error| e.context(format!("plugin {plugin} failed (version)"));
        let out = match self.exec.run(&bin, stdin.as_bytes(), &inv) {
            Ok(out) => out.stdout,
            Err(f) => {
                let e = f.into_error();
                if e.msg == "unknown CNI_COMMAND: VERSION" {
                    // Plugins older than VERSION speak only 0.1.0.
                    return Ok(VersionInfo {
                        cni_version: "0.1.0".into(),
                        supported_versions: vec!["0.1.0".into()],
                    });
                }
                return Err(fail(e));
            }
        };
        decode_version_info(&out).map_err(fail)
    }

    /// Check that every plugin of `list` exists and supports the list's
    /// version (libcni `ValidateNetworkList`). Returns each plugin's answer;
    /// all problems are reported together.
    pub fn validate_list(&self, list: &NetworkList) -> Result<Vec<VersionInfo>> {
        let want = if list.cni_version.is_empty() {
            "0.1.0"
        } else {
            list.cni_version.as_str()
        };
        skel::validate_network_name(&list.name).map_err(|e| Error::from_skel(Kind::Config, e))?;
        let mut infos = Vec::new();
        let mut errors = Vec::new();
        for plugin in &list.plugins {
            match self.version(&plugin.plugin_type) {
                Ok(info) => {
                    if !info.supported_versions.iter().any(|v| v == want) {
                        errors.push(Error::config(format!(
                            "plugin {} does not support config version {want:?} (it supports {})",
                            plugin.plugin_type,
                            info.supported_versions.join(", ")
                        )));
                    }
                    infos.push(info);
                }
                Err(e) => errors.push(e),
            }
        }
        join_errors(errors).map(|()| infos)
    }
}

/// Parse a plugin's ADD output (libcni `fixupResultVersion` + `Create`):
/// a result without `cniVersion` is taken to be in the config's version.
pub fn parse_result(out: &[u8], cni_version: &str) -> Result<CniResult> {
    let bad = |why: String| {
        Error::plugin(
            skel::code::DECODING_FAILURE,
            format!("invalid result {}: {why}", excerpt(out)),
        )
    };
    if out.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::plugin(
            skel::code::DECODING_FAILURE,
            "printed no result",
        ));
    }
    let mut value: Value = serde_json::from_slice(out).map_err(|e| bad(e.to_string()))?;
    if value.is_null() {
        value = Value::Object(Map::new());
    }
    if !value.is_object() {
        return Err(bad(format!(
            "expected a JSON object, found {}",
            skel::gojson::kind(&value)
        )));
    }
    CniResult::parse(&value, cni_version).map_err(|e| bad(e.to_string()))
}

/// Decode a VERSION answer (libcni `PluginDecoder`).
fn decode_version_info(out: &[u8]) -> Result<VersionInfo> {
    let bad = |why: String| {
        Error::plugin(
            skel::code::DECODING_FAILURE,
            format!("decoding version info {}: {why}", excerpt(out)),
        )
    };
    let v: Value = serde_json::from_slice(out).map_err(|e| bad(e.to_string()))?;
    let cni_version = match v.get("cniVersion") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(bad("missing field cniVersion".into())),
    };
    let supported = match v.get("supportedVersions") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("supportedVersions must be strings".into()))?,
        None | Some(Value::Null) if cni_version == "0.2.0" => {
            vec!["0.1.0".into(), "0.2.0".into()]
        }
        None | Some(Value::Null) => return Err(bad("missing field supportedVersions".into())),
        Some(_) => return Err(bad("supportedVersions must be a list".into())),
    };
    Ok(VersionInfo {
        cni_version,
        supported_versions: supported,
    })
}

fn at_least(version: &str, min: &str) -> Result<bool> {
    skel::version::greater_or_equal(version, min)
        .map_err(|e| Error::config(format!("invalid cniVersion {version:?}: {e}")))
}

/// One error from many (each on its own line), or success when none.
fn join_errors(mut errors: Vec<Error>) -> Result<()> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => {
            let mut first = errors.remove(0);
            for e in errors {
                first.msg = format!("{}\n{e}", first.msg);
            }
            Err(first)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_info_json_escapes_html_characters_as_go_does() {
        let v = VersionInfo {
            cni_version: "1.1.0".into(),
            supported_versions: vec!["<1.0.0&>".into()],
        };
        assert_eq!(
            v.to_json(),
            r#"{"cniVersion":"1.1.0","supportedVersions":["\u003c1.0.0\u0026\u003e"]}"#
        );
    }

    #[test]
    fn results_without_version_take_the_config_version() {
        let r = parse_result(br#"{"ips":[{"address":"10.240.0.2/24"}]}"#, "0.4.0").unwrap();
        assert_eq!(r.version(), "0.4.0");
        let r = parse_result(b"null", "1.0.0").unwrap();
        assert_eq!(r.version(), "1.0.0");
        let r = parse_result(br#"{"cniVersion":"0.3.1"}"#, "1.0.0").unwrap();
        assert_eq!(r.version(), "0.3.1");
        assert!(
            parse_result(b"garbage", "1.0.0")
                .unwrap_err()
                .msg
                .starts_with("invalid result \"garbage\"")
        );
        assert_eq!(
            parse_result(b"", "1.0.0").unwrap_err().msg,
            "printed no result"
        );
        assert!(parse_result(br#"{"cniVersion":"7.0.0"}"#, "1.0.0").is_err());
    }

    #[test]
    fn version_info_decoding() {
        let i =
            decode_version_info(br#"{"cniVersion":"1.1.0","supportedVersions":["0.4.0","1.1.0"]}"#)
                .unwrap();
        assert_eq!(i.supported_versions, vec!["0.4.0", "1.1.0"]);
        let i = decode_version_info(br#"{"cniVersion":"0.2.0"}"#).unwrap();
        assert_eq!(i.supported_versions, vec!["0.1.0", "0.2.0"]);
        assert!(decode_version_info(br#"{"cniVersion":"1.0.0"}"#).is_err());
        assert!(decode_version_info(b"{}").is_err());
    }

    #[test]
    fn runtime_config_only_for_declared_capabilities() {
        let list = NetworkList::from_bytes(
            br#"{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"a","capabilities":{"portMappings":true,"mac":false}}]}"#,
        )
        .unwrap();
        let mut rt = RuntimeConf {
            capability_args: serde_json::json!({"portMappings":[1],"mac":"x","bandwidth":{}})
                .as_object()
                .cloned()
                .unwrap(),
            ..Default::default()
        };
        let conf = Cni::build_conf(&list, &list.plugins[0], None, &rt);
        assert_eq!(
            String::from_utf8(conf).unwrap(),
            r#"{"capabilities":{"mac":false,"portMappings":true},"cniVersion":"1.0.0","name":"n","runtimeConfig":{"portMappings":[1]},"type":"a"}"#
        );
        rt.capability_args.remove("portMappings");
        let conf = Cni::build_conf(&list, &list.plugins[0], None, &rt);
        assert!(!String::from_utf8(conf).unwrap().contains("runtimeConfig"));
    }
}
