//! Kernels without a syscall, imitated: a seccomp filter installed in the
//! calling process (a forked child, or a child about to exec) makes one
//! syscall fail with `ENOSYS`, as on a kernel that predates it.

use nix::libc;

/// `close_range` (syscall 436 on every architecture, Linux 5.9): refused
/// from now on in this process and what it execs. Async-signal-safe (two
/// `prctl` calls on a filter built on the stack), so a forked child may
/// call it.
pub fn refuse_close_range() -> std::io::Result<()> {
    const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    let stmt = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    let filter = [
        // A = seccomp_data.nr
        stmt(0x20, 0, 0, 0),
        // A == 436 ? next : skip one
        stmt(0x15, 0, 1, 436),
        stmt(0x06, 0, 0, SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        stmt(0x06, 0, 0, SECCOMP_RET_ALLOW),
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: plain prctl calls with a filter that outlives them.
    let ok = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &raw const prog,
            ) == 0
    };
    match ok {
        true => Ok(()),
        false => Err(std::io::Error::last_os_error()),
    }
}
