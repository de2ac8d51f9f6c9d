//! The saved link attributes: `<dataDir>/<containerID>_<ifname>.json`,
//! byte for byte what the reference writes (Go's `MarshalIndent` with a
//! one-space indent, keys `mac`, `promisc`, `mtu`, `allmulti`, `txQLen`,
//! each only when it is recorded, mode 0600), so that either plugin
//! restores the other's.
//!
//! Unlike the reference, the file is written to a temporary name and
//! renamed into place (never torn), and a record for the network, an
//! empty file `<dataDir>/.tuning/<network>/<containerID>_<ifname>.json`,
//! lets GC find the backups of its own attachments in a `dataDir` every
//! network shares. The Go plugin never looks there. The record is made
//! first and the temporary file's name is the backup's own
//! (`.tuning-<hash of the backup's name>.tmp`), so DEL and GC remove one a
//! killed ADD left; no file is written or read through a link planted at
//! its name ([`skel::statefile`]).

use std::fs;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use skel::statefile;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The reference's `configToRestore`: the attributes as they were before
/// ADD, only those ADD changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename = "main.configToRestore")]
pub struct Saved {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mac: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub promisc: Option<bool>,
    #[serde(skip_serializing_if = "is_zero")]
    pub mtu: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allmulti: Option<bool>,
    #[serde(rename = "txQLen", skip_serializing_if = "Option::is_none")]
    pub txqlen: Option<i64>,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

impl Saved {
    /// The file's bytes, as Go's `json.MarshalIndent(c, "", " ")`.
    pub fn to_json(&self) -> String {
        skel::gojson::marshal_indent_with(self, " ")
    }

    /// Attributes recorded in `self` win; `other` fills the rest. A second
    /// ADD must not replace the original values with tuned ones.
    pub fn or(self, other: Saved) -> Saved {
        Saved {
            mac: if self.mac.is_empty() {
                other.mac
            } else {
                self.mac
            },
            promisc: self.promisc.or(other.promisc),
            mtu: if self.mtu == 0 { other.mtu } else { self.mtu },
            allmulti: self.allmulti.or(other.allmulti),
            txqlen: self.txqlen.or(other.txqlen),
        }
    }
}

/// What is on disk for an attachment.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    Absent,
    /// Present but not a backup (unreadable or not JSON); why.
    Invalid(String),
    Saved(Saved),
    /// Cut short (the reference writes in place, so a crash leaves a
    /// prefix): the attributes on its complete lines.
    Truncated(Saved),
}

/// The complete attributes of a file cut short. Both plugins write one
/// attribute a line, each but the last ending in `,`: every line before
/// the last `,\n` is whole, so the file up to there, closed, is a backup
/// of those attributes. `None` when no such prefix parses.
fn salvage(bytes: &[u8]) -> Option<Saved> {
    let text = std::str::from_utf8(bytes).ok()?;
    let end = text.rfind(",\n")?;
    skel::gojson::unmarshal(format!("{}\n}}", &text[..end]).as_bytes()).ok()
}

/// The backup of one attachment.
#[derive(Debug, Clone)]
pub struct Backup {
    dir: PathBuf,
    file: String,
    network: String,
}

/// The file name the reference uses: `<containerID>_<ifname>.json`.
pub fn file_name(container_id: &str, ifname: &str) -> String {
    format!("{container_id}_{ifname}.json")
}

/// Where the records of `network`'s backups live. A network name too
/// long for a directory (255 bytes) is hashed: ADD failed with `file name
/// too long` where the reference, which keeps no records, works.
pub fn records_dir(data_dir: &Path, network: &str) -> PathBuf {
    let dir = match network.len() {
        0..=255 => network.to_string(),
        _ => format!("sha512-{}", skel::sha512::hex_prefix(network, 32)),
    };
    data_dir.join(".tuning").join(dir)
}

/// Create the empty file `path` (mode 0600, a link at its name replaced),
/// creating its directory (0700) only when it is missing: the common case
/// costs one `open`.
fn mark(path: &Path) -> std::io::Result<()> {
    let make = || statefile::write_in_place(path, b"", false, 0o600);
    match make() {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                statefile::create_dir(dir, 0o700)?;
            }
            make()
        }
        other => other,
    }
}

