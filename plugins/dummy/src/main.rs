//! The `dummy` binary: everything happens in the library.

#![no_main]
skel::plugin_main!(dummy::PLUGIN);
