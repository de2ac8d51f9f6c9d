//! The `host-local` binary: everything happens in the library.

fn main() {
    skel::main(&host_local::HostLocal)
}
