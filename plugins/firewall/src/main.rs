#![no_main]
skel::plugin_main!(firewall::Firewall);
