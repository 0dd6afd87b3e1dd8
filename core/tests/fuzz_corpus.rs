//! Replays the committed fuzz corpus (fuzz/corpus/<target>/) through every fuzz target, and
//! checks that the seeds in it are still what the current code writes.

use std::path::PathBuf;
use vouch_core::fuzz_targets::{
    reference_challenge, reference_edits, reference_file, reference_indices, reference_list, TARGETS,
};

fn corpus(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target)
}

#[test]
fn corpus_replays_without_panic() {
    for (name, target) in TARGETS {
        let files: Vec<_> = std::fs::read_dir(corpus(name)).expect("corpus folder").collect();
        assert!(files.len() >= 2, "corpus of {name} is empty");
        for file in files {
            let data = std::fs::read(file.unwrap().path()).unwrap();
            target(&data);
        }
    }
}

#[test]
fn seed_proofs_are_valid() {
    // The valid seeds must verify, so the fuzzer starts from inputs that reach deep code.
    let list = reference_list();
    let proof = std::fs::read(corpus("multiproof").join("seed-valid")).unwrap();
    let proof = vouch_core::MultiProof::from_bytes(proof).unwrap();
    vouch_core::verify_multi_proof(&list.root(), &reference_indices(), &proof).unwrap();
    let update = std::fs::read(corpus("update_proof").join("seed-valid")).unwrap();
    let update = vouch_core::UpdateProof::from_bytes(&update).unwrap();
    vouch_core::verify_multi_update(&list.root(), &reference_edits(), &update).unwrap();
    let possession = std::fs::read(corpus("possession_proof").join("seed-valid")).unwrap();
    let possession = vouch_core::pdp::PossessionProof::from_bytes(&possession).unwrap();
    let f = reference_file();
    let c = &f.client;
    vouch_core::pdp::verify_possession(&f.key, &c.file, &c.root, c.len, &reference_challenge(), &possession).unwrap();
    let key = std::fs::read(corpus("linear_key").join("seed-valid")).unwrap();
    vouch_core::pdp::linear::LinearKey::from_bytes(&key).unwrap();
    let secret = std::fs::read(corpus("rsa_key").join("seed-valid")).unwrap();
    vouch_core::pdp::rsa::RsaSecretKey::from_bytes(&secret).unwrap();
    let public = std::fs::read(corpus("rsa_key").join("seed-public")).unwrap();
    vouch_core::pdp::rsa::RsaPublicKey::from_bytes(&public).unwrap();
    let por = std::fs::read(corpus("por_audit_proof").join("seed-valid")).unwrap();
    let r = vouch_core::fuzz_targets::reference_por_part();
    let por = vouch_core::por::audit::PartProof::from_bytes(&por, r.picks.len(), vouch_core::fuzz_targets::POR_WIDTH)
        .unwrap();
    vouch_core::por::audit::verify_part(&r.seal, &r.sums, &r.part, &r.picks, &por).unwrap();
    let raw = std::fs::read(corpus("por_raw_proof").join("seed-valid")).unwrap();
    let (tree, leaves) = vouch_core::fuzz_targets::reference_raw_tree();
    let raw = vouch_core::por::raw_tree::RawProof::from_bytes(&raw).unwrap();
    assert_eq!(vouch_core::por::raw_tree::raw_root(4, &leaves, &raw).unwrap(), tree.root());
    let m = vouch_core::fuzz_targets::reference_por_messages();
    let seed = |name: &str| std::fs::read(corpus("por_messages").join(name)).unwrap();
    assert_eq!(vouch_core::por::client::WritePlan::from_bytes(&seed("seed-plan")).unwrap(), m.plan);
    assert_eq!(vouch_core::por::client::WriteContext::from_bytes(&seed("seed-context")).unwrap(), m.context);
    assert_eq!(vouch_core::por::client::RawRead::from_bytes(&seed("seed-read")).unwrap(), m.read);
    assert_eq!(vouch_core::por::repair::RegionRead::from_bytes(&seed("seed-region")).unwrap(), m.region);
    assert_eq!(seed("seed-upload"), m.written.upload_bytes());
    let (entry, version) = vouch_core::fuzz_targets::reference_records();
    assert_eq!(std::fs::read(corpus("namespace_record").join("seed-entry")).unwrap(), entry);
    assert_eq!(std::fs::read(corpus("namespace_record").join("seed-version")).unwrap(), version);
}

