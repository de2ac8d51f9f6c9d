//! The `sbr` binary: everything happens in the library.

#![no_main]
skel::plugin_main!(sbr::PLUGIN);
