#![no_main]
skel::plugin_main!(bandwidth::Bandwidth);
