//! The `ipvlan` binary: everything happens in the library.

#![no_main]
skel::plugin_main!(ipvlan::PLUGIN);
