//! The installer's one error type: what failed, and on which path.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum Error {
    /// A command line it cannot run.
    Usage(String),
    /// A binary to install is not in the source directory.
    Missing(PathBuf),
    /// A name in the plugin directory that no file can replace.
    NotAFile(PathBuf),
    /// A file operation (`what`) on `path` failed.
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Error {
    pub fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.to_path_buf();
        move |source| Error::Io { what, path, source }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => f.write_str(m),
            Error::Missing(p) => write!(f, "{} is missing", p.display()),
            Error::NotAFile(p) => write!(f, "{} is a directory, not a file", p.display()),
            Error::Io { what, path, source } => {
                write!(f, "{what} {}: {}", path.display(), skel::io_text(source))
            }
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
