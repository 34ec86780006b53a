//! The selected row's record and diff, made off the UI thread. One builder thread makes
//! them as `show` does and hands them over piece by piece as they are made, so that the
//! UI shows the start of a big checkpoint's diff (a first save of 50 MB) at once, and
//! reads keys all the while. A newer selection cancels the build under way, which stops
//! at its next piece of text. The builder opens the store for one build and closes it at
//! its end; the UI's own reads and actions first [`Builder::pause`] it, since a process
//! opens the store once at a time.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use git_checkpoint::storage::Turn;

use super::app::Target;
use crate::commands::{show, Context};
use crate::ui::patch::Format;

/// The most lines of a detail made: a screen shows a few dozen, and a diff of millions
/// of lines would take its size several times over in memory as lines to draw. Past
/// them the build stops, and the detail says what prints all of it.
pub const MAX_LINES: usize = 20_000;

/// How long text waits in the builder before it is handed over, once a line is whole:
/// often enough that the screen follows, seldom enough that handing over costs nothing.
const HAND_OVER_EVERY: Duration = Duration::from_millis(30);

/// What the builder hands the UI.
pub enum Piece {
    /// More of the text, in whole lines, as `show` writes it (colour codes included).
    Text(Vec<u8>),
    /// The build's end.
    Done(Ending),
}

/// How a build ended.
pub enum Ending {
    /// All of it was made.
    Whole,
    /// It stopped at [`MAX_LINES`].
    Cut,
    /// A newer selection (or the UI's own read) cancelled it.
    Cancelled,
    /// It failed.
    Failed(anyhow::Error),
}

/// A piece of build `generation`.
struct Message {
    generation: u64,
    piece: Piece,
}

/// A build asked of the builder thread.
struct Job {
    generation: u64,
    target: Target,
    colour: bool,
    cancel: Arc<AtomicBool>,
}

/// The builder thread, as the UI sees it.
pub struct Builder {
    jobs: Sender<Job>,
    pieces: Receiver<Message>,
    /// The generation of the last build asked for.
    generation: u64,
    /// The last build asked for, while it runs: its cancel switch.
    running: Option<Arc<AtomicBool>>,
}

impl Builder {
    /// Starts the builder thread for the worktree of `context`. It is never joined: it
    /// only reads, so leaving it mid-build when the UI quits loses nothing.
    pub fn start(context: &Context) -> anyhow::Result<Builder> {
        // Its own context, quiet: a note that it waits for the store (a hook saving)
        // would be written over the UI.
        let own = Context {
            workspace: context.workspace.clone(),
            quiet: true,
            json: false,
        };
        let (jobs, job_queue) = mpsc::channel();
        let (out, pieces) = mpsc::channel();
        std::thread::Builder::new()
            .name("browse-detail".into())
            .spawn(move || serve(&own, &job_queue, &out))?;
        Ok(Builder {
            jobs,
            pieces,
            generation: 0,
            running: None,
        })
    }

    /// Starts making `target`'s detail, cancelling the build under way.
    pub fn build(&mut self, target: Target, colour: bool) {
        self.cancel();
        self.generation += 1;
        let cancel = Arc::new(AtomicBool::new(false));
        let job = Job {
            generation: self.generation,
            target,
            colour,
            cancel: Arc::clone(&cancel),
        };
        // A builder that is gone (it panicked, and the panic ends the process) cannot
        // be asked; the detail then stays as it is.
        if self.jobs.send(job).is_ok() {
            self.running = Some(cancel);
        }
    }

    /// Whether a build runs.
    pub fn busy(&self) -> bool {
        self.running.is_some()
    }

    /// The pieces of the last build asked for received since the last call, without
    /// waiting (those of builds cancelled since are dropped).
    pub fn received(&mut self) -> Vec<Piece> {
        let mut out = Vec::new();
        loop {
            match self.pieces.try_recv() {
                Ok(message) => self.take(message, &mut out),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return out,
            }
        }
    }

    /// Cancels the build under way, if any, and waits until the builder has closed the
    /// store, so that the UI can open it; true when a build was cut short (its detail
    /// is to be made again).
    pub fn pause(&mut self) -> bool {
        if !self.busy() {
            return false;
        }
        self.cancel();
        while self.busy() {
            match self.pieces.recv() {
                Ok(message) => self.take(message, &mut Vec::new()),
                Err(_) => self.running = None,
            }
        }
        true
    }

    fn cancel(&mut self) {
        if let Some(cancel) = &self.running {
            cancel.store(true, Ordering::Relaxed);
        }
    }

    /// Keeps `message` in `out` if it is of the last build asked for, and notes that
    /// build's end.
    fn take(&mut self, message: Message, out: &mut Vec<Piece>) {
        if message.generation != self.generation {
            return;
        }
        if matches!(message.piece, Piece::Done(_)) {
            self.running = None;
        }
        out.push(message.piece);
    }
}

/// The builder thread: makes each build asked for, until the UI is gone. Only the
/// newest of the builds waiting matters; the others were cancelled before they began.
fn serve(context: &Context, jobs: &Receiver<Job>, out: &Sender<Message>) {
    while let Ok(mut job) = jobs.recv() {
        while let Ok(newer) = jobs.try_recv() {
            job = newer;
        }
        let ending = build(context, &job, out);
        let done = Message {
            generation: job.generation,
            piece: Piece::Done(ending),
        };
        if out.send(done).is_err() {
            return;
        }
    }
}

