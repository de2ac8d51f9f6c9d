//! The `cni-plugins` binary: the plugin is `argv[0]`'s base name.

#![no_main]

use std::ffi::{CStr, c_char, c_int};

/// # Safety
/// Called by the C runtime with its `argc`/`argv`.
#[unsafe(no_mangle)]
extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    skel::no_std_startup();
    // SAFETY: argv holds argc valid C strings (C runtime contract).
    let arg = |i: c_int| -> Option<String> {
        (i < argc).then(|| {
            unsafe { CStr::from_ptr(*argv.add(i as usize)) }
                .to_string_lossy()
                .into_owned()
        })
    };
    let argv0 = arg(0).unwrap_or_default();
    let args: Vec<String> = (1..argc).filter_map(arg).collect();
    let code = cni_plugins::run(&argv0, &args);
    std::process::exit(code)
}
