//! The scan of a walk of the whole worktree as the walk goes (docs/design.md, "Save",
//! memory): each entry the walk hands on, in path order, is matched with its stat cache
//! entry (the cache read in the same order alongside, [`StatCacheCursor`]), read on
//! another thread if the cache cannot vouch for it ([`Window`]), and put in its
//! directory's tree, which is made and sent to the writer (or kept, by a look) the
//! moment the walk is past that directory ([`TreeBuilder`]). The stat cache and
//! directory cache records go to the writer as they are found. Nothing is held per file
//! of the worktree: what the scan holds at the end is per change (the paths gone, the
//! trees a look found new, what a look read) and per directory (those whose recorded
//! listing the walk used).

use std::ops::ControlFlow;
use std::sync::Mutex;

use super::read::{CacheChange, ScanContext, Scanned, SentChunks};
use super::readers::{read_clock, scan_context, CacheUpdates, FileRules, Files, ScanMode, Shared};
use super::scan::{Handing, ReadLimit, Scan, ScanEnd, ScanRequest};
use super::stat_match::Cached;
use super::watched::Watched;
use super::window::Window;
use super::writer::{write_chunks, CachedFile, ChunkSender, ToWrite, Written};
use super::Warning;
use crate::git::repo::Repo;
use crate::model::dir_cache::{DirCacheUpdates, DirListing, DirListings};
use crate::model::tree::{Node, PendingTrees, Tree, TreeBuilder};
use crate::model::{SkipReason, SkippedFile};
use crate::progress::Progress;
use crate::storage::pack::OpenBlock;
use crate::storage::{Snapshot, StatCacheCursor, StoreRead, Transaction, TreeReader};
use crate::worktree::walk::{self, Kind, WalkEntry, WalkSink};
use crate::{Error, Result, TreeId};

/// Bytes a save's look holds at most to hand to the save's write path (the trees it
/// found new, the entries it read, the listings it would record, the paths gone): past
/// them it stops, and the write path walks afresh.
const LOOK_HOLDS: usize = 8 << 20;

/// How a streaming scan walks.
pub(super) struct Walking<'a> {
    /// A restore is recorded as interrupted: its temporary files may be about.
    pub(super) leftovers_possible: bool,
    /// The directory cache to use and renew, if any.
    pub(super) dir_cache: Option<&'a dyn DirListings>,
    /// The watcher's token to record once the save commits, when a watcher answered but
    /// could not vouch for the worktree: the files found with more than one link go with
    /// it.
    pub(super) watched: Option<Watched>,
    /// The store's generation the walk is made under.
    pub(super) generation: u64,
}

/// Scans the worktree as a walk hands it on, as `request` asks; `warnings` holds those
/// met before (a setting a look could not use).
pub(super) fn scan_walking<'s, S: StoreRead>(
    repo: &Repo,
    store: &'s S,
    read: &Snapshot<'_>,
    request: ScanRequest<'_, 's>,
    rules: &FileRules,
    walking: Walking<'_>,
    warnings: Vec<Warning>,
) -> Result<ScanEnd<'s>> {
    let mode = request.mode;
    let writer = match mode {
        ScanMode::Store { .. } => request.writer,
        ScanMode::HashOnly => None,
    };
    let chunks = read.chunks()?;
    let sent = SentChunks::default();
    let block = Mutex::new(OpenBlock::default());
    // 64 chunks or sealed blocks of at most about 256 KiB each, or records: the readers
    // and the scan wait for the writer rather than hold more.
    let (tx, rx) = crossbeam_channel::bounded::<ToWrite>(64);
    let to_writer = writer.map(|_| tx.clone());
    let context = scan_context(
        repo,
        store.hasher(),
        Shared {
            chunks: &chunks,
            sent: &sent,
            block: &block,
        },
        writer.map(|_| tx),
        mode,
        rules,
    );
    let buffers = Mutex::new(Vec::new());
    std::thread::scope(|threads| {
        let written = threads.spawn(|| match writer {
            Some(store) => write_chunks(store, rx),
            None => Ok((None, Written::default())),
        });
        let scanned = rayon::in_place_scope(|scope| {
            let like = Like::of(read, writer.is_some())?;
            let mut stream = Stream {
                repo,
                mode,
                rules,
                limit: request.read_limit,
                progress: request.progress,
                cursor: read.stat_cache_cursor()?,
                known: read.trees(None)?,
                window: Window::new(scope, &context, &buffers),
                builder: TreeBuilder::new(store.hasher()),
                to_writer: to_writer.clone(),
                like,
                found: Found::default(),
                kept: PendingTrees::new(),
                kept_bytes: 0,
                holding: request.read_limit.map(|_| Holding::default()),
                linked: walking.watched.as_ref().map(|_| Vec::new()),
                context: &context,
                clock_read: false,
                stopped: false,
            };
            if let Some(progress) = request.progress {
                progress.begin("Saving", 0, 0);
            }
            let walk = walk::walk_into(
                repo,
                walking.leftovers_possible,
                walking.dir_cache,
                &mut stream,
            );
            let finished = walk.and_then(|walk| stream.finish(walk));
            if let Some(progress) = request.progress {
                progress.end();
            }
            finished
        });
        // Every reader is done: the last block goes, then the channel closes.
        let last_block = context.send_last_block();
        drop(context);
        drop(to_writer);
        let written = {
            let _span = crate::trace::span("wait for the chunk writer");
            written
                .join()
                .unwrap_or_else(|_| Err(Error::Internal("the chunk writer panicked".into())))
        };
        // A failed writer (a full disk, say) is why the scan stopped too, if it did.
        let (txn, written) = written?;
        last_block?;
        let scanned = scanned?;
        Ok(match scanned {
            Streamed::Stopped => ScanEnd::TooMuchToRead,
            Streamed::Done(done) => ScanEnd::Scanned(Box::new(done.into_scan(
                warnings,
                txn,
                written,
                walking.watched,
                walking.generation,
            ))),
        })
    })
}

