//! The `static` binary: everything happens in the library.

fn main() {
    skel::main(&static_ipam::Static)
}