fn io(op: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::config(format!("{op} {}: {}", path.display(), skel::io_text(e)))
}

impl Backup {
    pub fn new(data_dir: &Path, container_id: &str, ifname: &str, network: &str) -> Backup {
        Backup {
            dir: data_dir.to_path_buf(),
            file: file_name(container_id, ifname),
            network: network.to_string(),
        }
    }

    /// The backup whose file (and record) is named `file`.
    pub fn from_file_name(data_dir: &Path, file: &str, network: &str) -> Backup {
        Backup {
            dir: data_dir.to_path_buf(),
            file: file.to_string(),
            network: network.to_string(),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.file)
    }

    fn record(&self) -> PathBuf {
        records_dir(&self.dir, &self.network).join(&self.file)
    }

    /// The temporary file a write goes through: one per backup, short
    /// whatever the backup's name.
    fn temp_name(&self) -> String {
        format!(".tuning-{}.tmp", skel::sha512::hex_prefix(&self.file, 32))
    }

    /// The raw file, `None` when there is none: a link in its place is no
    /// backup, and is not read through.
    pub fn raw(&self) -> Result<Option<Vec<u8>>, Error> {
        let path = self.path();
        let mut bytes = Vec::new();
        match statefile::open_read(&path).and_then(|mut f| f.read_to_end(&mut bytes)) {
            Ok(_) => Ok(Some(bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => Ok(None),
            Err(e) => Err(io("read", &path, &e)),
        }
    }

    pub fn read(&self) -> Found {
        match self.raw() {
            Ok(raw) => self.parse(raw.as_deref()),
            Err(e) => Found::Invalid(e.to_string()),
        }
    }

    /// What `raw` (the file's bytes, `None` without a file) holds.
    pub fn parse(&self, raw: Option<&[u8]>) -> Found {
        match raw {
            None => Found::Absent,
            Some(bytes) => match skel::gojson::unmarshal::<Saved>(bytes) {
                Ok(s) => Found::Saved(s),
                Err(e) => match salvage(bytes) {
                    Some(s) => Found::Truncated(s),
                    None => Found::Invalid(format!("{}: {e}", self.path().display())),
                },
            },
        }
    }

    /// Record it for GC, then write `bytes` atomically (temporary file,
    /// then rename), mode 0600, creating `dataDir` (0700) when needed. The
    /// temporary name is short: one built from the backup's name in full
    /// failed with `file name too long` for container IDs whose backup
    /// name the reference still writes.
    pub fn write(&self, bytes: &[u8]) -> Result<(), Error> {
        let record = self.record();
        mark(&record).map_err(|e| io("failed to record", &record, &e))?;
        statefile::write(&self.dir, &self.file, &self.temp_name(), bytes, 0o600)
            .map_err(|e| io("failed to save", &self.path(), &e))
    }

    /// Remove the backup, a temporary file of it a killed ADD left, and
    /// its record; absent is fine, and so is a `dataDir` that is not a
    /// directory (nothing can be in it: DEL failed forever) or a directory
    /// in the backup's place (not a backup; left).
    pub fn remove(&self) -> Result<(), Error> {
        for path in [self.path(), self.dir.join(self.temp_name()), self.record()] {
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::NotFound | ErrorKind::NotADirectory | ErrorKind::IsADirectory
                    ) => {}
                Err(e) => return Err(io("failed to remove", &path, &e)),
            }
        }
        Ok(())
    }