/// What the stream found, before the writer is done.
enum Streamed {
    /// A look stopped: too much to read, or to hold for the write path.
    Stopped,
    /// The worktree scanned.
    Done(Box<Done>),
}

/// A scan streamed to its end.
struct Done {
    root: TreeId,
    totals: crate::model::tree::Totals,
    found: Found,
    /// The trees the store lacks, kept by a look.
    trees: PendingTrees,
    walk: walk::Walk,
    holding: Option<Holding>,
    linked: Option<Vec<Vec<u8>>>,
}

impl Done {
    fn into_scan<'s>(
        self,
        mut warnings: Vec<Warning>,
        txn: Option<Transaction<'s>>,
        written: Written,
        watched: Option<Watched>,
        generation: u64,
    ) -> Scan<'s> {
        let Done {
            root,
            totals,
            found,
            trees,
            walk,
            holding,
            linked,
        } = self;
        // As a scan of a collected walk reports them: special files and files too large
        // (found before anything was read), then what the reads met, in path order.
        warnings.extend(
            walk.special
                .iter()
                .map(|path| Warning::NotAFile { path: path.clone() }),
        );
        warnings.extend(found.large_warnings);
        let found_warnings = warnings.len();
        warnings.extend(found.read_warnings);
        let mut skipped = found.large;
        let found_skipped = skipped.len();
        skipped.extend(found.read_skipped);
        let mut remove = found.removals;
        let mut dir_cache = DirCacheUpdates {
            put: Vec::new(),
            remove: walk.dir_cache.remove,
        };
        let handing = holding.map(|holding| {
            dir_cache.put = holding.listings;
            Handing {
                generation,
                reread: holding.reread,
                looked: holding.looked,
                found_warnings,
                found_skipped,
                stale: found.stale.clone(),
            }
        });
        remove.extend(found.stale);
        Scan {
            root,
            totals,
            trees,
            warnings,
            leftovers: walk.leftovers,
            skipped,
            cache_updates: CacheUpdates {
                put: written.cache_records,
                remove,
            },
            dir_cache,
            chunk_txn: txn,
            handing,
            watched: watched.map(|watched| watched.with_linked(linked.unwrap_or_default())),
        }
    }
}

/// What the stream gathers besides the trees it sends on: per change, never per file.
#[derive(Default)]
struct Found {
    /// The files larger than `checkpoint.maxFileSize`, and what is said of them.
    large: Vec<SkippedFile>,
    large_warnings: Vec<Warning>,
    /// What the reads met: files left out, and why.
    read_skipped: Vec<SkippedFile>,
    read_warnings: Vec<Warning>,
    /// Cached paths the walk did not find (or found too large).
    stale: Vec<Vec<u8>>,
    /// Paths read and not settled, or gone: their stat cache entries go.
    removals: Vec<Vec<u8>>,
    /// Files, symlinks and special files walked, for the trace.
    looked_at: u64,
}

/// What a save's look keeps to hand to the write path (see [`Handing`]), within
/// [`LOOK_HOLDS`] bytes.
#[derive(Default)]
struct Holding {
    reread: Vec<(WalkEntry, Option<Cached>)>,
    looked: Files,
    listings: Vec<(Vec<u8>, DirListing)>,
    bytes: usize,
}

