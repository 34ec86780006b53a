//! One `git cat-file` process for a whole import: objects asked for one at a time and
//! read back in turn, so an import of many commits starts two processes, not one per
//! object.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use crate::git::repo::Repo;
use crate::{Error, Result};

/// One `git cat-file --batch` (or `--batch-check`) for a whole import: objects are
/// asked for one at a time and read back in turn.
pub(crate) struct CatFile {
    child: Child,
    input: Option<BufWriter<ChildStdin>>,
    /// Where an opened object's content is read ([`CatFile::open`]).
    pub(super) output: BufReader<ChildStdout>,
}

impl CatFile {
    /// Starts `git cat-file --batch`.
    pub(crate) fn start(repo: &Repo) -> Result<CatFile> {
        Self::start_mode(repo, "--batch")
    }

    /// Starts `git cat-file` in `mode`: `--batch` for [`CatFile::get`] and
    /// [`CatFile::open`], `--batch-check` for [`CatFile::info`].
    pub(super) fn start_mode(repo: &Repo, mode: &str) -> Result<CatFile> {
        let cannot = |e: String| Error::Git {
            command: "cat-file".into(),
            message: e,
        };
        let mut child = Command::new("git")
            .arg("-C")
            .arg(&repo.root)
            .args(["cat-file", mode])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| cannot(format!("cannot run git: {e}")))?;
        let input = child.stdin.take().map(BufWriter::new);
        let output = child
            .stdout
            .take()
            .map(BufReader::new)
            .ok_or_else(|| cannot("no output".into()))?;
        Ok(CatFile {
            child,
            input,
            output,
        })
    }

    fn failed(why: String) -> Error {
        Error::Git {
            command: "cat-file".into(),
            message: why,
        }
    }

    /// Asks for `sha` and reads the answer's header: `None` when the repository does
    /// not have it, else its type and size.
    fn ask(&mut self, sha: &str) -> Result<Option<(String, u64)>> {
        let input = self
            .input
            .as_mut()
            .ok_or_else(|| Self::failed("its input is closed".into()))?;
        writeln!(input, "{sha}")
            .and_then(|_| input.flush())
            .map_err(|e| Self::failed(e.to_string()))?;
        let mut header = String::new();
        self.output
            .read_line(&mut header)
            .map_err(|e| Self::failed(e.to_string()))?;
        let mut parts = header.split_whitespace();
        if parts.clone().nth(1) == Some("missing") {
            return Ok(None);
        }
        let (Some(_), Some(found), Some(size)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Self::failed(format!("object {sha}: {}", header.trim())));
        };
        let size = size
            .parse()
            .map_err(|_| Self::failed(format!("object {sha}: size '{size}'")))?;
        Ok(Some((found.to_string(), size)))
    }

    /// The type and size of object `sha` (a `--batch-check` process); `None` when the
    /// repository does not have it.
    pub(super) fn info(&mut self, sha: &str) -> Result<Option<(String, u64)>> {
        self.ask(sha)
    }

    /// Starts reading object `sha`, which must be of type `kind`: returns its size, and
    /// its content is next on [`CatFile::output`], to be read whole and then followed by
    /// [`CatFile::end_object`].
    pub(super) fn open(&mut self, sha: &str, kind: &str) -> Result<u64> {
        match self.ask(sha)? {
            None => Err(Self::failed(format!("object {sha} is missing"))),
            Some((found, size)) if found != kind => {
                // Its content is still on the way: read past it, so the next answer
                // is read from its start.
                std::io::copy(&mut (&mut self.output).take(size + 1), &mut std::io::sink())
                    .map_err(|e| Self::failed(e.to_string()))?;
                Err(Self::failed(format!(
                    "object {sha} is a {found}, not a {kind}"
                )))
            }
            Some((_, size)) => Ok(size),
        }
    }

    /// Reads the line end that follows an object's content.
    pub(super) fn end_object(&mut self) -> Result<()> {
        let mut end = [0u8; 1];
        self.output
            .read_exact(&mut end)
            .map_err(|e| Self::failed(e.to_string()))
    }

    /// The content of object `sha`, which must be of type `kind`.
    pub(crate) fn get(&mut self, sha: &str, kind: &str) -> Result<Vec<u8>> {
        let size = self.open(sha, kind)?;
        let mut content = Vec::new();
        (&mut self.output)
            .take(size)
            .read_to_end(&mut content)
            .map_err(|e| Self::failed(e.to_string()))?;
        if content.len() as u64 != size {
            return Err(Self::failed(format!(
                "object {sha}: its content ended early"
            )));
        }
        self.end_object()?;
        Ok(content)
    }
}

impl Drop for CatFile {
    fn drop(&mut self) {
        drop(self.input.take());
        let _ = self.child.wait();
    }
}
