//! One sequence running against its own repository: edits, saves and the watcher, and
//! the checks of the store and of each new checkpoint against the model.

use super::model::*;
use super::*;

/// A discrepancy between the tool and the model.
pub(super) type Failure = String;

/// One sequence running against its own repository.
pub(super) struct Case {
    pub(super) repo: Repo,
    pub(super) model: Model,
    pub(super) watcher: Option<u32>,
    pub(super) log: Vec<String>,
    pub(super) outside: Snap,
    /// The output of the last command, for a failure found after it.
    pub(super) last: Option<Out>,
    /// Who wrote which session paths since the tip: what the next checkpoint on the
    /// line takes ([`Cp::writes`]).
    pub(super) pending: Vec<(Vec<u8>, Writer)>,
    /// Tool calls made so far, for their ids.
    pub(super) calls: usize,
    /// Each session's prompts so far (a number is never given twice).
    pub(super) prompted: Vec<u64>,
}

impl Drop for Case {
    fn drop(&mut self) {
        if let Some(pid) = self.watcher.take() {
            let _ = self.repo.run(&["watch", "--stop"]);
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

pub(super) fn clone_out(out: &Out) -> Out {
    Out {
        code: out.code,
        signal: out.signal,
        stdout: out.stdout.clone(),
        stderr: out.stderr.clone(),
        stdout_raw: out.stdout_raw.clone(),
        started: out.started,
        finished: out.finished,
    }
}

pub(super) fn args_os(args: &[&[u8]]) -> Vec<OsString> {
    args.iter()
        .map(|a| OsStr::from_bytes(a).to_os_string())
        .collect()
}

impl Case {
    pub(super) fn new() -> Case {
        let repo = Repo::new();
        repo.git(&["config", "checkpoint.maxFileSize", "64k"]);
        // A few tracked files, one of them matched by the ignore rules later.
        repo.write("a.txt", b"tracked\n");
        repo.write("b.log", b"tracked log\n");
        repo.write("d1/f", b"tracked f\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "start"]);
        std::fs::write(repo.git_dir().join("info/exclude"), b"").unwrap();
        let outside = repo.scratch("outside");
        std::fs::write(outside.join("keep.txt"), b"outside the worktree\n").unwrap();
        let outside = common::snapshot(&outside, false);
        Case {
            repo,
            model: Model {
                head: "main".into(),
                ..Model::default()
            },
            watcher: None,
            log: vec![
                "git init -q -b main repo && cd repo && git config checkpoint.maxFileSize 64k"
                    .into(),
                "mkdir d1 ../outside; echo tracked > a.txt; echo tracked log > b.log; echo tracked f > d1/f; echo outside the worktree > ../outside/keep.txt; git add -A; git commit -qm start; : > .git/info/exclude".into(),
            ],
            outside,
            last: None,
            pending: Vec::new(),
            calls: 0,
            prompted: vec![0; SESSIONS.len()],
        }
    }

    /// Adds checkpoint `id`, made from `captured` as a child of the tip (by `hook`, if a
    /// hook made it), to the model, with the session paths written since the tip.
    pub(super) fn record(&mut self, id: &str, captured: &Capture, hook: Option<Hook>) {
        let writes = std::mem::take(&mut self.pending);
        self.model.add(id, captured, hook, writes);
    }

    /// Adds `result`, the checkpoint a revert or a session restore saved its result as,
    /// to the model as the worktree captured now, on HEAD's branch, and checks it.
    pub(super) fn record_result(&mut self, result: &str) -> Result<(), Failure> {
        self.record(result, &capture(&self.repo), None);
        self.model
            .branches
            .insert(self.model.head.clone(), result.to_string());
        self.check_checkpoint(result)
    }

    pub(super) fn p(&self, rel: &[u8]) -> std::path::PathBuf {
        self.repo.dir.join(OsStr::from_bytes(rel))
    }

    pub(super) fn run(&mut self, args: &[&[u8]]) -> Out {
        self.run_with(args, &[])
    }

    /// [`Case::run`] with `env` set for the command.
    pub(super) fn run_with(&mut self, args: &[&[u8]], env: &[(&str, &str)]) -> Out {
        let shown: Vec<String> = args.iter().map(|a| sh(a)).collect();
        let vars: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
        self.log.push(format!(
            "{}git checkpoint {}",
            vars.concat(),
            shown.join(" ")
        ));
        let args = args_os(args);
        let mut cmd = self.repo.sb.bin_cmd(&self.repo.dir, &args);
        cmd.envs(env.iter().copied());
        let out = common::run_cmd(cmd, common::DEFAULT_TIMEOUT);
        common::assert_no_panic(&out, &format!("{args:?}"));
        // The ids a command printed, so that the steps can be followed by hand.
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(out.stdout.trim()) {
            let made: Vec<&str> = ["id", "safety_checkpoint"]
                .iter()
                .filter_map(|k| v.get(*k).and_then(|x| x.as_str()))
                .collect();
            if !made.is_empty() {
                if let Some(line) = self.log.last_mut() {
                    let _ = write!(line, "    # made {}", made.join(", "));
                }
            }
        }
        if out.code != 0 {
            if let Some(line) = self.log.last_mut() {
                let _ = write!(
                    line,
                    "    # exit {}: {}",
                    out.code,
                    out.stderr.lines().next().unwrap_or("")
                );
            }
        }
        self.last = Some(clone_out(&out));
        out
    }

    /// Removes whatever is at `rel` and every non-directory at its parents, then
    /// creates the parents.
    pub(super) fn clear_for(&self, rel: &[u8]) {
        for (i, &b) in rel.iter().enumerate() {
            if b == b'/' {
                let parent = self.p(&rel[..i]);
                if std::fs::symlink_metadata(&parent).is_ok_and(|m| !m.is_dir()) {
                    std::fs::remove_file(&parent).unwrap();
                }
            }
        }
        common::remove_any(&self.p(rel));
        if let Some(parent) = self.p(rel).parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
    }

    /// Applies an edit to the worktree; `Ok(false)` when it did not apply.
    pub(super) fn edit(&mut self, op: &Op) -> bool {
        match op {
            Op::Write {
                path,
                content,
                exec,
            } => {
                let rel = pick_path(*path, false);
                self.clear_for(&rel);
                common::write_file(&self.p(&rel), &content_of(*content), *exec);
                self.log.push(format!(
                    "rm -rf {0}; mkdir -p \"$(dirname {0})\"; printf 'v{content}\\n' > {0}; chmod {1} {0}",
                    sh(&rel),
                    if *exec { 755 } else { 644 }
                ));
            }
            Op::Big { path, extra } => {
                let rel = pick_path(*path, false);
                self.clear_for(&rel);
                let len = MAX_FILE_SIZE + 30_000 + usize::from(*extra);
                common::write_file(&self.p(&rel), &vec![b'B'; len], false);
                self.log.push(format!(
                    "rm -rf {0}; mkdir -p \"$(dirname {0})\"; head -c {len} /dev/zero | tr '\\0' B > {0}",
                    sh(&rel)
                ));
            }
            Op::Delete { path, parent } => {
                let rel = pick_path(*path, false);
                let rel = if *parent {
                    rel.split(|&b| b == b'/').next().unwrap_or(&rel).to_vec()
                } else {
                    rel
                };
                if std::fs::symlink_metadata(self.p(&rel)).is_err() {
                    return false;
                }
                common::remove_any(&self.p(&rel));
                self.log.push(format!("rm -rf {}", sh(&rel)));
            }
            Op::Symlink { path, target } => {
                let rel = pick_path(*path, false);
                let to = LINK_TARGETS[target % LINK_TARGETS.len()];
                self.clear_for(&rel);
                std::os::unix::fs::symlink(OsStr::from_bytes(to), self.p(&rel)).unwrap();
                self.log.push(format!(
                    "rm -rf {0}; mkdir -p \"$(dirname {0})\"; ln -s {1} {0}",
                    sh(&rel),
                    sh(to)
                ));
            }
            Op::Chmod { path } => {
                let rel = pick_path(*path, false);
                let full = self.p(&rel);
                let Ok(meta) = std::fs::symlink_metadata(&full) else {
                    return false;
                };
                if !meta.is_file() {
                    return false;
                }
                let exec = meta.mode() & 0o111 == 0;
                self.repo.set_exec(OsStr::from_bytes(&rel), exec);
                self.log.push(format!(
                    "chmod {} {}",
                    if exec { 755 } else { 644 },
                    sh(&rel)
                ));
            }
            Op::Hardlink { path, target } => {
                let (rel, to) = (pick_path(*path, false), pick_path(*target, false));
                if rel == to || !std::fs::symlink_metadata(self.p(&to)).is_ok_and(|m| m.is_file()) {
                    return false;
                }
                self.clear_for(&rel);
                std::fs::hard_link(self.p(&to), self.p(&rel)).unwrap();
                self.log.push(format!(
                    "rm -rf {0}; mkdir -p \"$(dirname {0})\"; ln {1} {0}",
                    sh(&rel),
                    sh(&to)
                ));
            }
            Op::LinkEdit {
                path,
                content,
                outside,
            } => {
                let rel = pick_path(*path, false);
                if !std::fs::symlink_metadata(self.p(&rel)).is_ok_and(|m| m.is_file()) {
                    return false;
                }
                let through = match outside {
                    true => {
                        let link = self.repo.scratch("links").join("other-name");
                        let _ = std::fs::remove_file(&link);
                        std::fs::hard_link(self.p(&rel), &link).unwrap();
                        link
                    }
                    false => self.p(&rel),
                };
                // In place: the same inode, so every name of the file shows it.
                std::fs::OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(&through)
                    .and_then(|mut f| std::io::Write::write_all(&mut f, &content_of(*content)))
                    .unwrap();
                if *outside {
                    std::fs::remove_file(&through).unwrap();
                    self.log.push(format!(
                        "ln {0} ../links/other-name; printf 'v{content}\\n' > ../links/other-name; rm ../links/other-name",
                        sh(&rel)
                    ));
                } else {
                    // `>` truncates in place, as the write above does.
                    self.log
                        .push(format!("printf 'v{content}\\n' > {}", sh(&rel)));
                }
            }
            Op::IgnoreAdd {
                file, rule, top, ..
            } => {
                let rel = IGNORE_FILES[file % IGNORE_FILES.len()];
                let full = self.p(rel);
                if !parents_are_dirs(&self.repo.dir, rel)
                    || std::fs::symlink_metadata(&full).is_ok_and(|m| !m.is_file())
                {
                    return false;
                }
                let mut text = std::fs::read(&full).unwrap_or_default();
                if !text.is_empty() && !text.ends_with(b"\n") {
                    text.push(b'\n');
                }
                let mut line = rule.clone();
                line.push(b'\n');
                if *top {
                    line.extend_from_slice(&text);
                    text = line;
                } else {
                    text.extend_from_slice(&line);
                }
                std::fs::write(&full, &text).unwrap();
                self.log.push(format!("{} > {}", printf_of(&text), sh(rel)));
            }
            Op::IgnoreRemove { file, line } => {
                let rel = IGNORE_FILES[file % IGNORE_FILES.len()];
                let full = self.p(rel);
                if !std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_file()) {
                    return false;
                }
                let text = std::fs::read(&full).unwrap();
                let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
                if lines.last() == Some(&&b""[..]) {
                    lines.pop();
                }
                if lines.is_empty() {
                    return false;
                }
                lines.remove(line % lines.len());
                let mut out = Vec::new();
                for l in lines {
                    out.extend_from_slice(l);
                    out.push(b'\n');
                }
                std::fs::write(&full, &out).unwrap();
                self.log.push(format!("{} > {}", printf_of(&out), sh(rel)));
            }
            _ => unreachable!("not an edit: {op:?}"),
        }
        true
    }

    /// Checks that the store holds exactly the model's checkpoints, branches and HEAD,
    /// that no restore is left interrupted, and that nothing outside changed.
    pub(super) fn check_store(&mut self) -> Result<(), Failure> {
        let outside = common::snapshot(&self.repo.sb.root.join("outside"), false);
        ensure!(
            outside == self.outside,
            "the directory outside the worktree changed:\n{}",
            common::snap_diff(&self.outside, &outside).join("\n")
        );
        let status = self.repo.run(&["status", "--json"]);
        ensure!(status.code == 0, "status failed\n{status}");
        let status = common::parse_json(&status, "status");
        ensure!(
            status["interrupted_restore"].is_null(),
            "status reports an interrupted restore: {status}"
        );
        if self.model.cps.is_empty() {
            return Ok(());
        }
        let log = self.repo.run(&["log", "--all", "--json"]);
        ensure!(log.code == 0, "log --all failed\n{log}");
        let listed: BTreeSet<String> = common::parse_json(&log, "log")
            .as_array()
            .unwrap()
            .iter()
            .filter_map(common::id_of)
            .collect();
        let modelled: BTreeSet<String> = self.model.cps.iter().map(|c| c.id.clone()).collect();
        ensure!(
            listed == modelled,
            "the store's checkpoints differ from the model's:\n  only in the store: {:?}\n  only in the model: {:?}",
            listed.difference(&modelled).collect::<Vec<_>>(),
            modelled.difference(&listed).collect::<Vec<_>>()
        );
        let branches = self.repo.json_of(&["branch"]);
        let mut found = BTreeMap::new();
        let mut head = None;
        for b in branches.as_array().unwrap() {
            let name = b["name"].as_str().unwrap().to_string();
            if b["current"].as_bool() == Some(true) {
                head = Some(name.clone());
            }
            found.insert(name, b["id"].as_str().unwrap().to_string());
        }
        ensure!(
            found == self.model.branches && head.as_deref() == Some(self.model.head.as_str()),
            "branches differ from the model's:\n  store: {found:?}, HEAD {head:?}\n  model: {:?}, HEAD {}",
            self.model.branches,
            self.model.head
        );
        Ok(())
    }

    /// Checks a checkpoint the tool just made against the model's copy: its file count
    /// and skipped files, and its tree through `diff <parent> <id>`.
    pub(super) fn check_checkpoint(&mut self, id: &str) -> Result<(), Failure> {
        let cp = self.model.get(id).clone();
        let show = self.repo.json_of(&["show", id]);
        let files = show["files"].as_u64();
        ensure!(
            files == Some(cp.tree.len() as u64),
            "checkpoint {id} holds {files:?} files, the model {}:\n{}",
            cp.tree.len(),
            show_snap(&cp.tree)
        );
        let skipped: BTreeSet<String> = show["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["path"].as_str().unwrap().to_string())
            .collect();
        let expected: BTreeSet<String> = cp
            .skipped
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        ensure!(
            skipped == expected,
            "checkpoint {id} records skipped {skipped:?}, the model {expected:?}"
        );
        let Some(parent) = cp.parent else {
            return Ok(());
        };
        let base = self.model.get(&parent).tree.clone();
        let diff = self.repo.json_of(&["diff", &parent, id]);
        let listed: BTreeSet<String> = diff["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["path"].as_str().unwrap().to_string())
            .collect();
        let expected = changed_paths(&base, &cp.tree);
        ensure!(
            listed == expected,
            "diff {parent} {id} lists {listed:?}, the model {expected:?}\nmodel tree:\n{}",
            show_snap(&cp.tree)
        );
        Ok(())
    }

    /// `save` (with the watcher if it runs): a checkpoint exactly when the capture
    /// differs from the tip.
    pub(super) fn save(&mut self) -> Result<(), Failure> {
        let captured = capture(&self.repo);
        let out = self.run(&[b"save", b"--json"]);
        ensure!(out.code == 0, "save failed\n{out}");
        let v = common::parse_json(&out, "save");
        let tip = self.model.tip().cloned();
        match common::id_of(&v) {
            Some(id) => {
                if let Some(tip) = &tip {
                    ensure!(
                        tip.tree != captured.tree,
                        "save made checkpoint {id} although nothing changed since {}",
                        tip.id
                    );
                }
                self.record(&id, &captured, None);
                self.model
                    .branches
                    .insert(self.model.head.clone(), id.clone());
                self.check_checkpoint(&id)?;
            }
            None => {
                let tip_tree = tip.as_ref().map(|t| t.tree.clone()).unwrap_or_default();
                ensure!(
                    tip_tree == captured.tree,
                    "save said nothing changed, but what git add -A sees differs from the tip:\n{}",
                    common::snap_diff(&tip_tree, &captured.tree).join("\n")
                );
            }
        }
        Ok(())
    }

    pub(super) fn watch(&mut self) -> Result<(), Failure> {
        match self.watcher.take() {
            Some(_) => {
                let out = self.run(&[b"watch", b"--stop"]);
                ensure!(out.code == 0, "watch --stop failed\n{out}");
            }
            None => {
                let out = self.run(&[b"watch", b"--daemon"]);
                ensure!(out.code == 0, "watch --daemon failed\n{out}");
                let pid = std::fs::read_to_string(self.repo.git_dir().join("checkpoint/watch/pid"))
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
                ensure!(pid.is_some(), "watch --daemon left no pid file\n{out}");
                self.watcher = pid;
            }
        }
        Ok(())
    }

    /// `git add -f` or `git rm --cached` of `PATHS[path]`, perhaps followed by a
    /// commit: the index changes, and with it what a save captures (a tracked file an
    /// ignore rule matches is captured), while no file in the worktree does.
    pub(super) fn git_index(&mut self, path: usize, remove: bool, commit: bool) {
        let rel = pick_path(path, false);
        let args: &[&str] = match remove {
            true => &["rm", "-q", "-r", "--cached", "--"],
            false => &["add", "-f", "--"],
        };
        self.log
            .push(format!("git {} {} || true", args.join(" "), sh(&rel)));
        let mut cmd = self.repo.sb.git_cmd(&self.repo.dir, args);
        cmd.arg(OsStr::from_bytes(&rel));
        // A path that is missing, untracked or beyond a symlink fails: the index stays.
        common::run_cmd(cmd, common::DEFAULT_TIMEOUT);
        if commit {
            self.log.push("git commit -q -m index || true".into());
            let cmd = self
                .repo
                .sb
                .git_cmd(&self.repo.dir, &["commit", "-q", "-m", "index"]);
            common::run_cmd(cmd, common::DEFAULT_TIMEOUT);
        }
    }

    pub(super) fn step(&mut self, op: &Op) -> Result<(), Failure> {
        match op {
            Op::GitIndex {
                path,
                remove,
                commit,
            } => {
                self.git_index(*path, *remove, *commit);
                return Ok(());
            }
            Op::Save => self.save()?,
            Op::Watch => self.watch()?,
            Op::Restore {
                target,
                no_save,
                paths,
            } => self.restore(*target, *no_save, paths)?,
            Op::Fork { target } => self.fork(*target)?,
            Op::Switch { branch } => self.switch(*branch)?,
            Op::Drop { target } => self.drop_checkpoint(*target)?,
            Op::Gc { keep } => self.gc(*keep)?,
            Op::AgentPrompt { session } => self.agent_prompt(*session)?,
            Op::AgentEdit {
                session,
                path,
                content,
                user,
            } => self.agent_edit(*session, *path, *content, *user)?,
            Op::AgentShell {
                session,
                writes,
                hooked_before,
                user,
            } => self.agent_shell(*session, writes, *hooked_before, *user)?,
            Op::OnlySession { session, prompt } => self.only_session(*session, *prompt)?,
            Op::Revert {
                what,
                strict,
                paths,
            } => self.revert(what, *strict, paths)?,
            Op::FlipRevert { path, content } => self.flip_revert(*path, *content)?,
            Op::Flip { path, content } => {
                self.flip(*path, *content);
                return Ok(());
            }
            Op::UserEdit { path, content } => {
                self.user_edit(*path, *content);
                return Ok(());
            }
            edit => {
                // Edits change no checkpoint; the store is checked after the next
                // command, which is cheaper than after every edit.
                self.edit(edit);
                return Ok(());
            }
        }
        self.check_store().map_err(|f| match &self.last {
            Some(out) => format!("{f}\n--- the last command ---\n{out}"),
            None => f,
        })
    }
}