/// The scan of a walk as it goes: the walk's sink.
struct Stream<'a, 'scope, 'c> {
    repo: &'a Repo,
    mode: ScanMode,
    rules: &'a FileRules,
    limit: Option<ReadLimit>,
    progress: Option<&'a dyn Progress>,
    cursor: StatCacheCursor,
    /// The store's trees, to send on only those it lacks.
    known: TreeReader<'a>,
    window: Window<'scope, 'c>,
    builder: TreeBuilder<'a>,
    /// Where trees and cache records go: a save's writer.
    to_writer: Option<ChunkSender>,
    /// The parent checkpoint's trees, in which each new tree finds its delta base.
    like: Option<Like<'a>>,
    found: Found,
    /// The trees the store lacks, when the scan keeps them (a look, which stores
    /// nothing), and their bytes.
    kept: PendingTrees,
    kept_bytes: usize,
    holding: Option<Holding>,
    /// The files found with more than one link, when a watcher's token is recorded.
    linked: Option<Vec<Vec<u8>>>,
    context: &'c ScanContext<'c>,
    /// Whether the clock was read (before the first file read).
    clock_read: bool,
    /// Whether the scan stopped at its read limit or what it may hold.
    stopped: bool,
}

impl WalkSink for Stream<'_, '_, '_> {
    fn entry(&mut self, entry: WalkEntry) -> Result<ControlFlow<()>> {
        self.found.looked_at += 1;
        if let Some(progress) = self.progress {
            progress.more(1, entry.stat.size);
        }
        let stale = &mut self.found.stale;
        let cached = self
            .cursor
            .entry(&entry.path, &mut |path| stale.push(path.to_vec()))?;
        if let Some(limit) = self.rules.max_file_size {
            if entry.kind == Kind::File && entry.stat.size > limit {
                // Its cache entry goes, so that it is read once it shrinks below.
                if cached.is_some() {
                    self.found.stale.push(entry.path.clone());
                }
                self.found.large_warnings.push(Warning::TooLarge {
                    path: entry.path.clone(),
                    size: entry.stat.size,
                    limit,
                });
                self.found.large.push(SkippedFile {
                    path: entry.path,
                    size: entry.stat.size,
                    reason: SkipReason::TooLarge,
                });
                return Ok(ControlFlow::Continue(()));
            }
        }
        let cached = match entry.kind {
            Kind::File => cached.map(|c| Cached::of(c, &entry)),
            Kind::Symlink => None,
        };
        let vouched = entry.kind == Kind::File && cached.as_ref().is_some_and(|c| c.vouches);
        if entry.kind == Kind::File && entry.many_links {
            if let Some(linked) = &mut self.linked {
                linked.push(entry.path.clone());
            }
        }
        if !vouched {
            if self.over_limit(&entry) {
                self.stopped = true;
                return Ok(ControlFlow::Break(()));
            }
            if entry.kind == Kind::File && !self.clock_read {
                crate::fault::point("save-walked");
                // Before the first read: every file read after it is judged by it.
                let mut warnings = Vec::new();
                let clock = read_clock(self.repo, self.mode, &mut warnings)?;
                self.context.clock_ns.get_or_init(|| clock);
                self.clock_read = true;
            }
            if let Some(holding) = &mut self.holding {
                holding.bytes += entry.path.len() + 128;
                holding.reread.push((entry.clone(), cached.clone()));
            }
        }
        let mut gather = Gather {
            found: &mut self.found,
            builder: &mut self.builder,
            looked: self.holding.as_mut().map(|h| &mut h.looked),
            trees: Trees {
                known: &self.known,
                to_writer: self.to_writer.as_ref(),
                like: self.like.as_mut(),
                kept: &mut self.kept,
                kept_bytes: &mut self.kept_bytes,
            },
            progress: self.progress,
        };
        self.window.push(entry, cached, &mut |entry, scanned| {
            gather.done(entry, scanned)
        })?;
        Ok(self.holds_too_much())
    }

    fn listing(&mut self, dir: Vec<u8>, listing: DirListing) -> Result<ControlFlow<()>> {
        match (&self.to_writer, &mut self.holding) {
            (Some(tx), _) => send(tx, ToWrite::Listing(dir, listing))?,
            (None, Some(holding)) => {
                holding.bytes += dir.len()
                    + 64
                    + (listing.entries.iter())
                        .map(|e| e.name.len() + 32)
                        .sum::<usize>();
                holding.listings.push((dir, listing));
            }
            // A look that hands nothing on records nothing.
            (None, None) => {}
        }
        Ok(self.holds_too_much())
    }
}

