//! The progress bar on stderr that the binary hands to long operations.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use git_checkpoint::progress::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// A stage that ends quicker than this draws nothing.
const SHOW_AFTER: Duration = Duration::from_millis(500);
/// How often a visible bar is redrawn even when no file finishes (a huge file).
const TICK: Duration = Duration::from_millis(100);

/// A progress bar on stderr (files, bytes, rate), drawn only once a stage has taken
/// longer than half a second, and cleared when it ends.
#[derive(Debug, Default)]
pub struct TerminalBar {
    stage: Mutex<Option<Stage>>,
}

#[derive(Debug)]
struct Stage {
    bar: ProgressBar,
    files_done: Arc<AtomicU64>,
    files_total: Arc<AtomicU64>,
    /// Dropped to tell the timer the stage is over.
    stop: Option<crossbeam_channel::Sender<()>>,
    timer: Option<JoinHandle<()>>,
}

impl Stage {
    fn close(mut self) {
        drop(self.stop.take());
        if let Some(timer) = self.timer.take() {
            let _ = timer.join();
        }
        self.bar.finish_and_clear();
    }
}

impl TerminalBar {
    /// A bar that draws nothing until a stage begins.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Progress for TerminalBar {
    fn begin(&self, stage: &str, files: u64, bytes: u64) {
        let files_done = Arc::new(AtomicU64::new(0));
        let files_total = Arc::new(AtomicU64::new(files));
        let counter = Arc::clone(&files_done);
        let total = Arc::clone(&files_total);
        let style = ProgressStyle::with_template(
            "{prefix} [{wide_bar}] {files} files, {binary_bytes}/{binary_total_bytes}, \
             {binary_bytes_per_sec}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "files",
            move |_: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(
                    out,
                    "{}/{}",
                    counter.load(Ordering::Relaxed),
                    total.load(Ordering::Relaxed)
                );
            },
        )
        .progress_chars("=> ");
        let bar = ProgressBar::with_draw_target(Some(bytes), ProgressDrawTarget::hidden())
            .with_style(style)
            .with_prefix(stage.to_string());
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let shown = bar.clone();
        let timer = std::thread::spawn(move || {
            if let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(SHOW_AFTER)
            {
                shown.set_draw_target(ProgressDrawTarget::stderr());
                shown.enable_steady_tick(TICK);
            }
        });
        let new = Stage {
            bar,
            files_done,
            files_total,
            stop: Some(stop),
            timer: Some(timer),
        };
        let old = match self.stage.lock() {
            Ok(mut slot) => slot.replace(new),
            Err(_) => Some(new),
        };
        if let Some(old) = old {
            old.close();
        }
    }

    fn file_done(&self, bytes: u64) {
        git_checkpoint::fault::point("progress-file");
        if let Ok(slot) = self.stage.lock() {
            if let Some(stage) = slot.as_ref() {
                stage.files_done.fetch_add(1, Ordering::Relaxed);
                stage.bar.inc(bytes);
            }
        }
    }

    fn more(&self, files: u64, bytes: u64) {
        if let Ok(slot) = self.stage.lock() {
            if let Some(stage) = slot.as_ref() {
                stage.files_total.fetch_add(files, Ordering::Relaxed);
                stage.bar.inc_length(bytes);
            }
        }
    }

    fn end(&self) {
        let stage = self.stage.lock().ok().and_then(|mut slot| slot.take());
        if let Some(stage) = stage {
            stage.close();
        }
    }
}

impl Drop for TerminalBar {
    fn drop(&mut self) {
        self.end();
    }
}
