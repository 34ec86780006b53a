//! The shapes of the commands that share through git: `export`, `fetch` and `push`.

use serde::Serialize;

use git_checkpoint::remote::export::Promoted;
use git_checkpoint::remote::fetch::FetchReport;
use git_checkpoint::remote::push::PushReport;
use git_checkpoint::remote::remote_ref;
use git_checkpoint::CheckpointId;

use super::paths;

/// `export`.
#[derive(Debug, Serialize)]
pub struct ExportJson {
    /// The checkpoint exported.
    pub checkpoint: String,
    /// The new git commit.
    pub commit: String,
    /// Its parent commit, if it has one.
    pub parent: Option<String>,
    /// The git branch made at it, with `-b`.
    pub branch: Option<String>,
}

impl ExportJson {
    /// The JSON view of checkpoint `id` made commit `promoted`.
    pub fn new(id: CheckpointId, promoted: &Promoted) -> Self {
        ExportJson {
            checkpoint: id.hex(),
            commit: promoted.commit.clone(),
            parent: promoted.parent.clone(),
            branch: promoted.branch.clone(),
        }
    }
}

/// `fetch`.
#[derive(Debug, Serialize)]
pub struct FetchJson {
    /// The remote.
    pub remote: String,
    /// Checkpoints imported.
    pub imported: usize,
    /// Each branch fetched.
    pub branches: Vec<FetchedBranchJson>,
    /// Branches gone from the remote, forgotten here.
    pub removed: Vec<String>,
    /// Branches refused, kept as they were.
    pub refused: Vec<RefusedJson>,
    /// What the imported checkpoints left out, one line each.
    pub warnings: Vec<String>,
}

/// One branch `fetch` fetched.
#[derive(Debug, Serialize)]
pub struct FetchedBranchJson {
    /// `<remote>/<branch>`, as revisions name it.
    pub name: String,
    /// Its tip in this store.
    pub tip: String,
    /// For a tip imported from the remote: the id it had in the store it was saved in.
    pub original_id: Option<String>,
    /// Whether its tip moved (or it is new).
    pub changed: bool,
}

/// One branch `fetch` refused.
#[derive(Debug, Serialize)]
pub struct RefusedJson {
    /// `<remote>/<branch>`.
    pub name: String,
    /// Why.
    pub reason: String,
}

impl FetchJson {
    /// The JSON view of a fetch from `remote`; `origin` gives a tip's original id.
    pub fn new(
        remote: &str,
        report: &FetchReport,
        origin: impl Fn(CheckpointId) -> git_checkpoint::Result<Option<CheckpointId>>,
    ) -> anyhow::Result<Self> {
        let branches = report
            .branches
            .iter()
            .map(|b| {
                Ok(FetchedBranchJson {
                    name: b.name.clone(),
                    tip: b.tip.hex(),
                    original_id: origin(b.tip)?.map(CheckpointId::hex),
                    changed: b.changed,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(FetchJson {
            remote: remote.to_string(),
            imported: report.imported,
            branches,
            removed: report.removed.clone(),
            refused: report
                .refused
                .iter()
                .map(|(name, why)| RefusedJson {
                    name: name.clone(),
                    reason: why.clone(),
                })
                .collect(),
            warnings: report.warnings.clone(),
        })
    }
}

/// `push`.
#[derive(Debug, Serialize)]
pub struct PushJson {
    /// The remote.
    pub remote: String,
    /// Whether nothing was written, here or there.
    pub dry_run: bool,
    /// Checkpoints written as new commits (or that would be).
    pub exported: usize,
    /// Each branch asked for.
    pub branches: Vec<PushedBranchJson>,
    /// Files git does not track that the push publishes.
    pub untracked: Vec<String>,
    /// Attachments the push publishes.
    pub attachments: Vec<PushedAttachmentJson>,
}

/// One branch of `push`.
#[derive(Debug, Serialize)]
pub struct PushedBranchJson {
    /// The checkpoint branch.
    pub branch: String,
    /// The remote's ref for it.
    #[serde(rename = "ref")]
    pub remote_ref: String,
    /// The commit its tip is; null when a dry run finds it not yet exported.
    pub commit: Option<String>,
    /// `new`, `fast-forward`, `forced` or `up to date`.
    pub status: &'static str,
}

/// One attachment `push` publishes.
#[derive(Debug, Serialize)]
pub struct PushedAttachmentJson {
    /// The checkpoint it belongs to.
    pub checkpoint: String,
    /// Its name.
    pub name: String,
}

impl PushJson {
    /// The JSON view of a push to `remote`.
    pub fn new(remote: &str, dry_run: bool, report: &PushReport) -> Self {
        PushJson {
            remote: remote.to_string(),
            dry_run,
            exported: report.exported,
            branches: report
                .branches
                .iter()
                .map(|b| PushedBranchJson {
                    branch: b.branch.clone(),
                    remote_ref: remote_ref(&b.branch),
                    commit: b.commit.clone(),
                    status: b.status,
                })
                .collect(),
            untracked: paths(&report.untracked),
            attachments: report
                .attachments
                .iter()
                .map(|(id, name)| PushedAttachmentJson {
                    checkpoint: id.hex(),
                    name: name.clone(),
                })
                .collect(),
        }
    }
}