impl Stream<'_, '_, '_> {
    /// Counts `entry` (not vouched for) as one to read; whether that takes the scan past
    /// its read limit.
    fn over_limit(&mut self, entry: &WalkEntry) -> bool {
        let Some(limit) = &mut self.limit else {
            return false;
        };
        if entry.kind != Kind::File {
            return false;
        }
        let over = limit.files == 0 || limit.bytes < entry.stat.size;
        limit.files = limit.files.saturating_sub(1);
        limit.bytes = limit.bytes.saturating_sub(entry.stat.size);
        over
    }

    /// Whether a look holds more than it may hand on: it stops then.
    fn holds_too_much(&mut self) -> ControlFlow<()> {
        if too_much_held(self.holding.as_ref(), self.kept_bytes, &self.found) {
            self.stopped = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    /// The rest of the scan once the walk is done: the reads still under way, the trees
    /// still open, the cached paths past the last one walked.
    fn finish(mut self, walk: walk::Walk) -> Result<Streamed> {
        if self.stopped {
            return Ok(Streamed::Stopped);
        }
        let mut gather = Gather {
            found: &mut self.found,
            builder: &mut self.builder,
            looked: self.holding.as_mut().map(|h| &mut h.looked),
            trees: Trees {
                known: &self.known,
                to_writer: self.to_writer.as_ref(),
                like: self.like.as_mut(),
                kept: &mut self.kept,
                kept_bytes: &mut self.kept_bytes,
            },
            progress: self.progress,
        };
        self.window
            .finish(&mut |entry, scanned| gather.done(entry, scanned))?;
        let mut trees = Trees {
            known: &self.known,
            to_writer: self.to_writer.as_ref(),
            like: self.like.as_mut(),
            kept: &mut self.kept,
            kept_bytes: &mut self.kept_bytes,
        };
        let mut made = |dir: &[u8], id: TreeId, encoded: Vec<u8>| trees.made(dir, id, encoded);
        let (root, totals) = self.builder.finish(&mut made)?;
        let stale = &mut self.found.stale;
        self.cursor.rest(&mut |path| stale.push(path.to_vec()))?;
        let looked_at = self.found.looked_at + (walk.special.len() + walk.leftovers.len()) as u64;
        crate::trace::PATHS_LOOKED_AT.add(looked_at);
        if too_much_held(self.holding.as_ref(), self.kept_bytes, &self.found) {
            return Ok(Streamed::Stopped);
        }
        Ok(Streamed::Done(Box::new(Done {
            root,
            totals,
            found: self.found,
            trees: self.kept,
            walk,
            holding: self.holding,
            linked: self.linked,
        })))
    }
}

/// Whether a look holding `holding` besides `kept_bytes` of trees and the stale paths of
/// `found` holds more than it may hand on ([`LOOK_HOLDS`]); never a scan that hands
/// nothing on.
fn too_much_held(holding: Option<&Holding>, kept_bytes: usize, found: &Found) -> bool {
    holding.is_some_and(|h| h.bytes + kept_bytes + 64 * found.stale.len() > LOOK_HOLDS)
}

/// What takes each entry in its turn: its tree, its stat cache record, what it met.
struct Gather<'g, 'a> {
    found: &'g mut Found,
    builder: &'g mut TreeBuilder<'a>,
    /// What a look read, by path, to hand on.
    looked: Option<&'g mut Files>,
    trees: Trees<'g, 'a>,
    progress: Option<&'g dyn Progress>,
}

impl Gather<'_, '_> {
    /// Takes one entry's scan, in path order; the first failure (in path order) fails
    /// the scan.
    fn done(&mut self, entry: WalkEntry, scanned: Result<Scanned>) -> Result<()> {
        let Scanned {
            node,
            cache: change,
            rare,
        } = scanned?;
        if let Some(progress) = self.progress {
            progress.file_done(entry.stat.size);
        }
        let (changed, problem) = match rare {
            Some(rare) => (rare.changed, rare.problem),
            None => (None, None),
        };
        match (change, &node, self.trees.to_writer) {
            (
                CacheChange::Put,
                Some(Node::File { chunks, .. } | Node::FileWithMode { chunks, .. }),
                Some(tx),
            ) => send(
                tx,
                ToWrite::Cached(CachedFile {
                    path: entry.path.clone(),
                    stat: changed.unwrap_or(entry.stat),
                    chunks: chunks.clone(),
                }),
            )?,
            (CacheChange::Remove, _, _) => self.found.removals.push(entry.path.clone()),
            // Nothing to record for a file the cache vouched for, or in a look.
            _ => {}
        }
        if let Some(problem) = problem {
            self.found
                .read_skipped
                .extend(problem.skipped.map(|reason| SkippedFile {
                    path: entry.path.clone(),
                    size: entry.stat.size,
                    reason,
                }));
            self.found.read_warnings.push(problem.warning);
        }
        let read = !(entry.kind == Kind::File && change == CacheChange::Keep);
        let Some(node) = node else {
            return Ok(());
        };
        if let (true, Some(looked)) = (read, self.looked.as_deref_mut()) {
            looked.push((entry.path.clone(), node.clone()));
        }
        let trees = &mut self.trees;
        let mut made = |dir: &[u8], id: TreeId, encoded: Vec<u8>| trees.made(dir, id, encoded);
        self.builder.push(entry.path, node, &mut made)
    }
}

/// Where the trees the builder makes go.
struct Trees<'g, 'a> {
    /// The store's trees: one it has goes nowhere.
    known: &'g TreeReader<'a>,
    /// A save's writer, which stores the others.
    to_writer: Option<&'g ChunkSender>,
    /// The parent checkpoint's trees, for a save.
    like: Option<&'g mut Like<'a>>,
    /// The others, when there is no writer (a look keeps them), and their bytes.
    kept: &'g mut PendingTrees,
    kept_bytes: &'g mut usize,
}

impl Trees<'_, '_> {
    /// Takes a tree the builder made: the store has it already, or it goes to the
    /// writer (with its delta base), or a look keeps it.
    fn made(&mut self, dir: &[u8], id: TreeId, encoded: Vec<u8>) -> Result<()> {
        if self.known.contains(id)? {
            return Ok(());
        }
        match self.to_writer {
            Some(tx) => {
                let like = match self.like.as_deref_mut() {
                    Some(like) => like.at(dir),
                    None => None,
                };
                send(tx, ToWrite::Tree { id, encoded, like })
            }
            None => {
                *self.kept_bytes += encoded.len() + 64;
                self.kept.entry(id).or_insert(encoded);
                Ok(())
            }
        }
    }
}

/// Sends `item` to the writer.
fn send(tx: &ChunkSender, item: ToWrite) -> Result<()> {
    tx.send(item)
        .map_err(|_| Error::Internal("the chunk writer stopped".into()))
}

/// The trees of the parent checkpoint along the path of the last tree looked up: a new
/// tree's natural delta base is the tree at its path there (docs/design.md, "Trees").
struct Like<'a> {
    reader: TreeReader<'a>,
    /// The directories from the top down to the last one looked up: each one's name,
    /// and its tree in the parent, if it had one, read when first needed.
    path: Vec<(Vec<u8>, Option<TreeId>, Option<Tree>)>,
}