    /// Put the file back as it was before this ADD: `previous` content, or
    /// no file at all.
    pub fn put_back(&self, previous: Option<&[u8]>) -> Result<(), Error> {
        match previous {
            Some(bytes) => self.write(bytes),
            None => self.remove(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_is_the_references() {
        let s = Saved {
            mac: "5a:be:9e:c9:b2:b1".into(),
            promisc: Some(false),
            mtu: 1400,
            allmulti: Some(false),
            txqlen: None,
        };
        // Observed from the Go plugin (v1.1.1), byte for byte.
        assert_eq!(
            s.to_json(),
            "{\n \"mac\": \"5a:be:9e:c9:b2:b1\",\n \"promisc\": false,\n \"mtu\": 1400,\n \"allmulti\": false\n}"
        );
        let all = Saved {
            txqlen: Some(0),
            ..s.clone()
        };
        assert!(all.to_json().ends_with(",\n \"txQLen\": 0\n}"));
        assert_eq!(Saved::default().to_json(), "{}");
        let back: Saved = skel::gojson::unmarshal(all.to_json().as_bytes()).unwrap();
        assert_eq!(back, all);
    }

    #[test]
    fn go_reads_keys_case_insensitively_and_so_do_we() {
        let s: Saved =
            skel::gojson::unmarshal(br#"{"MAC":"02:00:00:00:00:01","TXQLEN":5,"x":1}"#).unwrap();
        assert_eq!(s.mac, "02:00:00:00:00:01");
        assert_eq!(s.txqlen, Some(5));
    }

    #[test]
    fn earlier_values_win() {
        let first = Saved {
            mtu: 1500,
            ..Default::default()
        };
        let now = Saved {
            mtu: 1400,
            mac: "02:00:00:00:00:02".into(),
            ..Default::default()
        };
        let merged = first.or(now);
        assert_eq!(
            (merged.mtu, merged.mac.as_str()),
            (1500, "02:00:00:00:00:02")
        );
    }

    #[test]
    fn write_read_remove() {
        let dir = std::env::temp_dir().join(format!("cnirs-tuning-bk-{}", std::process::id()));
        let data = dir.join("data");
        let b = Backup::new(&data, "c1", "eth0", "net1");
        assert_eq!(b.read(), Found::Absent);
        let s = Saved {
            mtu: 1500,
            ..Default::default()
        };
        b.write(s.to_json().as_bytes()).unwrap();
        assert_eq!(b.read(), Found::Saved(s));
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&b.path()), 0o600);
        assert_eq!(mode(&data), 0o700);
        assert!(records_dir(&data, "net1").join("c1_eth0.json").exists());
        // Nothing but the backup and the record directory.
        let names: Vec<_> = fs::read_dir(&data)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");

        fs::write(b.path(), "{").unwrap();
        assert!(matches!(b.read(), Found::Invalid(_)));
        // Cut short: the complete lines are read, the cut one is not.
        fs::write(
            b.path(),
            "{\n \"mac\": \"02:00:00:00:00:01\",\n \"promisc\": true,\n \"mtu\": 15",
        )
        .unwrap();
        let want = Saved {
            mac: "02:00:00:00:00:01".into(),
            promisc: Some(true),
            ..Default::default()
        };
        assert_eq!(b.read(), Found::Truncated(want));
        fs::write(
            b.path(),
            "{\n \"mac\": \"02:00:00:00:00:01\",\n \"promisc\": tr",
        )
        .unwrap();
        assert!(matches!(b.read(), Found::Truncated(s) if s.promisc.is_none()));
        fs::write(b.path(), "{\n \"mac\": \"02:00:0").unwrap();
        assert!(matches!(b.read(), Found::Invalid(_)));
        fs::write(b.path(), "[1,\n2,\n").unwrap();
        assert!(matches!(b.read(), Found::Invalid(_)));
        b.put_back(None).unwrap();
        assert_eq!(b.read(), Found::Absent);
        assert!(!records_dir(&data, "net1").join("c1_eth0.json").exists());
        b.remove().unwrap();

        // A network name too long for a directory.
        let long = "n".repeat(300);
        let b = Backup::new(&data, "c1", "eth0", &long);
        b.write(b"{}").unwrap();
        let records = records_dir(&data, &long);
        assert!(records.join("c1_eth0.json").exists());
        assert_eq!(records, records_dir(&data, &long));
        assert_ne!(records, records_dir(&data, &"n".repeat(301)));
        b.remove().unwrap();
        assert!(!records.join("c1_eth0.json").exists());

        // dataDir a file: nothing to remove.
        let file = dir.join("file");
        fs::write(&file, "x").unwrap();
        Backup::new(&file, "c1", "eth0", "net1").remove().unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }
}
