//! The result cache, byte-compatible with libcni so that attachments made
//! by containerd or CRI-O can be deleted by cnitool and the reverse:
//! `<dir>/results/<network>-<containerID>-<ifname>`, directory 0700, file
//! 0600, holding Go's compact JSON of
//! `{"kind":"cniCacheV1","containerId","config"(base64),"ifName",
//! "networkName","netns"?,"cniArgs"?,"capabilityArgs"?,"result"?}`.
//! Legacy caches (the raw result only) are still read.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use skel::{CniResult, gojson};

use crate::error::{Error, Result};

/// libcni's default cache directory.
pub const DEFAULT_DIR: &str = "/var/lib/cni";
/// The longest file name Linux file systems take.
const NAME_MAX: usize = 255;
/// The `kind` of a current cache entry.
pub const KIND_V1: &str = "cniCacheV1";

/// One cached attachment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Entry {
    pub container_id: String,
    /// The network list bytes used for the ADD.
    pub config: Vec<u8>,
    pub ifname: String,
    pub network_name: String,
    pub netns: String,
    pub cni_args: Vec<(String, String)>,
    pub capability_args: Map<String, Value>,
    /// The final ADD result, as JSON of its own version.
    pub result: Option<Value>,
}

/// libcni's `cachedInfo`: its fields in declaration order, empty ones
/// omitted as its `omitempty` tags say.
#[derive(Serialize, Deserialize)]
#[serde(rename = "libcni.cachedInfo")]
struct CachedInfo {
    kind: String,
    #[serde(rename = "containerId")]
    container_id: String,
    /// A Go `[]byte`: padded standard base64.
    config: String,
    #[serde(rename = "ifName")]
    ifname: String,
    #[serde(rename = "networkName")]
    network_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    netns: String,
    #[serde(rename = "cniArgs", skip_serializing_if = "Vec::is_empty")]
    cni_args: Vec<(String, String)>,
    #[serde(rename = "capabilityArgs", skip_serializing_if = "Map::is_empty")]
    capability_args: Map<String, Value>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    result: Map<String, Value>,
}

impl Entry {
    /// The file content libcni's `cacheAdd` writes for this entry.
    pub fn to_bytes(&self) -> Vec<u8> {
        let result = match &self.result {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        gojson::marshal(&CachedInfo {
            kind: KIND_V1.to_string(),
            container_id: self.container_id.clone(),
            config: skel::base64::encode(&self.config),
            ifname: self.ifname.clone(),
            network_name: self.network_name.clone(),
            netns: self.netns.clone(),
            cni_args: self.cni_args.clone(),
            capability_args: self.capability_args.clone(),
            result,
        })
        .into_bytes()
    }

    /// Parse a v1 entry as libcni decodes it; `None` when the data is not
    /// a v1 entry (a legacy cache or garbage).
    pub fn from_bytes(bytes: &[u8]) -> Option<Entry> {
        let info: CachedInfo = gojson::unmarshal(bytes).ok()?;
        if info.kind != KIND_V1 {
            return None;
        }
        Some(Entry {
            container_id: info.container_id,
            config: skel::base64::decode(&info.config).ok()?,
            ifname: info.ifname,
            network_name: info.network_name,
            netns: info.netns,
            cni_args: info.cni_args,
            capability_args: info.capability_args,
            result: (!info.result.is_empty()).then_some(Value::Object(info.result)),
        })
    }
}

/// A cache directory.
#[derive(Debug, Clone)]
pub struct Cache {
    pub dir: PathBuf,
}

impl Cache {
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    fn results_dir(&self) -> PathBuf {
        self.dir.join("results")
    }

    /// `results/<network>-<containerID>-<ifname>`; a name longer than a
    /// file name can be is refused, so ADD can check before the plugins
    /// run (libcni finds out when it writes the result, after them).
    pub fn path(&self, network: &str, container_id: &str, ifname: &str) -> Result<PathBuf> {
        if network.is_empty() || container_id.is_empty() || ifname.is_empty() {
            return Err(Error::cache(format!(
                "cache file path requires network name ({network:?}), container ID ({container_id:?}), and interface name ({ifname:?})"
            )));
        }
        let name = format!("{network}-{container_id}-{ifname}");
        if name.len() > NAME_MAX {
            return Err(Error::cache(format!(
                "cache file name {name:?} is longer than {NAME_MAX} bytes: use a shorter network name, container ID or interface name"
            )));
        }
        Ok(self.results_dir().join(name))
    }

    /// Write an entry (replacing any previous one).
    pub fn write(&self, entry: &Entry) -> Result<()> {
        let path = self.path(&entry.network_name, &entry.container_id, &entry.ifname)?;
        let dir = self.results_dir();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| io_err("create cache directory", &dir, &e))?;
        // In place, as libcni writes it; never through a link planted at
        // the name (root writes here).
        skel::statefile::write_in_place(&path, &entry.to_bytes(), false, 0o600)
            .map_err(|e| io_err("write cache file", &path, &e))
    }

