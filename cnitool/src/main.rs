//! `cnitool`: run CNI network configurations by hand. See `cnitool --help`.

fn main() {
    cnitool::cli::main()
}
