fn main() {
    skel::main(&bridge::Bridge)
}
