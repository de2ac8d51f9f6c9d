//! Closing every descriptor but a few in a freshly forked child, with
//! async-signal-safe calls only (the parent may have other threads).
//!
//! `close_range` (Linux 5.9) does it in one call. The release binaries are
//! static and so run on older kernels too (Debian 10, Ubuntu 20.04's 5.4,
//! RHEL 8), where it fails with ENOSYS; a child that then kept every
//! descriptor held the plugin's stdout open (the runtime waited for its
//! EOF) and its own copy of the gate pipe's write end (so it waited for
//! itself, forever). There the child lists `/proc/self/fd` with raw
//! `getdents64` and closes what it finds.

use nix::libc;

/// Close every descriptor except those in `keep`.
///
/// # Safety
///
/// Call only in a freshly forked child that owns no Rust object using the
/// descriptors it closes.
pub(crate) unsafe fn close_all_but(keep: &[i32]) {
    // SAFETY: see the function's contract.
    unsafe {
        // close_ranges keeps at most four descriptors.
        if keep.len() > 4 || !close_ranges(keep) {
            close_listed(keep);
        }
    }
}

/// `close_range` around the kept descriptors; false when a call fails.
unsafe fn close_ranges(keep: &[i32]) -> bool {
    let mut sorted = [u32::MAX; 4];
    let n = keep.len().min(sorted.len());
    for (s, k) in sorted.iter_mut().zip(keep) {
        *s = *k as u32;
    }
    sorted[..n].sort_unstable();
    let mut from = 0u32;
    for &k in &sorted[..n] {
        // SAFETY: plain syscall on descriptor numbers.
        if k > from && !unsafe { close_range(from, k - 1) } {
            return false;
        }
        from = k.saturating_add(1);
    }
    // SAFETY: as above.
    unsafe { close_range(from, u32::MAX) }
}

/// `close_range(first, last, 0)` through `syscall`, which every libc has
/// (the libc crate wraps `close_range` for glibc only, not for musl).
unsafe fn close_range(first: u32, last: u32) -> bool {
    // Passed as longs (a variadic u32 may leave a 64-bit register's upper
    // half undefined). On 32-bit targets a long is 32 bits, and u32::MAX
    // becomes -1: the same bits, which the kernel reads as the unsigned
    // int it takes.
    let (first, last) = (first as libc::c_long, last as libc::c_long);
    // SAFETY: plain syscall on descriptor numbers.
    unsafe { libc::syscall(libc::SYS_close_range, first, last, 0 as libc::c_long) == 0 }
}

/// Close every descriptor `/proc/self/fd` lists, except `keep`; without
/// `/proc`, the first 1024.
unsafe fn close_listed(keep: &[i32]) {
    // SAFETY: plain syscalls on a stack buffer.
    unsafe {
        let dir = libc::open(
            c"/proc/self/fd".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            for fd in (0..1024).filter(|fd| !keep.contains(fd)) {
                libc::close(fd);
            }
            return;
        }
        let mut buf = [0u8; 2048];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off + 19 < n as usize {
                // linux_dirent64: d_ino u64, d_off i64, d_reclen u16,
                // d_type u8, then the NUL-terminated name.
                let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                if let Some(fd) = fd_number(&buf[off + 19..(off + reclen).min(n as usize)])
                    && fd != dir
                    && !keep.contains(&fd)
                {
                    libc::close(fd);
                }
                off += reclen;
            }
        }
        libc::close(dir);
    }
}

/// The descriptor a `/proc/self/fd` entry names (`.` and `..` are none).
fn fd_number(name: &[u8]) -> Option<i32> {
    let digits = name.split(|b| *b == 0).next()?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0i32, |n, d| {
        n.checked_mul(10)?.checked_add(i32::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;

    /// Fork; the child (close_range refused or not) closes all but the
    /// report pipe and the read ends of the first `more` extra pipes, and
    /// reports which of the first 256 descriptors are still open, one
    /// byte each. Returns the descriptors kept, sorted, and those open.
    fn open_after_closing(refuse_close_range: bool, more: usize) -> (Vec<i32>, Vec<i32>) {
        let (mut report_r, report_w) = std::io::pipe().unwrap();
        // Descriptors the child must close: pipes and a file.
        let extra: Vec<_> = (0..5).map(|_| std::io::pipe().unwrap()).collect();
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        let w = report_w.as_raw_fd();
        let mut keep: Vec<i32> = extra[..more].iter().map(|p| p.0.as_raw_fd()).collect();
        keep.push(w);
        // SAFETY: the child makes only raw syscalls (prctl, close, fcntl,
        // write, _exit) before it exits.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => unsafe {
                if refuse_close_range {
                    testsupport::seccomp::refuse_close_range().unwrap();
                }
                close_all_but(&keep);
                let mut open = [0u8; 256];
                for (fd, o) in open.iter_mut().enumerate() {
                    *o = u8::from(libc::fcntl(fd as i32, libc::F_GETFD) >= 0);
                }
                libc::write(w, open.as_ptr().cast(), open.len());
                libc::_exit(0)
            },
            nix::unistd::ForkResult::Parent { child } => {
                drop(report_w);
                let mut open = Vec::new();
                report_r.read_to_end(&mut open).unwrap();
                nix::sys::wait::waitpid(child, None).unwrap();
                drop((extra, file));
                let fds = open
                    .iter()
                    .enumerate()
                    .filter(|(_, o)| **o == 1)
                    .map(|(fd, _)| fd as i32)
                    .collect();
                keep.sort_unstable();
                (keep, fds)
            }
        }
    }

    #[test]
    fn a_child_keeps_only_the_named_descriptors_with_or_without_close_range() {
        for refuse in [false, true] {
            for more in [0, 4] {
                let (keep, open) = open_after_closing(refuse, more);
                assert_eq!(open, keep, "close_range refused: {refuse}");
            }
        }
    }

    #[test]
    fn proc_fd_names_are_descriptor_numbers() {
        assert_eq!(fd_number(b"17\0\0\0"), Some(17));
        assert_eq!(fd_number(b"0\0"), Some(0));
        assert_eq!(fd_number(b".\0"), None);
        assert_eq!(fd_number(b"..\0"), None);
        assert_eq!(fd_number(b"\0"), None);
        assert_eq!(fd_number(b"99999999999\0"), None);
    }
}
