//! Symbolic links planted where a plugin writes its state, for the tests
//! that it never writes through one: each link points at a victim file
//! outside the state directory, or at a name that does not exist yet
//! (which a write through the link would create).

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::TempDir;

/// The victims of a test's planted links.
pub struct Planted {
    dir: TempDir,
    links: Vec<PathBuf>,
}

const PRECIOUS: &str = "precious: root's file, not the plugin's";

impl Planted {
    pub fn new() -> Planted {
        let dir = TempDir::new("victims");
        std::fs::write(dir.join("victim"), PRECIOUS).unwrap();
        Planted {
            dir,
            links: Vec::new(),
        }
    }

    /// Plant links at `at` (their directories created when missing): the
    /// first to the victim file, the next to a file that does not exist,
    /// and so on alternately.
    pub fn plant(&mut self, at: &[PathBuf]) {
        for (i, path) in at.iter().enumerate() {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            let _ = std::fs::remove_file(path);
            let target = match i % 2 {
                0 => self.dir.join("victim"),
                _ => self.dir.join(&format!("absent{i}")),
            };
            symlink(&target, path).unwrap_or_else(|e| panic!("plant {}: {e}", path.display()));
            self.links.push(path.clone());
        }
    }

    /// The victim is untouched and nothing was created through a link to
    /// a missing file.
    pub fn check(&self, what: &str) {
        let victim = std::fs::read_to_string(self.dir.join("victim")).unwrap_or_default();
        assert_eq!(
            victim, PRECIOUS,
            "{what}: the victim was written through a link"
        );
        let names: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            vec!["victim"],
            "{what}: a file was created through a link"
        );
    }

    /// The planted paths that are still links (a state file that was
    /// written replaces its link by itself).
    pub fn still_links(&self) -> Vec<&Path> {
        self.links
            .iter()
            .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink()))
            .map(PathBuf::as_path)
            .collect()
    }
}

impl Default for Planted {
    fn default() -> Planted {
        Planted::new()
    }
}
