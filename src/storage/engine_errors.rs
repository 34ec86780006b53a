//! How the storage engine's errors become the library's: a full disk, a failed read or
//! write ([`Error::StoreIo`], with the system's error kept whole so that a caller can
//! tell a refused permission from the rest) and a damaged file are kinds of their own;
//! anything else is [`Error::Store`], in the engine's words.

use crate::Error;

impl From<redb::StorageError> for Error {
    fn from(e: redb::StorageError) -> Self {
        match e {
            redb::StorageError::Io(io) if io.raw_os_error() == Some(libc::ENOSPC) => {
                Error::DiskFull
            }
            redb::StorageError::Io(error) => Error::StoreIo { path: None, error },
            redb::StorageError::Corrupted(msg) => Error::Corrupt(msg),
            other => Error::Store(other.to_string()),
        }
    }
}

macro_rules! from_redb {
    ($($t:ident),*) => {$(
        impl From<redb::$t> for Error {
            fn from(e: redb::$t) -> Self {
                match e {
                    redb::$t::Storage(storage) => storage.into(),
                    other => Error::Store(other.to_string()),
                }
            }
        }
    )*};
}
from_redb!(
    DatabaseError,
    TransactionError,
    TableError,
    CommitError,
    CompactionError
);

impl From<redb::SetDurabilityError> for Error {
    fn from(e: redb::SetDurabilityError) -> Self {
        Error::Store(e.to_string())
    }
}
