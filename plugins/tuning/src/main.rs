//! The `tuning` binary: everything happens in the library.

fn main() {
    skel::main(&tuning::Tuning)
}
