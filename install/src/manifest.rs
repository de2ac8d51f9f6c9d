//! `.cni-rs-manifest`: one line `<sha256 hex> <name>` per file the installer
//! wrote, sorted by name (the format the shell installer kept, so a
//! directory it installed into is still recognised as ours).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::files;

pub const NAME: &str = ".cni-rs-manifest";

/// Name → digest, as read from `dir`'s manifest (empty when there is none).
pub fn read(dir: &Path) -> Result<BTreeMap<String, String>> {
    let path = dir.join(NAME);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(Error::io("read", &path)(e)),
    };
    Ok(parse(&text))
}

/// The entries of a manifest's text; lines that are not `<digest> <name>`
/// are ignored, as the shell installer's `read -r sum name` did.
pub fn parse(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (sum, name) = l.trim().split_once(char::is_whitespace)?;
            let name = name.trim();
            (!name.is_empty()).then(|| (name.to_string(), sum.to_string()))
        })
        .collect()
}

/// Replace `dir`'s manifest with `entries`: a new file renamed over the old,
/// unless it already says the same (a re-install writes nothing).
pub fn write(dir: &Path, entries: &BTreeMap<String, String>, tag: &str) -> Result<()> {
    let mut text = String::new();
    for (name, sum) in entries {
        text += &format!("{sum} {name}\n");
    }
    if std::fs::read(dir.join(NAME)).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(());
    }
    let tmp = files::Temp::create(dir, NAME, tag, 0o644, |f, path| {
        f.write_all(text.as_bytes())
            .map_err(Error::io("write", path))
    })?;
    tmp.rename_to(&dir.join(NAME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_writes_and_skips_junk() {
        let m = parse("aa bridge\n\n  bb  host-local \njunk\ncc ptp\n");
        let v: Vec<_> = m.iter().map(|(n, s)| (n.as_str(), s.as_str())).collect();
        assert_eq!(v, [("bridge", "aa"), ("host-local", "bb"), ("ptp", "cc")]);
        let dir = testsupport::TempDir::new("manifest");
        write(dir.path(), &m, "t").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join(NAME)).unwrap(),
            "aa bridge\nbb host-local\ncc ptp\n"
        );
        assert_eq!(read(dir.path()).unwrap(), m);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // The same entries again: the file is left alone.
        use std::os::unix::fs::MetadataExt;
        let ino = std::fs::metadata(dir.join(NAME)).unwrap().ino();
        write(dir.path(), &m, "t").unwrap();
        assert_eq!(std::fs::metadata(dir.join(NAME)).unwrap().ino(), ino);
    }
}
