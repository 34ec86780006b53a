//! One agent step in the terms every agent's hooks share, and the save a hook run makes
//! for it. Each agent's module only reads its own payload into an [`AgentEvent`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::hooks_log::{log_failure, log_note};
use super::mcp_entry::SERVER_NAME;
use super::notice;
use super::transcript::{self, Transcript};
use crate::format::size::human_bytes;
use crate::git::repo::Repo;
use crate::model::command_checkpoint::{is_command_result, MADE_KEY};
use crate::model::operation::Invocation;
use crate::model::session::{
    Session, BEFORE_TOOL_KIND, NAMED_PATHS_KEY, NAMED_PATH_KEY, TOOL_KIND,
};
use crate::model::{SkipReason, SkippedFile};
use crate::ops::gc::AutoGc;
use crate::ops::log_query::{PATHS_KEY, PATH_KEY};
use crate::ops::save::{self, AttachFile, SaveOptions, SaveOutcome, Warning};
use crate::ops::workspace::Workspace;
use crate::settings::DEFAULT_MAX_FILE_SIZE;
use crate::storage::{Snapshot, StoreRead};
use crate::{CheckpointId, Error, Result};

/// What kind of step an event is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Step {
    /// The user submitted a prompt: the checkpoint is the worktree just before the agent
    /// works on it.
    Prompt,
    /// A tool ran and may have changed files; `failed` when it reported failure.
    Tool {
        /// Whether the tool failed (it may still have changed files first).
        failed: bool,
    },
    /// A tool is about to run (an event a user hooked by hand, such as Claude Code's
    /// `PreToolUse`): the worktree just before it, which the checkpoint after the tool
    /// call's previous one normally shows already.
    BeforeTool,
    /// Anything else the hooks send.
    #[default]
    Other,
}

/// One agent step, as any agent's hook describes it.
#[derive(Clone, Debug, Default)]
pub struct AgentEvent {
    /// The agent (`claude`, …), recorded as `agent`.
    pub agent: &'static str,
    /// The conversation.
    pub session: Option<String>,
    /// The agent's own name for the event, recorded as `event`.
    pub event: Option<String>,
    /// What kind of step it is.
    pub step: Step,
    /// The prompt's text (prompts).
    pub prompt: Option<String>,
    /// The tool (tool steps).
    pub tool: Option<String>,
    /// The tool call's id.
    pub tool_use_id: Option<String>,
    /// The prompt's own id, where the agent gives one.
    pub prompt_id: Option<String>,
    /// The subagent that ran the tool.
    pub subagent: Option<String>,
    /// The files the tool call names, as the payload names them (absolute, or relative
    /// to `cwd`): a file tool's one file, every file an `apply_patch` patch changes, none
    /// for a shell command.
    pub files: Vec<String>,
    /// The command a shell tool ran.
    pub command: Option<String>,
    /// The directory the agent works in.
    pub cwd: Option<PathBuf>,
    /// The conversation's transcript file, as the payload names it.
    pub transcript: Option<String>,
    /// Where the agent keeps its transcripts: a transcript is read only from there.
    pub transcript_dirs: Vec<PathBuf>,
}

/// What a hook run adds to an event's own fields: where the session stands.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EventContext {
    /// The number of the prompt this event belongs to, counted per session from 1.
    pub prompt: Option<u64>,
    /// The transcript file's length when the event arrived: where in the conversation
    /// this checkpoint stands, since transcripts only grow (0 when the agent has not
    /// written its transcript yet).
    pub transcript_bytes: Option<u64>,
}

