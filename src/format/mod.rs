//! How things are written as bytes, whatever holds them: the versioned record encoding
//! ([`codec`]) and content cut into chunks, named by keyed hashes and compressed
//! ([`chunk`]), sizes as people write them ([`size`]), paths as git quotes them and as
//! a shell reads them ([`path`]).

pub mod chunk;
pub mod codec;
pub mod path;
pub mod size;
