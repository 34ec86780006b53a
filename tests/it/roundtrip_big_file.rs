//! A file much larger than the memory a save may use is streamed, never loaded whole:
//! the save's peak memory stays bounded and the file comes back byte for byte.

use crate::common;
use std::io::Write;

use common::Repo;

#[test]
fn a_big_file_is_streamed_with_bounded_memory_and_restored_exactly() {
    const SIZE: usize = 384 << 20;
    let repo = Repo::new();
    // Above the default checkpoint.maxFileSize, which would leave it out.
    repo.git(&["config", "checkpoint.maxFileSize", "0"]);
    let path = repo.p("big.bin");
    let mut hasher = blake3::Hasher::new();
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut block = vec![0u8; 1 << 20];
        for _ in 0..SIZE / block.len() {
            for word in block.chunks_mut(8) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                word.copy_from_slice(&state.to_le_bytes());
            }
            file.write_all(&block).unwrap();
            hasher.update(&block);
        }
    }
    let original = hasher.finalize();
    let (out, peak) = common::run_measuring_peak(
        repo.sb.bin_cmd(&repo.dir, &["save", "-m", "big", "--json"]),
        None,
    );
    assert_eq!(out.code, 0, "{out}");
    let id = common::parse_json(&out, "save")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let peak_mib = peak >> 20;
    assert!(
        peak_mib < 150,
        "save peaked at {peak_mib} MiB for a 384 MiB file"
    );

    std::fs::write(&path, b"overwritten").unwrap();
    repo.ok(&["restore", &id, "--no-save"]);
    let restored = blake3::Hasher::new()
        .update_reader(std::fs::File::open(&path).unwrap())
        .unwrap()
        .finalize();
    assert_eq!(original, restored);
}