impl AgentEvent {
    /// The metadata a checkpoint saved for this event carries (see the README's agent
    /// section for each key). `root` is the worktree's top, against which the file a
    /// tool worked on is named.
    pub fn meta(&self, root: &Path, context: &EventContext) -> Vec<(String, String)> {
        let kind = match self.step {
            Step::Prompt => "prompt",
            Step::Tool { .. } => TOOL_KIND,
            Step::BeforeTool => BEFORE_TOOL_KIND,
            Step::Other => "other",
        };
        let failed = self.step == Step::Tool { failed: true };
        let named = self.files_in(root);
        // A call that names several files (a patch) lists them all; `named_path` keeps
        // the first, as records of one named file always had it.
        let all_named =
            (named.len() > 1).then(|| serde_json::Value::from(named.clone()).to_string());
        let fields: [(&str, Option<String>); 15] = [
            ("agent", Some(self.agent.to_string())),
            ("session", self.session.clone()),
            ("prompt", context.prompt.map(|n| n.to_string())),
            ("kind", Some(kind.to_string())),
            ("event", self.event.clone()),
            ("tool", self.tool.clone()),
            ("tool_use_id", self.tool_use_id.clone()),
            ("prompt_id", self.prompt_id.clone()),
            ("subagent", self.subagent.clone()),
            ("failed", failed.then(|| "true".to_string())),
            ("path", named.first().cloned()),
            // Kept as named: `path` above is rewritten from what the step changed.
            (NAMED_PATH_KEY, named.first().cloned()),
            (NAMED_PATHS_KEY, all_named),
            ("transcript", self.transcript.clone()),
            (
                "transcript_bytes",
                context.transcript_bytes.map(|n| n.to_string()),
            ),
        ];
        fields
            .into_iter()
            .filter_map(|(key, value)| Some((key.to_string(), value?)))
            .collect()
    }

    /// The files the tool call names that lie in the worktree, relative to its top
    /// `root`, in the order the payload names them.
    fn files_in(&self, root: &Path) -> Vec<String> {
        self.files
            .iter()
            .filter_map(|named| {
                let full = match &self.cwd {
                    Some(cwd) => cwd.join(named),
                    None => PathBuf::from(named),
                };
                let relative = full.strip_prefix(root).ok()?;
                Some(relative.to_string_lossy().into_owned())
            })
            .collect()
    }

    /// A one-line message for the checkpoint: the start of the prompt, or the tool and
    /// what it worked on. A file is named from the worktree's top `root`, as the `path`
    /// metadata names it, wherever in the worktree the agent runs.
    pub fn message(&self, root: &Path, context: &EventContext) -> String {
        let number = context.prompt.map(|n| format!(" {n}")).unwrap_or_default();
        let when = match self.step {
            Step::Prompt => {
                return match &self.prompt {
                    Some(prompt) => format!("before prompt{number}: {}", first_line(prompt)),
                    None => format!("before prompt{number}"),
                }
            }
            Step::BeforeTool => "before",
            Step::Tool { .. } | Step::Other => "after",
        };
        let Some(tool) = &self.tool else {
            return format!("{} {}", self.agent, self.event.as_deref().unwrap_or("hook"));
        };
        let failed = if self.step == (Step::Tool { failed: true }) {
            " (failed)"
        } else {
            ""
        };
        let what = (self.files_in(root).into_iter().next())
            .or_else(|| self.files.first().cloned())
            .or_else(|| self.command.clone());
        match what {
            Some(what) => format!("{when} {tool}{failed}: {}", first_line(&what)),
            None => format!("{when} {tool}{failed}"),
        }
    }

    /// Whether a hook run of an agent whose before-tool hook runs for every tool (it has
    /// no matcher: Cline, Copilot CLI) saves a checkpoint for this event. Every event
    /// does but a before-tool event of a tool that names the files it changes (the
    /// checkpoint after it names them, which is enough to count them as the session's)
    /// or of one of `read_only`, which change nothing: a checkpoint before those would
    /// only cost a save.
    pub(super) fn needs_checkpoint(&self, read_only: &[&str]) -> bool {
        let reads = self
            .tool
            .as_deref()
            .is_some_and(|tool| read_only.contains(&tool));
        self.step != Step::BeforeTool || (self.files.is_empty() && !reads)
    }

    /// Whether the event is a step of the agent's work (a prompt, a tool call before or
    /// after it runs) rather than a notice with nothing to name (Claude Code's `Stop`,
    /// `Notification`, a session's start, hooked by hand), which makes a checkpoint only
    /// when the worktree changed.
    pub fn is_step(&self) -> bool {
        !matches!(self.step, Step::Other) || self.tool.is_some()
    }
}

