//! VICOS in the demo: two members of a group share objects through one provider, every
//! answer checked against the group's one history; then a provider that forks the next group
//! shows each member a history of its own, which fork-linearizability cannot tell apart until
//! the histories meet, where the member shown the other's is caught up with it.

use super::{verdict, Story, World, BOB_TOKEN, TOKEN};
use anyhow::{anyhow, Context};
use std::io::Cursor;
use vouch_client::vicos::Group;
use vouch_client::{ClientError, Remote, ViolationKind};
use vouch_core::aip::{Keyring, Mode, Outcome};
use vouch_misbehave::{Misbehave, FORK_OPERATIONS};

pub(super) async fn show(world: &mut World, story: &mut Story) -> anyhow::Result<()> {
    story.system("VICOS", "a group of clients sharing one object store, each checking that all see one history");
    world.provider(Misbehave::None).await?;
    let (alice, bob) = pair(world, "team").await?;
    put(&alice, "plan.txt", b"meet on friday").await?;
    let plan = get(&bob, "plan.txt").await?.context("bob sees no plan.txt")?;
    put(&bob, "reply.txt", b"friday it is").await?;
    let listed = list(&alice).await?;
    story.step(
        "share",
        format!(
            "group team: alice put plan.txt, bob read it verified ({:?}) and put reply.txt; alice lists {listed:?}",
            String::from_utf8_lossy(&plan)
        ),
    );

    world.provider(Misbehave::ForkAip).await?;
    let (alice, bob) = pair(world, "board").await?;
    for i in 0..3 {
        put(&alice, &format!("minutes-{i}.txt"), b"alice's minutes").await?;
    }
    put(&bob, "motion.txt", b"bob's motion").await?;
    let seen = list(&bob).await?;
    let none = get(&alice, "motion.txt").await?;
    if seen != ["motion.txt"] || none.is_some() {
        return Err(anyhow!("the forking provider did not fork (bob sees {seen:?})"));
    }
    story.step(
        "fork",
        format!(
            "group board, forked at its creation: alice put 3 objects, bob put motion.txt; bob lists {seen:?}, \
             alice finds no motion.txt. Each history is honest in itself, so nothing tells yet"
        ),
    );
    // Bob's operations on the second history are over: his next is shown alice's.
    for _ in 2..FORK_OPERATIONS {
        list(&bob).await?;
    }
    let met = bob.list().await.map(|_| ());
    story.lie(verdict(
        "fork (two histories)",
        "bob's listing, shown alice's history",
        ViolationKind::BadAipAnswer,
        met,
    ));
    let again = bob.put(b"again.txt", Cursor::new(b"x".to_vec())).await.map(|_| ());
    match again {
        Err(e) if e.to_string().contains("caught the provider lying") => {
            let said = e.to_string();
            let from = said.find("this member").unwrap_or(0);
            let first = said[from..].split(". ").next().unwrap_or(&said).to_string();
            story.step("after", format!("every later operation of bob's says so: {first}"));
        }
        other => return Err(anyhow!("bob's next operation after the fork was caught: {other:?}")),
    }
    Ok(())
}

/// Alice (member 0) creates the group `name`, and Bob (member 1) joins it.
async fn pair(world: &World, name: &str) -> Result<(Group, Group), ClientError> {
    let keys = Keyring::hmac(rand::random());
    let alice = Group::create(Remote::new(&world.url(), TOKEN)?, name, 0, keys.clone(), Mode::Compatible, None).await?;
    let bob = Group::join(Remote::new(&world.url(), BOB_TOKEN)?, name, 1, keys, Mode::Compatible);
    Ok((alice, bob))
}

fn done<T>(outcome: Outcome<T>) -> anyhow::Result<T> {
    match outcome {
        Outcome::Done(t) => Ok(t),
        Outcome::Abort => Err(anyhow!("an operation of one member at a time aborted")),
    }
}

async fn put(member: &Group, key: &str, bytes: &[u8]) -> anyhow::Result<()> {
    done(member.put(key.as_bytes(), Cursor::new(bytes.to_vec())).await?)
}

async fn get(member: &Group, key: &str) -> anyhow::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    Ok(done(member.get(key.as_bytes(), &mut out).await?)?.map(|_| out))
}

async fn list(member: &Group) -> anyhow::Result<Vec<String>> {
    Ok(done(member.list().await?)?.into_iter().map(|k| String::from_utf8_lossy(&k).into_owned()).collect())
}
