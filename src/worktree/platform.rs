//! The few calls whose best form depends on the operating system, each with a portable
//! fallback, so that a build for another Unix (macOS) changes nothing elsewhere. The
//! watcher's own (the kernel's file-change events) are in `watch::platform`.

use std::os::fd::AsFd;
use std::path::Path;

/// Makes everything written to the filesystem holding `fd` durable. Linux flushes just
/// that filesystem (`syncfs`, about the cost of one fsync); elsewhere the fallback is
/// `sync`, which flushes every filesystem.
pub fn sync_filesystem(fd: impl AsFd) -> std::io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        rustix::fs::syncfs(fd)?;
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = fd;
        rustix::fs::sync();
    }
    Ok(())
}

/// The bytes an unprivileged user may still write to the filesystem holding `path`, or
/// `None` where the filesystem cannot say.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let fs = rustix::fs::statvfs(path).ok()?;
    Some(fs.f_bavail.saturating_mul(fs.f_frsize))
}

/// The permission bits `bits` as the system's `mode_t` holds them (32 bits on Linux, 16
/// on macOS): a mode as a tree records it never has more than its low 12 bits.
pub fn permission_mode(bits: u32) -> rustix::fs::Mode {
    rustix::fs::Mode::from_raw_mode((bits & 0o7777) as rustix::fs::RawMode)
}
