//! The `dhcp` binary: the daemon when the first argument is `daemon`,
//! else the IPAM plugin.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("daemon") {
        std::process::exit(dhcp::daemon::main(&args[1..]));
    }
    skel::main(&dhcp::Dhcp)
}