/// The first line of `text`, cut to about 72 characters.
fn first_line(text: &str) -> String {
    const MAX: usize = 72;
    let line = text.trim().lines().next().unwrap_or_default();
    if line.chars().count() > MAX {
        let cut: String = line.chars().take(MAX - 1).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// Of the workspace roots an agent names, the one holding `place` (a file the step
/// worked on, or the directory it ran in), else the first; `None` without roots. For the
/// agents that give workspace roots rather than a working directory (Cursor, Cline).
pub(super) fn workspace_root(roots: &[PathBuf], place: Option<&Path>) -> Option<PathBuf> {
    place
        .and_then(|place| roots.iter().find(|root| place.starts_with(root)))
        .or(roots.first())
        .cloned()
}

/// An agent's hook payload: the JSON it writes on a hook's stdin, with the fields a save
/// records. Each agent's module has one, and only reads it into an [`AgentEvent`].
pub(super) trait Payload: serde::de::DeserializeOwned {
    /// The event in the terms every agent's hooks share.
    fn into_event(self) -> AgentEvent;

    /// Parses the JSON `input` an agent wrote to a hook's stdin into an [`AgentEvent`].
    fn read(input: &[u8]) -> Result<AgentEvent> {
        serde_json::from_slice::<Self>(input)
            .map(Self::into_event)
            .map_err(|e| Error::InvalidArgument(format!("the hook input is not valid JSON: {e}")))
    }
}

/// What [`run`] did.
#[derive(Debug)]
pub struct Ran {
    /// The worktree, where one was found.
    pub workspace: Option<Workspace>,
    /// The checkpoint saved (`None` when the event needed none), or why the save failed.
    pub saved: Result<Option<CheckpointId>>,
    /// What to tell the user, once per session (`agents::notice`): files the save left
    /// out as unreadable, or that it could not save.
    pub notice: Option<String>,
}

/// Saves a checkpoint for `event` (or logs why its payload could not be read), in the
/// event's `cwd`, or `fallback_dir`. A failure after the worktree is found is also
/// appended to its hooks log. Files that cannot be read (root's, from a container) are
/// left out and recorded as skipped, so that one such file stops no checkpoint.
pub fn run(event: Result<AgentEvent>, fallback_dir: &Path) -> Ran {
    let dir = event
        .as_ref()
        .ok()
        .and_then(|e| e.cwd.clone())
        .unwrap_or_else(|| fallback_dir.to_path_buf());
    let mut workspace = match Workspace::discover(&dir, super::worktree_files()) {
        Ok(workspace) => workspace,
        // No worktree (hooks installed for every project, an agent working elsewhere):
        // nothing to save, and nothing to tell.
        Err(e) => {
            return Ran {
                workspace: None,
                saved: Err(e),
                notice: None,
            }
        }
    };
    if let Ok(event) = &event {
        // What the operation log names, should the save's automatic gc mark a record.
        workspace.invocation = Invocation::Hook {
            agent: event.agent.to_string(),
            event: event.event.clone().unwrap_or_default(),
        };
    }
    let repo = &workspace.repo;
    let (agent, session) = match &event {
        Ok(event) => (event.agent, event.session.clone()),
        Err(_) => ("", None),
    };
    let result = event.and_then(|event| save_for(&workspace, &event));
    let (saved, notice) = match result {
        Ok((saved, unreadable)) => {
            let notice = match unreadable.is_empty() {
                true => None,
                false => notice::unreadable(repo, agent, session.as_deref(), &unreadable),
            };
            (Ok(saved), notice)
        }
        Err(error) => {
            log_failure(repo, &error.to_string());
            let told = notice::failed(repo, agent, session.as_deref(), &error.to_string());
            (Err(error), told)
        }
    };
    Ran {
        workspace: Some(workspace),
        saved,
        notice,
    }
}

/// The first checkpoint `hooks install` saves.
#[derive(Debug)]
pub struct FirstCheckpoint {
    /// Its id.
    pub id: CheckpointId,
    /// What the save went on without (files left out as unreadable, too large, …).
    pub warnings: Vec<Warning>,
}

/// Saves the worktree as the hooks are installed: the state before the agent's first
/// prompt, always a checkpoint (also when nothing changed since the last one). Files that
/// cannot be read are left out and recorded as skipped, as every hook run's save does,
/// and are among the warnings.
pub fn save_before_first_prompt(repo: &Repo, agent: &str) -> Result<FirstCheckpoint> {
    let workspace = Workspace::new(repo.clone(), super::worktree_files());
    let store = workspace.open_store(&mut || {})?;
    let options = SaveOptions {
        meta: vec![
            ("agent".to_string(), agent.to_string()),
            ("event".to_string(), "install".to_string()),
        ],
        allow_empty: true,
        skip_unreadable: true,
        ..workspace.save_options("before the agent's first prompt (hooks installed)")
    };
    // The workspace's repository, which knows the agents' files to leave out.
    let report = save::save(&workspace.repo, &store, &options)?;
    let id = match report.outcome {
        SaveOutcome::Saved { id, .. } => id,
        SaveOutcome::Unchanged { current } => current,
    };
    Ok(FirstCheckpoint {
        id,
        warnings: report.warnings,
    })
}

/// The paths of `skipped` left out for being unreadable.
fn unreadable(skipped: &[SkippedFile]) -> Vec<Vec<u8>> {
    (skipped.iter())
        .filter(|file| file.reason == SkipReason::Unreadable)
        .map(|file| file.path.clone())
        .collect()
}

/// Saves the worktree for `event`. Every event makes a checkpoint, an empty child of the
/// current one when nothing changed (it costs a record, no content), so that every
/// prompt and tool call can be named. The store is waited for only
/// `checkpoint.hookLockTimeout`: a hook must not hold up the agent. Returns the
/// checkpoint and the files left out as unreadable.
fn save_for(
    workspace: &Workspace,
    event: &AgentEvent,
) -> Result<(Option<CheckpointId>, Vec<Vec<u8>>)> {
    let repo = &workspace.repo;
    let mut store = workspace.open_store_for_hook(&mut || {})?;
    let transcript = event
        .transcript
        .as_deref()
        .map(|named| transcript::open(&event.transcript_dirs, Path::new(named)));
    let context = EventContext {
        prompt: prompt_number(&store.snapshot()?, event)?,
        transcript_bytes: match &transcript {
            Some(Ok(Some(transcript))) => Some(transcript.len),
            // The agent's own transcript, not written yet: the conversation so far is
            // 0 bytes of it (Claude Code's first prompt).
            Some(Ok(None)) => Some(0),
            _ => None,
        },
    };
    let mut meta = event.meta(&repo.root, &context);
    let files_a_result = filed_result(&store.snapshot()?, event)?;
    if let Some((made, result_meta)) = &files_a_result {
        // The call's step is the result its command saved: named, and what it changed
        // is what the step changed.
        meta.retain(|(key, _)| key != PATH_KEY);
        meta.push((MADE_KEY.to_string(), made.hex()));
        meta.extend(result_meta.iter().cloned());
    }
    let options = SaveOptions {
        meta,
        // Every prompt and every tool call gets a checkpoint of its own, an empty one
        // when nothing changed, so each can be named (parallel tool calls included); a
        // notice that names no step only when something changed.
        allow_empty: event.is_step(),
        // A tool step's `path` comes from what it changed, so that a shell command's
        // edits are found too (the tool's input names a file only for file tools).
        record_changed_paths: matches!(event.step, Step::Tool { .. }) && files_a_result.is_none(),
        attach_files: transcript_to_keep(workspace, event, transcript)?
            .into_iter()
            .collect(),
        // One file the user cannot read (root's, from a container) must not stop every
        // checkpoint of the session: it is left out and recorded, and the user told.
        skip_unreadable: true,
        ..workspace.save_options(event.message(&repo.root, &context))
    };
    // Agents save hundreds of times a session: their saves keep `checkpoint.gc.*` too.
    let report = save::save_then_gc(repo, &mut store, &options)?;
    if let Some(AutoGc::Skipped(e) | AutoGc::Failed(e)) = &report.gc {
        log_failure(repo, &format!("automatic gc: {e}"));
    }
    let saved = match report.outcome {
        SaveOutcome::Saved { id, .. } => Some(id),
        SaveOutcome::Unchanged { .. } => None,
    };
    Ok((saved, unreadable(&report.skipped)))
}

/// A command's result a hook's checkpoint files under its tool call: its id, and its
/// `path` and `paths` metadata.
type FiledResult = (CheckpointId, Vec<(String, String)>);

/// The checkpoint a command of our MCP server saved of its own result (a revert, a
/// session-limited restore) that `event`, the step after that very call, files under the
/// session: the current checkpoint, when `event` is the after-tool step of our server's
/// `revert` or `restore` and the current checkpoint is such a result, made by no hook
/// and after every checkpoint of the session so far.
/// Returns it with its `path` and `paths`, which the step takes as its own. The hook's
/// checkpoint then becomes its child and names it ([`MADE_KEY`]), so that the call's step
/// spans the result: its turn, `<session>:<call>` and `restore --only-session` count
/// what the command did as the call's (docs/mcp.md, "The agent's own undo").
fn filed_result(snapshot: &Snapshot, event: &AgentEvent) -> Result<Option<FiledResult>> {
    let ours = event.tool.as_deref().and_then(our_mcp_tool);
    if !matches!(event.step, Step::Tool { .. }) || !matches!(ours, Some("revert" | "restore")) {
        return Ok(None);
    }
    let Some(current) = snapshot.current()? else {
        return Ok(None);
    };
    let record = snapshot.checkpoint(current)?;
    if !is_command_result(&record) {
        return Ok(None);
    }
    // Made by this call: after every checkpoint of the session so far. (A full restore
    // back to an older result makes it current too, and files nothing.) Only a call of
    // our revert or restore reads the records, so a hook's cost stays what it was.
    let session = event.session.as_deref();
    let newer = (snapshot.checkpoints()?.iter())
        .filter(|(_, own)| {
            own.meta
                .iter()
                .any(|(k, v)| k == "session" && Some(v.as_str()) == session)
        })
        .all(|(_, own)| own.time_ns < record.time_ns);
    if !newer {
        return Ok(None);
    }
    let changed = (record.meta.into_iter())
        .filter(|(key, _)| key == PATH_KEY || key == PATHS_KEY)
        .collect();
    Ok(Some((current, changed)))
}

/// The tool of our MCP server that `tool` names, as the agents that hook MCP calls name
/// them: `mcp__checkpoint__revert` (Claude Code, Codex), `mcp_checkpoint_revert`
/// (Gemini CLI).
fn our_mcp_tool(tool: &str) -> Option<&str> {
    let double = format!("mcp__{SERVER_NAME}__");
    let single = format!("mcp_{SERVER_NAME}_");
    tool.strip_prefix(double.as_str())
        .or_else(|| tool.strip_prefix(single.as_str()))
}

/// The transcript to attach to `event`'s checkpoint: with `checkpoint.keepTranscripts`,
/// at each prompt, the transcript `opened` if it is one ([`transcript::open`]) and no
/// larger than `checkpoint.maxFileSize` (its default when that is `none`). One left out
/// is logged; the checkpoint is made all the same. Transcripts grow by appending, so
/// content-defined chunks make each copy cost about the bytes added since the last.
fn transcript_to_keep(
    workspace: &Workspace,
    event: &AgentEvent,
    opened: Option<Result<Option<Transcript>>>,
) -> Result<Option<AttachFile>> {
    let (repo, settings) = (&workspace.repo, &workspace.settings);
    if event.step != Step::Prompt || !settings.keep_transcripts.get()? {
        return Ok(None);
    }
    let limit = settings
        .max_file_size
        .get()?
        .unwrap_or(DEFAULT_MAX_FILE_SIZE);
    Ok(match opened {
        None | Some(Ok(None)) => None,
        Some(Err(e)) => {
            log_note(repo, &format!("transcript left out of the checkpoint: {e}"));
            None
        }
        Some(Ok(Some(transcript))) if transcript.len > limit => {
            log_note(
                repo,
                &format!(
                    "transcript left out of the checkpoint: {} ({}) is larger than checkpoint.maxFileSize ({})",
                    event.transcript.as_deref().unwrap_or_default(),
                    human_bytes(transcript.len),
                    human_bytes(limit)
                ),
            );
            None
        }
        Some(Ok(Some(transcript))) => Some(AttachFile {
            name: transcript.name,
            file: Arc::new(transcript.file),
            len: transcript.len,
        }),
    })
}

/// The number of the prompt `event` belongs to: one more than the session's last prompt
/// number for a prompt, that number for any other step; `None` without a session (or
/// before any prompt of it). Read from the store's index of prompt numbers, so that a
/// hook's cost does not grow with the history; a store without one counts its records.
fn prompt_number(snapshot: &Snapshot, event: &AgentEvent) -> Result<Option<u64>> {
    let Some(session) = event.session.as_deref() else {
        return Ok(None);
    };
    let earlier = match snapshot.last_prompt(session)? {
        Some(last) => last,
        None => {
            let records = snapshot.checkpoints()?;
            let last = Session::last_prompt(&records, session).unwrap_or(0);
            last.max(Session::prompts_in(&records, session))
        }
    };
    Ok(match (event.step, earlier) {
        (Step::Prompt, n) => Some(n + 1),
        (_, 0) => None,
        (_, n) => Some(n),
    })
}
