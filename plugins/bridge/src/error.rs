//! The plugin's error: the main plugins' CNI error, shared with ptp.

pub use cni_attach::error::{Error, join};
