//! The `tuning` binary: everything happens in the library.

#![no_main]
skel::plugin_main!(tuning::PLUGIN);
