//! How things are written as bytes, whatever holds them: the versioned record encoding
//! ([`codec`]) and content cut into chunks, named by keyed hashes and compressed
//! ([`chunk`]), and sizes as people write them ([`size`]).

pub mod chunk;
pub mod codec;
pub mod size;
