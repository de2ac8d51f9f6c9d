#![no_main]
skel::plugin_main!(portmap::Portmap);
