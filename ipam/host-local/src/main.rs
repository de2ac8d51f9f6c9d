//! The `host-local` binary: everything happens in the library.

#![no_main]
skel::plugin_main!(host_local::HostLocal);