impl<'a> Like<'a> {
    /// The parent checkpoint's trees, for a save that writes trees and has a parent.
    fn of(read: &'a Snapshot<'_>, writes: bool) -> Result<Option<Like<'a>>> {
        let Some(current) = read.current()?.filter(|_| writes) else {
            return Ok(None);
        };
        let root = read.checkpoint(current)?.tree;
        Ok(Some(Like {
            reader: read.trees(None)?,
            path: vec![(Vec::new(), Some(root), None)],
        }))
    }

    /// The id of the tree at directory `dir` in the parent checkpoint, if it has one
    /// there that reads (one that does not is only a saving missed).
    fn at(&mut self, dir: &[u8]) -> Option<TreeId> {
        let names: Vec<&[u8]> = match dir.is_empty() {
            true => Vec::new(),
            false => dir.split(|&b| b == b'/').collect(),
        };
        // Keep the directories shared with the last path looked up.
        let mut depth = 1;
        while depth < self.path.len()
            && names.get(depth - 1) == Some(&self.path[depth].0.as_slice())
        {
            depth += 1;
        }
        self.path.truncate(depth);
        for name in &names[depth - 1..] {
            let parent = self.path.last_mut()?;
            if parent.2.is_none() {
                parent.2 = match parent.1 {
                    Some(id) => self.reader.get(id).ok(),
                    None => None,
                };
            }
            let id = (parent.2.as_ref()).and_then(|tree| {
                let at = tree
                    .entries
                    .binary_search_by(|e| e.name.as_slice().cmp(name))
                    .ok()?;
                match tree.entries[at].node {
                    Node::Dir { tree } => Some(tree),
                    _ => None,
                }
            });
            self.path.push((name.to_vec(), id, None));
        }
        self.path.last().and_then(|(_, id, _)| *id)
    }
}
