fn main() {
    skel::main(&ptp::Ptp)
}
