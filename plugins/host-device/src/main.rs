//! The `host-device` binary: everything happens in the library.

#![no_main]
skel::plugin_main!(host_device::PLUGIN);
