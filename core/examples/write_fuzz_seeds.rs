//! Writes the seed inputs of the fuzz corpus: `cargo run -p vouch-core --example write_fuzz_seeds`.
//! Run it again whenever the proof encoding changes on purpose.

use std::path::PathBuf;
use vouch_core::fuzz_targets::{
    reference_edits, reference_file, reference_indices, reference_list, reference_possession_proof,
};

fn main() -> std::io::Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let list = reference_list();
    let proof = list.prove(&reference_indices()).expect("valid challenge");
    let update = list.clone().multi_update(&reference_edits()).expect("valid edits");
    let seeds = [
        ("multiproof", proof.as_bytes().to_vec()),
        ("update_proof", update.to_bytes()),
        ("possession_proof", reference_possession_proof().to_bytes()),
        ("linear_key", reference_file().key.to_bytes()),
        ("rsa_key", rsa_key().to_bytes()),
    ];
    for (name, bytes) in seeds {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("seed-valid"), &bytes)?;
        std::fs::write(dir.join("seed-truncated"), &bytes[..bytes.len() / 2])?;
        let mut flipped = bytes.clone();
        flipped[bytes.len() / 3] ^= 0x40;
        std::fs::write(dir.join("seed-flipped"), &flipped)?;
        std::fs::write(dir.join("seed-empty"), [])?;
    }
    std::fs::write(root.join("rsa_key/seed-public"), rsa_key().public_key().to_bytes())?;
    Ok(())
}

/// A fixed 1024-bit key (seeded, so the corpus is reproducible).
fn rsa_key() -> vouch_core::pdp::rsa::RsaSecretKey {
    use rand_crypto::SeedableRng;
    let mut rng = rand_crypto::rngs::StdRng::seed_from_u64(7);
    vouch_core::pdp::rsa::RsaSecretKey::generate(&mut rng, 1024).expect("supported size")
}
