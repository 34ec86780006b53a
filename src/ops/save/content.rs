//! Content that is not a worktree file: attachments (files named on the command line,
//! an agent's transcript) and fetched blobs. Stored whole, never as deltas, through the
//! same packs as file content, in the transaction that records them.

use std::io::{Read, Seek};

use super::{AttachFile, SaveOptions};
use crate::format::chunk::{self, Hasher};
use crate::model::Attachment;
use crate::storage::{ChunkSink, Packer, Transaction};
use crate::{ChunkId, Error, Result};

/// Files up to this size are read whole into a reused buffer; larger ones are streamed.
pub(super) const READ_WHOLE_LIMIT: u64 = 8 << 20;

/// Reads the files to attach (`options.attach`), each named by its file name; two with
/// one name, among them and the open files of `options.attach_files`, are refused.
pub(super) fn read_attachments(options: &SaveOptions) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::with_capacity(options.attach.len());
    for path in &options.attach {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "cannot attach '{}': it names no file",
                    path.display()
                ))
            })?;
        if out.iter().any(|(taken, _)| *taken == name) {
            return Err(Error::InvalidArgument(format!(
                "two attachments would be named '{name}'"
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        out.push((name, bytes));
    }
    if let Some(twice) = options
        .attach_files
        .iter()
        .find(|file| out.iter().any(|(name, _)| *name == file.name))
    {
        return Err(Error::InvalidArgument(format!(
            "two attachments would be named '{}'",
            twice.name
        )));
    }
    Ok(out)
}

/// Stores attachment content as chunks, through the same packs as file content, and
/// returns the records.
pub(super) fn store_attachments(
    txn: &Transaction,
    hasher: &Hasher,
    attachments: Vec<(String, Vec<u8>)>,
    level: i32,
) -> Result<Vec<Attachment>> {
    txn.pack_chunks(&mut Packer::default(), |sink| {
        let mut out = Vec::with_capacity(attachments.len());
        let mut buf = Vec::new();
        for (name, bytes) in attachments {
            let failed = |e: std::io::Error| Error::io(&name, e);
            let len = bytes.len() as u64;
            let (size, chunks) =
                store_content(sink, hasher, bytes.as_slice(), len, level, &mut buf, failed)?;
            out.push(Attachment { name, size, chunks });
        }
        Ok(out)
    })
}

/// Stores the files of `files` as [`store_attachments`] stores content, each read from
/// its start, at most its `len` bytes.
pub(super) fn store_attachment_files(
    txn: &Transaction,
    hasher: &Hasher,
    files: &[AttachFile],
    level: i32,
) -> Result<Vec<Attachment>> {
    if files.is_empty() {
        return Ok(Vec::new());
    }
    txn.pack_chunks(&mut Packer::default(), |sink| {
        let mut out = Vec::with_capacity(files.len());
        let mut buf = Vec::new();
        for attach in files {
            let failed = |e: std::io::Error| Error::io(&attach.name, e);
            let mut file = &*attach.file;
            file.seek(std::io::SeekFrom::Start(0)).map_err(failed)?;
            let (size, chunks) =
                store_content(sink, hasher, file, attach.len, level, &mut buf, failed)?;
            out.push(Attachment {
                name: attach.name.clone(),
                size,
                chunks,
            });
        }
        Ok(out)
    })
}

/// Cuts at most `len` bytes of `content` into chunks and stores each one `sink` lacks,
/// the way content that is not a worktree file goes (an attachment read from its file, a
/// fetched file): read whole into `buf` up to [`READ_WHOLE_LIMIT`], streamed past it, with
/// the same cut points either way. Returns how many bytes it read and the chunk ids;
/// `failed` names a read error.
pub(crate) fn store_content(
    sink: &mut ChunkSink<'_, '_>,
    hasher: &Hasher,
    content: impl Read,
    len: u64,
    level: i32,
    buf: &mut Vec<u8>,
    failed: impl Fn(std::io::Error) -> Error,
) -> Result<(u64, Vec<ChunkId>)> {
    let mut content = content.take(len);
    let mut ids = Vec::new();
    if len <= READ_WHOLE_LIMIT {
        buf.clear();
        content.read_to_end(buf).map_err(&failed)?;
        let mut stored = Ok(());
        hasher.for_each_chunk(buf, |piece| {
            if stored.is_ok() {
                stored = keep_whole_chunk(sink, hasher, piece, level).map(|id| ids.push(id));
            }
        });
        stored?;
    } else {
        let p = hasher.params();
        for piece in fastcdc::v2020::StreamCDC::new(&mut content, p.min, p.avg, p.max) {
            let piece = piece.map_err(|e| failed(std::io::Error::other(e)))?;
            ids.push(keep_whole_chunk(sink, hasher, &piece.data, level)?);
        }
    }
    Ok((len - content.limit(), ids))
}

/// Names one chunk of content that is stored whole (never as a delta: nothing vouches
/// for a previous version) and stores it, unless the store has it.
fn keep_whole_chunk(
    sink: &mut ChunkSink<'_, '_>,
    hasher: &Hasher,
    piece: &[u8],
    level: i32,
) -> Result<ChunkId> {
    let id = hasher.chunk_id(piece);
    if !sink.contains(id)? {
        sink.add(id, &chunk::encode_chunk(piece, level), piece.len(), None)?;
    }
    Ok(id)
}
