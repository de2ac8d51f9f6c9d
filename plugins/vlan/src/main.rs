//! The `vlan` binary: everything happens in the library.

#![no_main]
skel::plugin_main!(vlan::PLUGIN);
