//! What one FSEvents event says, in the watcher's words: the directory and entry it names
//! and the [`Change`]. Kept apart from the stream itself (`macos.rs`) so that it is
//! compiled, and unit-tested, on every system the test suite runs on; `macos.rs` checks
//! at compile time that the flags below are the SDK's.
//!
//! FSEvents names paths, not watched directories, and coalesces the events of one path
//! within its latency into one whose flags say everything that happened, in no order:
//! whether a directory is there now is asked of the filesystem, not of the flags.

use super::Change;

/// The flags of an FSEvents event (`FSEventStreamEventFlags`, CoreServices' `FSEvents.h`).
pub(super) mod flag {
    /// Events below the path were coalesced or lost: look at it all again.
    pub const MUST_SCAN_SUBDIRS: u32 = 0x0000_0001;
    /// With `MUST_SCAN_SUBDIRS`: this client fell behind and events were dropped.
    pub const USER_DROPPED: u32 = 0x0000_0002;
    /// With `MUST_SCAN_SUBDIRS`: the kernel fell behind and events were dropped.
    pub const KERNEL_DROPPED: u32 = 0x0000_0004;
    /// The event ids wrapped around (the ids are not used here).
    pub const EVENT_IDS_WRAPPED: u32 = 0x0000_0008;
    /// The end of the history asked for (none is: the stream starts from now).
    pub const HISTORY_DONE: u32 = 0x0000_0010;
    /// The watched top itself, or a directory above it, was moved or removed.
    pub const ROOT_CHANGED: u32 = 0x0000_0020;
    /// A filesystem was mounted below the top.
    pub const MOUNT: u32 = 0x0000_0040;
    /// A filesystem was unmounted below the top.
    pub const UNMOUNT: u32 = 0x0000_0080;
    /// The item was created.
    pub const ITEM_CREATED: u32 = 0x0000_0100;
    /// The item was removed.
    pub const ITEM_REMOVED: u32 = 0x0000_0200;
    /// The item's inode metadata (times, mode) changed.
    pub const ITEM_INODE_META_MOD: u32 = 0x0000_0400;
    /// The item was renamed: this path is its old name or its new one.
    pub const ITEM_RENAMED: u32 = 0x0000_0800;
    /// The item's content changed.
    pub const ITEM_MODIFIED: u32 = 0x0000_1000;
    /// The item's Finder information changed.
    pub const ITEM_FINDER_INFO_MOD: u32 = 0x0000_2000;
    /// The item's owner changed.
    pub const ITEM_CHANGE_OWNER: u32 = 0x0000_4000;
    /// The item's extended attributes changed.
    pub const ITEM_XATTR_MOD: u32 = 0x0000_8000;
    /// The item is a directory.
    pub const ITEM_IS_DIR: u32 = 0x0002_0000;
}

/// Flags that say events were lost or the tree changed under the stream: the journal
/// cannot vouch for anything, and the next save walks.
const CANNOT_VOUCH: u32 = flag::MUST_SCAN_SUBDIRS
    | flag::USER_DROPPED
    | flag::KERNEL_DROPPED
    | flag::ROOT_CHANGED
    | flag::MOUNT
    | flag::UNMOUNT;

/// Flags that say more than "the attributes changed".
const CONTENT_OR_NAME: u32 =
    flag::ITEM_CREATED | flag::ITEM_REMOVED | flag::ITEM_RENAMED | flag::ITEM_MODIFIED;

/// Flags that say what happened to the item at the path. An event with none of them is
/// about a directory: "something changed in the directory at this path".
const ITEM: u32 = CONTENT_OR_NAME
    | flag::ITEM_INODE_META_MOD
    | flag::ITEM_FINDER_INFO_MOD
    | flag::ITEM_CHANGE_OWNER
    | flag::ITEM_XATTR_MOD;

/// An event, as the watcher takes it: the directory it names an entry of (a worktree
/// path, empty for the top), the entry (`None`: the top itself), and what happened.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Translated {
    pub dir: Vec<u8>,
    pub name: Option<Vec<u8>>,
    pub change: Change,
}

