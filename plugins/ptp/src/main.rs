#![no_main]
skel::plugin_main!(ptp::PLUGIN);
