//! The truth a run's clients are held to: for each name, every value the honest history
//! allows it to have now. A write that failed may or may not have been applied, so it adds
//! its value to the possibilities; one that succeeded, or a read that checked out, settles
//! them to one.

use std::collections::BTreeMap;

/// A name's possible values: `None`, absent.
pub(super) type Value = Option<Vec<u8>>;

#[derive(Clone, Debug, Default)]
pub(super) struct Model {
    names: BTreeMap<String, Vec<Value>>,
    /// Names whose value was acknowledged and then a crash happened.
    pub(super) acked_before_crash: BTreeMap<String, bool>,
}

impl Model {
    pub(super) fn possible(&self, name: &str) -> Vec<Value> {
        self.names.get(name).cloned().unwrap_or_else(|| vec![None])
    }

    /// The one value `name` has, if the history leaves only one.
    pub(super) fn certain(&self, name: &str) -> Option<Value> {
        let possible = self.possible(name);
        (possible.len() == 1).then(|| possible[0].clone())
    }

    pub(super) fn allows(&self, name: &str, value: &Value) -> bool {
        self.possible(name).contains(value)
    }

    /// `name` is `value` now (a write acknowledged, or a read verified).
    pub(super) fn settle(&mut self, name: &str, value: Value) {
        self.names.insert(name.to_string(), vec![value]);
        self.acked_before_crash.remove(name);
    }

    /// A write of `value` to `name` whose outcome is unknown.
    pub(super) fn maybe(&mut self, name: &str, value: Value) {
        let mut possible = self.possible(name);
        if !possible.contains(&value) {
            possible.push(value);
        }
        self.names.insert(name.to_string(), possible);
    }

    /// The provider crashed: every name settled so far was acknowledged before it.
    pub(super) fn crashed(&mut self) {
        for (name, possible) in &self.names {
            if possible.len() == 1 {
                self.acked_before_crash.insert(name.clone(), true);
            }
        }
    }

    /// Names certainly present, and names possibly present.
    pub(super) fn listing_bounds(&self) -> (Vec<String>, Vec<String>) {
        let certain = self.names.iter().filter(|(_, p)| p.iter().all(Option::is_some)).map(|(n, _)| n.clone());
        let possible = self.names.iter().filter(|(_, p)| p.iter().any(Option::is_some)).map(|(n, _)| n.clone());
        (certain.collect(), possible.collect())
    }
}
