//! The three kinds of id. Each is a keyed BLAKE3 hash of the bytes it names (the store's
//! key, so ids differ between stores), truncated to 128 bits, read big-endian, printed
//! as 32 lowercase hex digits. Distinct types keep a tree id from being looked up as a
//! chunk; on disk each is the bare `u128`, as before these types existed.

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub u128);

        impl $name {
            /// The full 32-digit hex form.
            pub fn hex(self) -> String {
                format!("{:032x}", self.0)
            }
        }

        impl From<u128> for $name {
            fn from(raw: u128) -> $name {
                $name(raw)
            }
        }

        impl From<$name> for u128 {
            fn from(id: $name) -> u128 {
                id.0
            }
        }

        impl std::fmt::LowerHex for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::LowerHex::fmt(&self.0, f)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{:032x}", self.0)
            }
        }
    };
}

id_type!(
    /// A checkpoint: the hash of its record (see docs/design.md, "Ids", for gc's
    /// re-parenting, after which it no longer is).
    CheckpointId
);
id_type!(
    /// A tree: the hash of its encoded record.
    TreeId
);
id_type!(
    /// A chunk: the hash of its content.
    ChunkId
);
