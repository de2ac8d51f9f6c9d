fn main() {
    skel::main(&bridge::PLUGIN)
}
