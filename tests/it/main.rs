//! The integration tests, one binary (`cargo test --test it`): each module drives the real
//! `git-checkpoint` binary against real git repositories in temporary directories. One
//! binary links once, where one per file linked the library 50 times over.
//!
//! A module is named by its area, so that a feature's tests are found from its name
//! (docs/design.md section 7); `cargo test --test it <prefix>` runs an area:
//!
//! - `agent_*`: one agent's hooks: install, uninstall, a simulated session;
//!   `agent_real_*`: the real agent programs (which `.ci/run` installs with npm) in a
//!   session driven by a scripted model on 127.0.0.1.
//! - `cli_*`: the program as a whole at the command line: exit codes, revisions, help,
//!   terminal, pager.
//! - `cmd_*`: one subcommand's behaviour (`cmd_<command>` or `cmd_<command>_<topic>`).
//! - `docs_*`: the documentation checked against the code.
//! - `prop_*`: properties over random or long runs: the model-based test, soak runs.
//! - `remote_*`: sharing through git: export, push, fetch, what a remote may do.
//! - `repo_*`: reading the repository as git does: discovery, config, ignore rules,
//!   worktrees.
//! - `roundtrip_*`: save then restore gives back exactly what was there.
//! - `safety_*`: what must never happen in a failing or hostile world: crashes, races,
//!   damaged or crafted stores, full disks.
//! - `store_*`: the store's format on disk: packs, solid blocks, deltas.
//!
//! Shared fixtures (the sandbox, `Repo`, the raw store layout) are in [`common`].

mod common;

mod agent_before_tool;
mod agent_claude;
mod agent_claude_session;
mod agent_cline;
mod agent_codex;
mod agent_copilot;
mod agent_cursor;
mod agent_gemini;
mod agent_hooks_reach;
mod agent_prompt_numbers;
mod agent_real_claude;
mod agent_real_codex;
mod agent_real_gemini;
mod agent_transcripts;

mod cli_exit_codes;
mod cli_first_hour;
mod cli_manual_help;
mod cli_pager_release;
mod cli_progress;
mod cli_revisions;
mod cli_terminal;
mod cli_wording;

mod cmd_attachment;
mod cmd_blame;
mod cmd_branch;
mod cmd_browse;
mod cmd_completions;
mod cmd_diff_vs_git;
mod cmd_doctor;
mod cmd_drop;
mod cmd_fork;
mod cmd_gc;
mod cmd_gc_time_zone;
mod cmd_gc_turns;
mod cmd_log;
mod cmd_log_graph;
mod cmd_log_query;
mod cmd_log_stream;
mod cmd_log_summary;
mod cmd_mcp;
mod cmd_mcp_answers;
mod cmd_mcp_escaping;
mod cmd_mcp_install;
mod cmd_mcp_scope;
mod cmd_mcp_undo;
mod cmd_pin;
mod cmd_restore;
mod cmd_restore_only_session;
mod cmd_revert;
mod cmd_revert_safety;
mod cmd_revert_saves;
mod cmd_save;
mod cmd_save_after_look;
mod cmd_save_memory;
mod cmd_save_unchanged;
mod cmd_sessions;
mod cmd_show_diff_turns;
mod cmd_stats;
mod cmd_status;
mod cmd_switch;
mod cmd_undo;
mod cmd_verify;
mod cmd_watch;
mod cmd_watch_auto;
mod cmd_watch_changes;
mod cmd_watch_delayed;
mod cmd_watch_git;
mod cmd_watch_limits;
mod cmd_watch_share;

mod docs_design;
mod docs_readme;

mod prop_model_based;
mod prop_soak;
mod prop_undo;

mod remote_hostile_fetch;
mod remote_sharing;
mod remote_trust;

mod repo_config;
mod repo_dir_cache;
mod repo_discovery;
mod repo_git_dirs;
mod repo_ignore_rules;
mod repo_linked_worktrees;
mod repo_name_normalization;

mod roundtrip_big_file;
mod roundtrip_permissions;
mod roundtrip_trees;

mod safety_agent_files;
mod safety_changing_files;
mod safety_concurrency;
mod safety_crafted_store;
mod safety_crash;
mod safety_damaged_store;
mod safety_full_disk;
mod safety_hostile_index;
mod safety_hostile_store;
mod safety_name_collisions;
mod safety_nothing_lost;
mod safety_op_log;
mod safety_output_escaping;
mod safety_read_commands;
mod safety_restore;
mod safety_restore_barrier;
mod safety_unreadable;
mod safety_unreadable_hooks;
mod safety_worktree_races;

mod store_deltas;
mod store_large_blocks;
mod store_packs;
mod store_solid_blocks;
mod store_tree_deltas;
