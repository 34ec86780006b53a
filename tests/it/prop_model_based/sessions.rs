//! Agent sessions in the model: prompts and tool calls through Claude Code's hooks, the
//! user's edits between and during them, and `restore --only-session` checked against
//! who really wrote what, and against the hooks' record.

use serde_json::{json, Value};

use super::case::*;
use super::model::*;
use super::*;

/// The lossy text of each path, as `--json` prints paths.
fn texts<'a>(paths: impl IntoIterator<Item = &'a Vec<u8>>) -> Vec<String> {
    paths
        .into_iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

/// A JSON array of strings, as a vector.
fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The paths whose entries differ between two trees.
pub(super) fn changed(a: &Snap, b: &Snap) -> BTreeSet<Vec<u8>> {
    let mut out: BTreeSet<Vec<u8>> = a
        .iter()
        .filter(|(p, n)| b.get(*p) != Some(n))
        .map(|(p, _)| p.clone())
        .collect();
    out.extend(b.keys().filter(|p| !a.contains_key(*p)).cloned());
    out
}

impl Case {
    /// The user writes `SESSION_PATHS[path]`.
    pub(super) fn user_edit(&mut self, path: usize, content: u8) {
        let rel = SESSION_PATHS[path % SESSION_PATHS.len()];
        self.write_session_path(rel, content, Writer::User);
    }

    /// Writes `rel` as `by`; a write of the bytes it holds already changes nothing, and
    /// is no write of `by`'s.
    fn write_session_path(&mut self, rel: &[u8], content: u8, by: Writer) {
        let data = content_of(content);
        let same = std::fs::read(self.p(rel)).is_ok_and(|held| held == data);
        common::write_file(&self.p(rel), &data, false);
        self.log.push(format!(
            "mkdir -p \"$(dirname {0})\"; printf 'v{content}\\n' > {0}    # {by:?}",
            sh(rel)
        ));
        if !same {
            self.pending.push((rel.to_vec(), by));
        }
    }

    /// Sends one Claude Code hook event of `SESSIONS[session]`, and adds the checkpoint
    /// it must save (every step makes one) to the model.
    fn hook(&mut self, session: usize, mut event: Value, step: HookStep) -> Result<(), Failure> {
        event["session_id"] = json!(SESSIONS[session]);
        event["cwd"] = json!(self.repo.dir);
        let input = event.to_string();
        self.log.push(format!(
            "printf '%s' {} | git checkpoint hooks run claude",
            sh(input.as_bytes())
        ));
        let captured = capture(&self.repo);
        let tip = self.model.tip().map(|c| c.id.clone());
        let out = common::run_hook(&self.repo.sb, &self.repo.dir, input.as_bytes());
        ensure!(
            out.code == 0 && out.stderr.is_empty(),
            "the hook failed\n{out}"
        );
        let id = self.repo.current();
        ensure!(
            Some(&id) != tip.as_ref(),
            "the hook made no checkpoint; hooks.log:\n{}",
            std::fs::read_to_string(self.repo.git_dir().join("checkpoint/hooks.log"))
                .unwrap_or_default()
        );
        let prompt = self.prompted[session];
        self.record(
            &id,
            &captured,
            Some(Hook {
                session,
                step,
                prompt,
            }),
        );
        self.model
            .branches
            .insert(self.model.head.clone(), id.clone());
        self.check_checkpoint(&id)
    }

    /// The prompts of `SESSIONS[session]` still in the model: (number, checkpoint).
    pub(super) fn prompts_of(&self, session: usize) -> Vec<(u64, String)> {
        self.model
            .cps
            .iter()
            .filter_map(|c| match &c.hook {
                Some(Hook {
                    session: s,
                    step: HookStep::Prompt { number },
                    ..
                }) if *s == session => Some((*number, c.id.clone())),
                _ => None,
            })
            .collect()
    }

    pub(super) fn agent_prompt(&mut self, session: usize) -> Result<(), Failure> {
        let session = session % SESSIONS.len();
        let number = self.prompted[session] + 1;
        self.prompted[session] = number;
        let event =
            json!({"hook_event_name": "UserPromptSubmit", "prompt": format!("prompt {number}")});
        self.hook(session, event, HookStep::Prompt { number })
    }

    /// `SESSIONS[session]`, given its first prompt if it has had none: an agent's tool
    /// calls answer a prompt.
    fn prompted_session(&mut self, session: usize) -> Result<usize, Failure> {
        let session = session % SESSIONS.len();
        if self.prompted[session] == 0 {
            self.agent_prompt(session)?;
        }
        Ok(session)
    }

    /// A file tool's call: the agent writes the file it names; the user may write another
    /// session path meanwhile.
    pub(super) fn agent_edit(
        &mut self,
        session: usize,
        path: usize,
        content: u8,
        user: Option<(usize, u8)>,
    ) -> Result<(), Failure> {
        let session = self.prompted_session(session)?;
        let rel = SESSION_PATHS[path % SESSION_PATHS.len()];
        self.write_session_path(rel, content, Writer::Agent(session));
        if let Some((other, content)) = user {
            let other = SESSION_PATHS[other % SESSION_PATHS.len()];
            // The user's edit to the very file the call names cannot be told apart.
            if other != rel {
                self.write_session_path(other, content, Writer::User);
            }
        }
        self.calls += 1;
        let call = format!("toolu_m{}", self.calls);
        let event = json!({
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_use_id": call,
            "tool_input": {"file_path": self.p(rel)},
            "tool_response": {},
        });
        let named = Some(rel.to_vec());
        self.hook(session, event, HookStep::Tool { call, named })
    }

    /// A shell command's call, which names no file; bracketed by a `PreToolUse` hook or
    /// not. The user's edit comes before the bracket, or while an unbracketed call runs.
    pub(super) fn agent_shell(
        &mut self,
        session: usize,
        writes: &[(usize, u8)],
        hooked_before: bool,
        user: Option<(usize, u8)>,
    ) -> Result<(), Failure> {
        let session = self.prompted_session(session)?;
        self.calls += 1;
        let call = format!("toolu_m{}", self.calls);
        let input = json!({"command": "make"});
        if hooked_before {
            if let Some((path, content)) = user {
                self.user_edit(path, content);
            }
            let event = json!({
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_use_id": call,
                "tool_input": input,
            });
            let step = HookStep::BeforeTool { call: call.clone() };
            self.hook(session, event, step)?;
        }
        for &(path, content) in writes {
            let rel = SESSION_PATHS[path % SESSION_PATHS.len()];
            self.write_session_path(rel, content, Writer::Agent(session));
        }
        if !hooked_before {
            if let Some((path, content)) = user {
                self.user_edit(path, content);
            }
        }
        let event = json!({
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": call,
            "tool_input": input,
            "tool_response": {},
        });
        self.hook(session, event, HookStep::Tool { call, named: None })
    }

    /// `restore <session>:prompt<N> --only-session`, its dry run first. Checked: the dry
    /// run says and exits as the real run; the paths the hooks' record makes the
    /// session's (named by a call, or bracketed by its hooks), and no other, go back,
    /// the rest listed; no path goes back whose last writer since the target is not
    /// the session; nothing but those paths changes.
    pub(super) fn only_session(&mut self, session: usize, prompt: usize) -> Result<(), Failure> {
        // The session named, or else the other one, if it has prompts left.
        let Some((session, prompts)) = (0..SESSIONS.len())
            .map(|i| (session + i) % SESSIONS.len())
            .map(|s| (s, self.prompts_of(s)))
            .find(|(_, prompts)| !prompts.is_empty())
        else {
            return Ok(());
        };
        let Some(tip) = self.model.tip().cloned() else {
            return Ok(());
        };
        let (number, target) = prompts[prompt % prompts.len()].clone();
        let rev = format!("{}:prompt{number}", &SESSIONS[session][..8]);
        let before = leaves(&self.repo);
        let checkpoints = self.repo.log_ids(true);
        let dry = self.run(&[
            b"restore",
            rev.as_bytes(),
            b"--only-session",
            b"--dry-run",
            b"--json",
        ]);
        ensure!(
            leaves(&self.repo) == before,
            "a dry run changed the worktree\n{dry}"
        );
        let line = self.model.line(&tip.id);
        let Some(at) = line.iter().position(|c| c.id == target) else {
            let out = self.run(&[b"restore", rev.as_bytes(), b"--only-session"]);
            for out in [&dry, &out] {
                ensure!(
                    out.code == 1 && out.stderr.contains("is not an ancestor"),
                    "{rev} is off the current line\n{out}"
                );
            }
            ensure!(
                leaves(&self.repo) == before,
                "a refusal changed the worktree"
            );
            return Ok(());
        };
        // Oldest first: the checkpoints since the target, on the line.
        let since: Vec<Cp> = line[..at].iter().rev().map(|c| (*c).clone()).collect();
        let target = self.model.get(&target).clone();
        let captured = capture(&self.repo);
        let Attribution {
            by_session,
            unsure,
            others,
        } = attribute(&self.model, &since, session, &tip, &captured);
        let candidates: BTreeSet<Vec<u8>> = by_session.union(&unsure).cloned().collect();
        let differs = |p: &Vec<u8>| target.tree.get(p) != captured.tree.get(p);
        let conflicts: Vec<Vec<u8>> = candidates
            .iter()
            .filter(|p| differs(p) && (others.contains(*p) || unsure.contains(*p)))
            .cloned()
            .collect();
        let paths: Vec<Vec<u8>> = by_session
            .iter()
            .filter(|p| differs(p) && !conflicts.contains(p))
            .cloned()
            .collect();
        let expected = match paths.is_empty() {
            true => Some(before.clone()),
            false => expected_restore(&before, &captured, &target, &paths),
        };

        let out = self.run(&[b"restore", rev.as_bytes(), b"--only-session", b"--json"]);
        let after = leaves(&self.repo);
        ensure!(
            dry.code == out.code,
            "the dry run exited {} and the restore {}\n--- dry run ---\n{dry}\n--- restore ---\n{out}",
            dry.code,
            out.code
        );
        let Some(expected) = expected else {
            ensure!(
                out.code == 1 && after == before && self.repo.log_ids(true) == checkpoints,
                "the restore of {} should be refused, changing nothing (something no checkpoint holds is in the way)\n{out}",
                texts(&paths).join(", ")
            );
            return Ok(());
        };
        ensure!(
            out.code == i32::from(!conflicts.is_empty()),
            "conflicts {:?} should make the exit status {}\n{out}",
            texts(&conflicts),
            i32::from(!conflicts.is_empty())
        );
        let (v, d) = (
            common::parse_json(&out, "restore --only-session"),
            common::parse_json(&dry, "restore --only-session --dry-run"),
        );
        let listed = |v: &Value| -> Vec<String> {
            v["conflicts"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|c| c["path"].as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        for (key, wanted) in [
            ("changed_by_session", texts(&by_session)),
            ("conflicts", texts(&conflicts)),
        ] {
            let (real, dry) = match key {
                "conflicts" => (listed(&v), listed(&d)),
                _ => (strings(&v[key]), strings(&d[key])),
            };
            ensure!(
                real == wanted && dry == wanted,
                "{key}: the restore says {real:?}, its dry run {dry:?}, the model {wanted:?}\n{out}"
            );
        }
        for key in ["written", "deleted"] {
            ensure!(
                strings(&v[key]) == strings(&d[key]),
                "{key}: the restore says {:?}, its dry run {:?}",
                strings(&v[key]),
                strings(&d[key])
            );
        }
        ensure!(
            after == expected,
            "after restore {rev} --only-session the worktree differs from the model:\n{}\n{out}",
            common::snap_diff(&expected, &after).join("\n")
        );
        // The truth: a path goes back only if the session wrote it last. Writes that
        // left a path as it was (the user wrote the agent's bytes back) change nothing any
        // checkpoint or the worktree can show: they count where they changed the path
        // between two checkpoints, or since the last one.
        let mut last: BTreeMap<Vec<u8>, Writer> = BTreeMap::new();
        let shown = |from: Option<&Snap>, to: &Snap, path: &Vec<u8>| {
            from.and_then(|from| from.get(path)) != to.get(path)
        };
        for cp in &since {
            let parent = cp.parent.as_ref().map(|p| &self.model.get(p).tree);
            for (path, by) in cp.writes.iter().filter(|(p, _)| shown(parent, &cp.tree, p)) {
                last.insert(path.clone(), *by);
            }
        }
        for (path, by) in
            (self.pending.iter()).filter(|(p, _)| shown(Some(&tip.tree), &captured.tree, p))
        {
            last.insert(path.clone(), *by);
        }
        for path in changed(&before, &after) {
            ensure!(
                last.get(&path) == Some(&Writer::Agent(session)),
                "restore {rev} --only-session put back {} whose last writer since the target is {:?}\n{out}",
                String::from_utf8_lossy(&path),
                last.get(&path)
            );
        }
        let mut made: Vec<&str> = Vec::new();
        if let Some(safety) = v["safety_checkpoint"].as_str() {
            // HEAD's branch takes it, then the restore's own checkpoint.
            self.record(safety, &captured, None);
            self.model
                .branches
                .insert(self.model.head.clone(), safety.to_string());
            self.check_checkpoint(safety)?;
            made.push(safety);
        }
        let written = session_paths_changed(&before, &after);
        self.pending
            .extend(written.into_iter().map(|p| (p, Writer::User)));
        // Whatever it wrote is saved as a checkpoint of its own.
        let wrote = !strings(&v["written"]).is_empty() || !strings(&v["deleted"]).is_empty();
        match v["checkpoint"].as_str() {
            Some(result) => {
                ensure!(
                    wrote,
                    "restore {rev} --only-session wrote nothing, yet saved {result}\n{out}"
                );
                self.record_result(result)?;
                made.push(result);
            }
            None => ensure!(
                !wrote,
                "restore {rev} --only-session wrote, but saved no checkpoint\n{out}"
            ),
        }
        // As sets: `log --all` may order the lines of several branches anew.
        let mut now = self.repo.log_ids(true);
        now.retain(|id| !made.contains(&id.as_str()));
        let as_set = |ids: &[String]| ids.iter().cloned().collect::<BTreeSet<String>>();
        ensure!(
            as_set(&now) == as_set(&checkpoints),
            "restore {rev} --only-session made checkpoints it does not report\n{out}"
        );
        Ok(())
    }
}

/// What `restore --only-session` attributes to whom.
struct Attribution {
    /// The paths the session surely changed at its tool calls since the target.
    by_session: BTreeSet<Vec<u8>>,
    /// Those its calls changed unsurely (not named, not bracketed by its hooks).
    unsure: BTreeSet<Vec<u8>>,
    /// Those anyone else changed, unsaved changes included.
    others: BTreeSet<Vec<u8>>,
}

/// What `restore --only-session` of `session` attributes to whom, from the hooks' record
/// in the model and its trees: the checkpoints `since` the target (oldest first), and
/// the unsaved changes (`captured` against the `tip`).
fn attribute(
    model: &Model,
    since: &[Cp],
    session: usize,
    tip: &Cp,
    captured: &Capture,
) -> Attribution {
    let mut seen = Attribution {
        by_session: BTreeSet::new(),
        unsure: BTreeSet::new(),
        others: BTreeSet::new(),
    };
    for cp in since {
        let parent = cp.parent.as_ref().map(|p| model.get(p));
        let paths = changed(
            &parent.map(|p| p.tree.clone()).unwrap_or_default(),
            &cp.tree,
        );
        match &cp.hook {
            Some(Hook {
                session: s,
                step: HookStep::Tool { call, named },
                prompt,
            }) if *s == session => {
                let before = Some(Hook {
                    session,
                    step: HookStep::BeforeTool { call: call.clone() },
                    prompt: *prompt,
                });
                let bracketed = parent.is_some_and(|p| p.hook == before);
                for path in paths {
                    if bracketed || named.as_ref() == Some(&path) {
                        seen.by_session.insert(path);
                    } else {
                        seen.unsure.insert(path);
                    }
                }
            }
            _ => seen.others.extend(paths),
        }
    }
    seen.others.extend(changed(&tip.tree, &captured.tree));
    seen
}
