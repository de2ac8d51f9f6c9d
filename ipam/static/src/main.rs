//! The `static` binary: everything happens in the library.

#![no_main]
skel::plugin_main!(static_ipam::Static);
