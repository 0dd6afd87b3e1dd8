//! S3 applications through the real gateway (the Iris-style portal), in half the runs: puts,
//! whole gets, deletes and listings of one bucket ([`S3App`]), each checked against the truth
//! of the third owner whose client the gateway serves. A lie that reaches the gateway reaches
//! the application as an error naming the violation, never as bytes.
//!
//! Its choices come from the run's schedule, not its main stream, so that a run without it is
//! the run it was before it came.

use super::model::{Model, Value};
use super::report::{Invariant, SimFailure};
use super::run::{describe, Run};
use super::s3app::{Answer, OBJECTS};

impl Run {
    pub(super) async fn gateway_step(&mut self) -> Result<(), SimFailure> {
        let Some(app) = &self.s3 else { return Ok(()) };
        let key = *self.schedule.pick(&OBJECTS).unwrap_or(&OBJECTS[0]);
        let name = format!("s3 {key}");
        let (what, written, answer) = match self.schedule.below(100) {
            0..=39 => {
                let len = self.schedule.below(5000) as usize;
                let data = self.schedule.bytes(len);
                let answer = app.request("PUT", Some(key), &[], data.clone()).await;
                ("s3-put", Some(Some(data)), answer)
            }
            40..=74 => ("s3-get", None, app.request("GET", Some(key), &[], Vec::new()).await),
            75..=89 => ("s3-delete", Some(None), app.request("DELETE", Some(key), &[], Vec::new()).await),
            _ => ("s3-list", None, app.request("GET", None, &[("list-type", "2")], Vec::new()).await),
        };
        self.s3_answered(what, key, &name, written, answer).await
    }

    async fn s3_answered(
        &mut self,
        what: &str,
        key: &str,
        name: &str,
        written: Option<Value>,
        answer: Answer,
    ) -> Result<(), SimFailure> {
        let Some(app) = &mut self.s3 else { return Ok(()) };
        let label = format!("{name} {what}");
        let outcome = match &answer {
            Answer::Ok(_) => "ok",
            Answer::NoSuchKey => "not-found",
            Answer::Violation(_) => "violation",
            Answer::Fault(_) => "fault",
        };
        self.coverage.outcome(&format!("{what}:{outcome}"));
        let model = &mut app.model;
        let failure = match (answer, written) {
            (Answer::Ok(_), Some(value)) => {
                model.settle(key, value);
                None
            }
            (Answer::Violation(e), Some(value)) | (Answer::Fault(e), Some(value)) => {
                model.maybe(key, value);
                Some(e)
            }
            (Answer::Ok(body), None) if what == "s3-list" => {
                let listed = listed_keys(&body);
                let wrong = OBJECTS.iter().find(|k| {
                    let possible = model.possible(k);
                    let shown = listed.iter().any(|l| l == *k);
                    (shown && !possible.iter().any(Option::is_some)) || (!shown && !possible.contains(&None))
                });
                if let Some(wrong) = wrong {
                    let detail = format!(
                        "{label}: the listing {listed:?} does not fit {wrong}, which may be {}",
                        show(model, wrong)
                    );
                    return Err(self.fail(Invariant::AcceptsOnlyTheTruth, detail));
                }
                None
            }
            (Answer::Ok(body), None) => self.s3_read(key, &label, Some(body.to_vec()))?,
            (Answer::NoSuchKey, _) => self.s3_read(key, &label, None)?,
            (Answer::Violation(e), None) | (Answer::Fault(e), None) => Some(e),
        };
        match (outcome, failure) {
            ("violation", Some(e)) => self.caught(&label, &e).await,
            (_, Some(e)) => {
                self.note(format!("{label}: {e}"));
                Ok(())
            }
            (_, None) => {
                self.note(format!("{label}: {outcome}"));
                Ok(())
            }
        }
    }

    /// An object the application was given (or told is absent), against the truth.
    fn s3_read(&mut self, key: &str, label: &str, read: Value) -> Result<Option<String>, SimFailure> {
        let Some(app) = &mut self.s3 else { return Ok(None) };
        if !app.model.allows(key, &read) {
            let detail =
                format!("{label}: the application got {}; the truth is {}", describe(&read), show(&app.model, key));
            return Err(self.fail(Invariant::AcceptsOnlyTheTruth, detail));
        }
        app.model.settle(key, read);
        Ok(None)
    }

    /// With the adversary gone, every object reads back through the gateway as the truth
    /// allows; after honest faults only, every read must succeed.
    pub(super) async fn s3_settle_down(&mut self) -> Result<(), SimFailure> {
        for key in OBJECTS {
            let Some(app) = &self.s3 else { return Ok(()) };
            let label = format!("s3 {key} final get");
            match app.request("GET", Some(key), &[], Vec::new()).await {
                Answer::Ok(body) => drop(self.s3_read(key, &label, Some(body.to_vec()))?),
                Answer::NoSuchKey => drop(self.s3_read(key, &label, None)?),
                Answer::Violation(e) | Answer::Fault(e) if self.honest => {
                    let detail = format!("{label}: the application cannot go on after honest faults: {e}");
                    return Err(self.fail(Invariant::HonestFaultsAreNotLies, detail));
                }
                Answer::Violation(_) | Answer::Fault(_) => {}
            }
        }
        Ok(())
    }
}

fn listed_keys(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    text.split("<Key>").skip(1).filter_map(|rest| rest.split("</Key>").next().map(str::to_string)).collect()
}

fn show(model: &Model, key: &str) -> String {
    model.possible(key).iter().map(describe).collect::<Vec<_>>().join(" or ")
}
