fn main() {
    skel::main(&bandwidth::Bandwidth)
}
