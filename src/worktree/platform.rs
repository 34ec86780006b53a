//! The few calls whose best form depends on the operating system, each with a portable
//! fallback, so that a build for another Unix (macOS) changes nothing elsewhere. The
//! watcher's own (the kernel's file-change events) are in `watch::platform`.

use std::os::fd::AsFd;
use std::path::Path;

/// Makes everything written to the filesystem holding `fd` durable: the barrier a restore
/// passes when it wrote too many files for [`sync_entry`] on each to cost less (see
/// `ops::restore::apply`).
///
/// - Linux flushes just that filesystem (`syncfs`, about the cost of one fsync), every
///   dirty page of it, ours and other processes'.
/// - Apple systems: `sync` may return before the data is on disk, and even `fsync` leaves
///   it in the drive's cache. So each written file and each changed directory is pushed
///   to the drive as it is finished ([`push_to_device`]), and the barrier is one
///   `F_FULLFSYNC`, which flushes the drive's cache of everything pushed before it.
/// - Elsewhere the fallback is `sync`, which schedules every filesystem's dirty data.
pub fn sync_filesystem(fd: impl AsFd) -> std::io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        rustix::fs::syncfs(fd)?;
    }
    #[cfg(target_vendor = "apple")]
    {
        rustix::fs::fcntl_fullfsync(fd)?;
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
    {
        let _ = fd;
        rustix::fs::sync();
    }
    Ok(())
}

/// Whether [`sync_filesystem`] covers only what was pushed with [`push_to_device`] first
/// (Apple systems), so that every written file and changed directory must be.
pub const BARRIER_NEEDS_PUSHES: bool = cfg!(target_vendor = "apple");

/// Whether a barrier may sync only the entries it wrote ([`sync_entry`] on each written
/// file and changed directory) instead of the whole filesystem, so as not to wait for
/// other processes' dirty data. Not on Apple systems, where only `F_FULLFSYNC` empties
/// the drive's cache, and it does so for everything at once.
pub const BARRIER_PER_ENTRY: bool = !BARRIER_NEEDS_PUSHES;

/// Pushes a finished file's data, or a changed directory's entries, to the drive, so that
/// the next [`sync_filesystem`] makes them durable: on Apple systems, whose barrier covers
/// only what was pushed first ([`BARRIER_NEEDS_PUSHES`]). Nothing elsewhere: Linux's
/// barriers ([`sync_entry`], [`sync_filesystem`]) write what is dirty themselves, and
/// starting each file's writeback early measured no faster there (docs/performance.md,
/// "The restore's barrier").
pub fn push_to_device(fd: impl AsFd) -> std::io::Result<()> {
    if BARRIER_NEEDS_PUSHES {
        rustix::fs::fsync(fd)?;
    }
    Ok(())
}

/// Makes one written file's data, or one directory's entries, durable and waits for
/// it: `fdatasync` (a file) or `fsync` (a directory, opened read-only), which on a
/// journaling filesystem commits the journal holding its metadata. Concurrent calls
/// share one journal commit (ext4, XFS), so a barrier runs them in parallel.
pub fn sync_entry(fd: impl AsFd, is_dir: bool) -> std::io::Result<()> {
    #[cfg(not(target_vendor = "apple"))]
    if !is_dir {
        rustix::fs::fdatasync(fd)?;
        return Ok(());
    }
    let _ = is_dir;
    rustix::fs::fsync(fd)?;
    Ok(())
}

/// The flags that open a directory only to look its entries up (`statat` relative to
/// it): on Linux `O_PATH`, which needs no read permission on the directory; elsewhere a
/// read-only open.
pub fn lookup_dir_flags() -> rustix::fs::OFlags {
    use rustix::fs::OFlags;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let lookup = OFlags::PATH;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let lookup = OFlags::RDONLY;
    lookup | OFlags::DIRECTORY | OFlags::CLOEXEC
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

/// Whether git reads `core.precomposeUnicode` here: only on Apple systems, whose
/// filesystems hand names back in another normalization than they were written in.
pub const GIT_READS_PRECOMPOSE_UNICODE: bool = cfg!(target_vendor = "apple");

/// Whether a worktree's filesystem that cannot be asked (its top may not be written) is
/// taken to ignore case and Unicode normalization: as the system's own filesystems do by
/// default (APFS does; Linux's filesystems do not).
pub const NAMES_IGNORE_CASE_AND_NORMALIZATION_BY_DEFAULT: bool = cfg!(target_vendor = "apple");