/// The AIP seeds are what the current code writes, and each is accepted where the target
/// delivers it, so the fuzzer starts from messages that pass every signature check.
#[test]
fn aip_seeds_are_current_and_accepted() {
    use vouch_core::aip::{Adict, DictResponse, Outcome, ToClient, ToServer, Wire};
    use vouch_core::fuzz_targets::{adict_group, adict_page_group, aip_seeds, namespace_group};
    use vouch_core::namespace::{NamespaceOps, NamespaceResponse};
    let seed = |name: &str| std::fs::read(corpus("aip_messages").join(name)).unwrap();
    for (name, bytes) in aip_seeds() {
        assert_eq!(seed(name), bytes, "{name} is stale: run write_seeds");
    }
    let mut g = adict_group();
    let reply = vouch_core::aip::Reply::<Adict>::from_wire(&seed("seed-reply-bare")).unwrap();
    assert_eq!(ToClient::<Adict>::from_wire(&seed("seed-reply")), Ok(ToClient::Reply(Box::new(reply.clone()))));
    let (outcome, _) = g.clients[1].on_reply(reply).unwrap();
    assert_eq!(outcome, Outcome::Done(DictResponse::Value(Some(b"1".to_vec()))));
    let Ok(ToClient::Reply(page)) = ToClient::<Adict>::from_wire(&seed("seed-page-reply")) else { panic!() };
    let (outcome, _) = adict_page_group().clients[1].on_reply(*page).unwrap();
    assert!(matches!(outcome, Outcome::Done(DictResponse::Page { ref keys, more: true }) if keys.len() == 1));
    let Ok(ToClient::UpdateAuth(m)) = ToClient::<Adict>::from_wire(&seed("seed-update-auth")) else { panic!() };
    for answer in g.clients[0].on_update_auth(*m).unwrap() {
        g.server.on_commit_auth(0, answer).unwrap();
    }
    let page = vouch_core::aip::HistoryPage::from_wire(&seed("seed-history")).unwrap();
    assert_eq!(adict_group().clients[2].on_history(page), Ok(false), "the whole history, checked");
    let Ok(ToClient::TakeOver(m)) = ToClient::<Adict>::from_wire(&seed("seed-takeover")) else { panic!() };
    assert_eq!(adict_group().clients[2].take_over(*m), Ok(vec![]), "nothing hanging");
    let mut g = adict_group();
    for (from, name) in [(2, "seed-invoke"), (1, "seed-commit"), (0, "seed-commit-auth")] {
        let m = ToServer::<Adict>::from_wire(&seed(name)).unwrap();
        assert!(g.server.deliver(from, m).is_ok(), "{name}");
    }
    assert_eq!((g.server.applied(), g.server.invoked()), (4, 5));
    let mut n = namespace_group();
    let Ok(ToClient::Reply(reply)) = ToClient::<NamespaceOps>::from_wire(&seed("seed-namespace-reply")) else {
        panic!()
    };
    let (outcome, _) = n.clients[1].on_reply(*reply).unwrap();
    assert!(matches!(outcome, Outcome::Done(NamespaceResponse::Value(Some(_)))));
    let m = ToClient::<NamespaceOps>::from_wire(&seed("seed-namespace-update-auth"));
    let Ok(ToClient::UpdateAuth(m)) = m else { panic!() };
    assert_eq!(n.clients[0].on_update_auth(*m).unwrap().len(), 1);
}

/// Writes the seeds again after a deliberate change of a hash or record layout:
/// `cargo test -p vouch-core --test fuzz_corpus -- --ignored write_seeds`. Each proof target
/// gets a valid seed, the same with one bit flipped a third of the way in, and its first half.
#[test]
#[ignore = "rewrites the committed corpus; run by hand after a format change"]
fn write_seeds() {
    let (entry, version) = vouch_core::fuzz_targets::reference_records();
    std::fs::write(corpus("namespace_record").join("seed-entry"), entry).unwrap();
    std::fs::write(corpus("namespace_record").join("seed-version"), version).unwrap();
    let m = vouch_core::fuzz_targets::reference_por_messages();
    for (name, bytes) in [
        ("seed-plan", m.plan.to_bytes()),
        ("seed-context", m.context.to_bytes()),
        ("seed-upload", m.written.upload_bytes()),
        ("seed-read", m.read.to_bytes()),
        ("seed-region", m.region.to_bytes()),
    ] {
        std::fs::write(corpus("por_messages").join(name), bytes).unwrap();
    }
    for (name, bytes) in vouch_core::fuzz_targets::aip_seeds() {
        std::fs::write(corpus("aip_messages").join(name), bytes).unwrap();
    }
    let list = reference_list();
    let valid = [
        ("multiproof", list.prove(&reference_indices()).unwrap().as_bytes().to_vec()),
        ("update_proof", list.clone().multi_update(&reference_edits()).unwrap().to_bytes()),
        ("possession_proof", vouch_core::fuzz_targets::reference_possession_proof().to_bytes()),
        ("por_audit_proof", vouch_core::fuzz_targets::reference_por_proof().to_bytes()),
        ("por_raw_proof", {
            let (tree, leaves) = vouch_core::fuzz_targets::reference_raw_tree();
            let indices: Vec<u64> = leaves.iter().map(|l| l.0).collect();
            tree.prove(&indices).unwrap().to_bytes()
        }),
    ];
    for (target, bytes) in valid {
        let mut flipped = bytes.clone();
        flipped[bytes.len() / 3] ^= 0x40;
        std::fs::write(corpus(target).join("seed-valid"), &bytes).unwrap();
        std::fs::write(corpus(target).join("seed-flipped"), &flipped).unwrap();
        std::fs::write(corpus(target).join("seed-truncated"), &bytes[..bytes.len() / 2]).unwrap();
    }
}
