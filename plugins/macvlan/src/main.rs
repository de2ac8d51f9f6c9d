//! The `macvlan` binary: everything happens in the library.

#![no_main]
skel::plugin_main!(macvlan::PLUGIN);