/// Makes `job`'s detail as `show` does, handing it over to `out` as it is made.
fn build(context: &Context, job: &Job, out: &Sender<Message>) -> Ending {
    if job.cancel.load(Ordering::Relaxed) {
        return Ending::Cancelled;
    }
    let mut sink = Sink::new(job.generation, &job.cancel, out);
    let turn = job.target.turn_end.map(|end| Turn {
        start: job.target.id,
        end,
    });
    let made = show::with_resolved(context, job.target.id, turn, |shown| {
        show::write_shown(&mut sink, Format::Patch, job.colour, shown)
    });
    // The text made before a stop or an error is shown too.
    let handed = sink.hand_over();
    match (sink.stopped, made) {
        (Some(Stop::Cancelled), _) => Ending::Cancelled,
        (Some(Stop::Cut), _) => Ending::Cut,
        (None, Err(error)) => Ending::Failed(error),
        (None, Ok(())) => match handed {
            Ok(()) => Ending::Whole,
            Err(error) => Ending::Failed(error.into()),
        },
    }
}

/// Why a build stopped before its end.
#[derive(Clone, Copy)]
enum Stop {
    Cancelled,
    Cut,
}

/// Where `show` writes a build's text: kept until a line is whole and a moment has
/// passed (or `show` flushes, after the record), then handed over; a write fails once
/// the build is cancelled or has made [`MAX_LINES`], which ends `show` there.
struct Sink<'a> {
    generation: u64,
    cancel: &'a AtomicBool,
    out: &'a Sender<Message>,
    pending: Vec<u8>,
    lines: usize,
    handed_over: Instant,
    stopped: Option<Stop>,
}

impl<'a> Sink<'a> {
    /// A sink for build `generation`, nothing kept or handed over yet.
    fn new(generation: u64, cancel: &'a AtomicBool, out: &'a Sender<Message>) -> Sink<'a> {
        Sink {
            generation,
            cancel,
            out,
            pending: Vec::new(),
            lines: 0,
            handed_over: Instant::now(),
            stopped: None,
        }
    }

    /// Hands over the whole lines kept (all that is kept, at the end).
    fn hand_over(&mut self) -> io::Result<()> {
        let end = self
            .pending
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        if end == 0 {
            return Ok(());
        }
        let rest = self.pending.split_off(end);
        let text = std::mem::replace(&mut self.pending, rest);
        self.handed_over = Instant::now();
        let message = Message {
            generation: self.generation,
            piece: Piece::Text(text),
        };
        if self.out.send(message).is_err() {
            self.stopped = Some(Stop::Cancelled);
            return Err(io::Error::other("the detail is no longer wanted"));
        }
        git_checkpoint::fault::point("browse-detail-sent");
        Ok(())
    }

    fn stop(&mut self, why: Stop) -> io::Error {
        self.stopped = Some(why);
        io::Error::other(match why {
            Stop::Cancelled => "the detail is no longer wanted",
            Stop::Cut => "the detail is long enough",
        })
    }
}

impl Write for Sink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(why) = self.stopped {
            return Err(self.stop(why));
        }
        if self.cancel.load(Ordering::Relaxed) {
            return Err(self.stop(Stop::Cancelled));
        }
        let mut ended = 0;
        for (i, &b) in buf.iter().enumerate() {
            if b != b'\n' {
                continue;
            }
            ended += 1;
            self.lines += 1;
            if self.lines == MAX_LINES {
                // The last line that fits ends the detail.
                self.pending.extend_from_slice(&buf[..=i]);
                return Err(self.stop(Stop::Cut));
            }
        }
        self.pending.extend_from_slice(buf);
        if ended > 0 && self.handed_over.elapsed() >= HAND_OVER_EVERY {
            self.hand_over()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.hand_over()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text `sink` handed over, as lines.
    fn handed(pieces: &Receiver<Message>) -> Vec<String> {
        let mut text = Vec::new();
        while let Ok(message) = pieces.try_recv() {
            if let Piece::Text(bytes) = message.piece {
                text.extend(bytes);
            }
        }
        String::from_utf8(text)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn a_build_stops_at_its_last_line_and_hands_over_all_it_made() {
        let (out, pieces) = mpsc::channel();
        let cancel = AtomicBool::new(false);
        let mut sink = Sink::new(1, &cancel, &out);
        let mut n = 0;
        while n < 2 * MAX_LINES && writeln!(sink, "line {n}").is_ok() {
            n += 1;
        }
        assert_eq!(n + 1, MAX_LINES);
        assert!(matches!(sink.stopped, Some(Stop::Cut)));
        sink.hand_over().unwrap();
        let lines = handed(&pieces);
        assert_eq!(lines.len(), MAX_LINES);
        assert_eq!(lines.last().unwrap(), &format!("line {}", MAX_LINES - 1));
    }

    #[test]
    fn a_cancelled_build_stops_at_its_next_write() {
        let (out, pieces) = mpsc::channel();
        let cancel = AtomicBool::new(false);
        let mut sink = Sink::new(1, &cancel, &out);
        writeln!(sink, "the record").unwrap();
        sink.flush().unwrap();
        cancel.store(true, Ordering::Relaxed);
        assert!(writeln!(sink, "the diff").is_err());
        assert!(matches!(sink.stopped, Some(Stop::Cancelled)));
        assert_eq!(handed(&pieces), ["the record"]);
    }
}