/// The event FSEvents reported on `path` with `flags`, for a stream on the canonical
/// worktree top `top`; `is_dir_now` says whether `path` is a directory now. `None` for
/// an event that says nothing of the worktree (ids wrapped, history done). A path that is
/// not `top` nor below it cannot be placed in the worktree: it reads as lost events.
pub(super) fn translate(
    top: &[u8],
    path: &[u8],
    flags: u32,
    is_dir_now: impl FnOnce() -> bool,
) -> Option<Translated> {
    let lost = Translated {
        dir: Vec::new(),
        name: None,
        change: Change {
            overflow: true,
            ..Change::default()
        },
    };
    if flags & CANNOT_VOUCH != 0 {
        return Some(lost);
    }
    let item = flags & ITEM != 0;
    if !item && flags & (flag::EVENT_IDS_WRAPPED | flag::HISTORY_DONE) != 0 {
        return None;
    }
    let path = path.strip_suffix(b"/").unwrap_or(path);
    let top = top.strip_suffix(b"/").unwrap_or(top);
    let Some(rest) = path.strip_prefix(top) else {
        return Some(lost);
    };
    let (dir, name) = match rest {
        [] => (Vec::new(), None),
        [b'/', rel @ ..] if !rel.is_empty() => match rel.iter().rposition(|&b| b == b'/') {
            Some(slash) => (rel[..slash].to_vec(), Some(rel[slash + 1..].to_vec())),
            None => (Vec::new(), Some(rel.to_vec())),
        },
        _ => return Some(lost),
    };
    let is_dir_now = is_dir_now();
    let renamed_or_removed = flags & (flag::ITEM_RENAMED | flag::ITEM_REMOVED) != 0;
    let change = if item {
        Change {
            is_dir: flags & flag::ITEM_IS_DIR != 0 || is_dir_now,
            self_gone: name.is_none() && renamed_or_removed,
            // What is at the path now decides: the flags of a coalesced event do not say
            // in which order its changes came. A directory that went, or came, or both,
            // has its watches dropped and made again.
            left: renamed_or_removed || !is_dir_now,
            arrived: is_dir_now && flags & (flag::ITEM_CREATED | flag::ITEM_RENAMED) != 0,
            attributes_only: flags & CONTENT_OR_NAME == 0,
            ..Change::default()
        }
    } else {
        // Something changed in that directory, unsaid what: it is looked at whole, and
        // its watches made again.
        Change {
            is_dir: true,
            left: true,
            arrived: is_dir_now,
            ..Change::default()
        }
    };
    Some(Translated { dir, name, change })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOP: &[u8] = b"/Users/me/project";

    fn at(path: &[u8], flags: u32, is_dir_now: bool) -> Option<Translated> {
        translate(TOP, path, flags, || is_dir_now)
    }

    #[test]
    fn a_path_is_split_into_its_directory_and_entry() {
        let file = at(b"/Users/me/project/src/main.rs", flag::ITEM_MODIFIED, false).unwrap();
        assert_eq!(
            (file.dir, file.name),
            (b"src".to_vec(), Some(b"main.rs".to_vec()))
        );
        assert!(!file.change.attributes_only && !file.change.is_dir);
        let top_entry = at(b"/Users/me/project/README", flag::ITEM_CREATED, false).unwrap();
        assert_eq!(
            (top_entry.dir, top_entry.name),
            (Vec::new(), Some(b"README".to_vec()))
        );
        let top = at(b"/Users/me/project/", flag::ITEM_INODE_META_MOD, true).unwrap();
        assert_eq!((top.dir, top.name), (Vec::new(), None));
    }

    #[test]
    fn lost_events_a_changed_top_and_paths_elsewhere_cannot_be_vouched_for() {
        for flags in [
            flag::MUST_SCAN_SUBDIRS,
            flag::MUST_SCAN_SUBDIRS | flag::USER_DROPPED,
            flag::MUST_SCAN_SUBDIRS | flag::KERNEL_DROPPED,
            flag::ROOT_CHANGED,
            flag::MOUNT,
            flag::UNMOUNT,
        ] {
            let event = at(b"/Users/me/project/src", flags, true).unwrap();
            assert!(event.change.overflow, "{flags:#x}");
        }
        for elsewhere in [
            &b"/Users/me/projects/x"[..],
            b"/Users/me",
            b"/private/tmp/x",
        ] {
            let event = at(elsewhere, flag::ITEM_MODIFIED, false).unwrap();
            assert!(event.change.overflow, "{elsewhere:?}");
        }
        assert_eq!(at(b"/", flag::HISTORY_DONE, true), None);
        assert_eq!(at(b"/", flag::EVENT_IDS_WRAPPED, true), None);
    }

    #[test]
    fn what_is_there_now_decides_whether_a_directory_came_or_went() {
        let made = at(
            b"/Users/me/project/new",
            flag::ITEM_CREATED | flag::ITEM_IS_DIR,
            true,
        )
        .unwrap()
        .change;
        assert!(made.is_dir && made.arrived && !made.left);
        // Made and removed again within the latency: coalesced into one event.
        let gone = at(
            b"/Users/me/project/new",
            flag::ITEM_CREATED | flag::ITEM_REMOVED | flag::ITEM_IS_DIR,
            false,
        )
        .unwrap()
        .change;
        assert!(gone.is_dir && gone.left && !gone.arrived);
        // Either side of a rename, the one that is a directory now came.
        let old = at(
            b"/Users/me/project/a",
            flag::ITEM_RENAMED | flag::ITEM_IS_DIR,
            false,
        )
        .unwrap()
        .change;
        let new = at(
            b"/Users/me/project/b",
            flag::ITEM_RENAMED | flag::ITEM_IS_DIR,
            true,
        )
        .unwrap()
        .change;
        assert!(old.left && !old.arrived && new.left && new.arrived);
        let touched = at(
            b"/Users/me/project/b",
            flag::ITEM_INODE_META_MOD | flag::ITEM_IS_DIR,
            true,
        )
        .unwrap()
        .change;
        assert!(touched.attributes_only && !touched.arrived);
        // "Something changed in this directory": looked at whole.
        let somewhere = at(b"/Users/me/project/b", 0, true).unwrap().change;
        assert!(somewhere.is_dir && somewhere.arrived && !somewhere.attributes_only);
        let top_gone = at(b"/Users/me/project", flag::ITEM_REMOVED, false).unwrap();
        assert!(top_gone.name.is_none() && top_gone.change.self_gone);
    }
}
