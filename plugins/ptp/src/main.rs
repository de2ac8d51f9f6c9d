fn main() {
    skel::main(&ptp::PLUGIN)
}
