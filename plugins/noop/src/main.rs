//! `noop`: the CNI test double. A test writes a Debug file saying what the
//! plugin should answer (a result, an error, stderr text, an exit status,
//! the versions to support); noop answers that for every verb and records
//! the invocation back into the file, and optionally into a command log.
//! Compatible with the reference `plugins/test/noop` and its Debug format,
//! so suites written for the Go noop run against this one unchanged.

mod config;
mod debug;
mod extra_args;
mod plugin;

fn main() {
    plugin::main()
}