    /// Remove an entry; a missing one is not an error.
    pub fn remove(&self, network: &str, container_id: &str, ifname: &str) -> Result<()> {
        let path = self.path(network, container_id, ifname)?;
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_err("remove cache file", &path, &e))
            }
            _ => Ok(()),
        }
    }

    /// The cached final result, converted to `cni_version` (libcni
    /// `getCachedResult`). `Ok(None)` when there is no (readable) cache.
    pub fn result(
        &self,
        network: &str,
        container_id: &str,
        ifname: &str,
        cni_version: &str,
    ) -> Result<Option<CniResult>> {
        let path = self.path(network, container_id, ifname)?;
        let Ok(bytes) = std::fs::read(&path) else {
            return Ok(None);
        };
        let raw = match Entry::from_bytes(&bytes) {
            Some(entry) => match entry.result {
                Some(r) => r,
                None => return Ok(None),
            },
            // A legacy cache holds the bare result.
            None => serde_json::from_slice(&bytes).map_err(|e| {
                Error::cache(format!("parse cached result {}: {e}", path.display()))
            })?,
        };
        let parsed = CniResult::parse(&raw, "")
            .map_err(|e| Error::from_skel(crate::error::Kind::Cache, e))
            .map_err(|e| e.context(format!("parse cached result {}", path.display())))?;
        parsed
            .convert(cni_version)
            .map(Some)
            .map_err(|e| Error::from_skel(crate::error::Kind::Cache, e))
            .map_err(|e| {
                e.context(format!(
                    "failed to convert cached result to config version {cni_version:?}"
                ))
            })
    }

    /// Every v1 entry (of any network), in file name order, skipping files
    /// that are unreadable, legacy or lack a network or interface name, as
    /// libcni's `GetCachedAttachments` does. A missing directory is empty.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        let dir = self.results_dir();
        let read = match std::fs::read_dir(&dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("list cache directory", &dir, &e)),
        };
        let mut names: Vec<PathBuf> = read.flatten().map(|e| e.path()).collect();
        names.sort();
        Ok(names
            .iter()
            .filter_map(|p| std::fs::read(p).ok())
            .filter_map(|b| Entry::from_bytes(&b))
            .filter(|e| !e.ifname.is_empty() && !e.network_name.is_empty())
            .collect())
    }
}

fn io_err(what: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::cache(format!("{what} {}: {}", path.display(), skel::io_text(e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Entry {
        Entry {
            container_id: "c1".into(),
            config: br#"{"name":"n"}"#.to_vec(),
            ifname: "eth0".into(),
            network_name: "n".into(),
            netns: "/run/netns/x".into(),
            cni_args: vec![("K8S_POD_NAME".into(), "a&b".into())],
            capability_args: json!({"portMappings":[{"hostPort":8080}],"aliases":{}})
                .as_object()
                .cloned()
                .unwrap(),
            result: Some(
                json!({"cniVersion":"1.0.0","ips":[{"address":"10.240.0.2/24","interface":0}]}),
            ),
        }
    }

    #[test]
    fn bytes_match_go_marshal_and_read_back() {
        // What Go's json.Marshal(cachedInfo) prints for the same values.
        let expected = concat!(
            r#"{"kind":"cniCacheV1","containerId":"c1","config":"eyJuYW1lIjoibiJ9","#,
            r#""ifName":"eth0","networkName":"n","netns":"/run/netns/x","#,
            r#""cniArgs":[["K8S_POD_NAME","a\u0026b"]],"#,
            r#""capabilityArgs":{"aliases":{},"portMappings":[{"hostPort":8080}]},"#,
            r#""result":{"cniVersion":"1.0.0","ips":[{"address":"10.240.0.2/24","interface":0}]}}"#
        );
        assert_eq!(String::from_utf8(sample().to_bytes()).unwrap(), expected);
        assert_eq!(Entry::from_bytes(expected.as_bytes()).unwrap(), sample());
    }

    #[test]
    fn empty_fields_are_omitted() {
        let e = Entry {
            container_id: "c".into(),
            ifname: "eth0".into(),
            network_name: "n".into(),
            ..Default::default()
        };
        assert_eq!(
            String::from_utf8(e.to_bytes()).unwrap(),
            r#"{"kind":"cniCacheV1","containerId":"c","config":"","ifName":"eth0","networkName":"n"}"#
        );
    }

    #[test]
    fn non_v1_data_is_not_an_entry() {
        assert!(Entry::from_bytes(br#"{"cniVersion":"0.4.0","ips":[]}"#).is_none());
        assert!(Entry::from_bytes(b"garbage").is_none());
        assert!(Entry::from_bytes(br#"{"kind":"cniCacheV1","config":"!!"}"#).is_none());
        assert!(Entry::from_bytes(br#"{"kind":"cniCacheV1","result":[]}"#).is_none());
    }

    #[test]
    fn entries_are_read_as_go_reads_them() {
        // Keys in any case; a `[2]string` pair with one element.
        let e = Entry::from_bytes(
            br#"{"KIND":"cniCacheV1","ContainerID":"c","IfName":"eth0","NetworkName":"n","CniArgs":[["K"]]}"#,
        )
        .unwrap();
        assert_eq!((e.container_id.as_str(), e.ifname.as_str()), ("c", "eth0"));
        assert_eq!(e.cni_args, vec![("K".to_string(), String::new())]);
    }
}
