//! Gate `invalid`: a pod (or its job) with a setting tidal cannot read is never evicted. Guessing a
//! default for a malformed budget, cooldown or preemptable value could only widen disruption.

use super::job_ledger::SharedLedger;
use crate::{
    cluster::Setting,
    framework::{Candidate, Gate, GateId, PlanContext},
};

/// Reads each job's budget once per plan, in the ledger it shares with gate `budget`: reading a job's
/// budget looks at all its pods, and a DaemonSet's job has one pod per node.
#[derive(Default)]
pub(crate) struct Invalid {
    jobs: SharedLedger,
}

impl Invalid {
    pub(crate) fn sharing(jobs: SharedLedger) -> Self {
        Invalid { jobs }
    }
}

impl Gate for Invalid {
    fn id(&self) -> GateId {
        GateId::Invalid
    }

    fn check(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Result<(), String> {
        let pod = &candidate.pod;
        if let Some(problem) = pod.problems().first() {
            return Err(problem.to_string());
        }
        if let Setting::Invalid(invalid) = ctx.preemptable(pod) {
            return Err(invalid.to_string());
        }
        if let Setting::Invalid(invalid) = ctx.cooldown(pod) {
            return Err(invalid.to_string());
        }
        if let Setting::Invalid(invalid) = ctx.expected_run_time(pod) {
            return Err(invalid.to_string());
        }
        if let Setting::Invalid(invalid) = pod.checkpointed_at() {
            return Err(invalid.to_string());
        }
        let mut jobs = self.jobs.borrow_mut();
        match jobs.entry(&pod.job, ctx).budget.invalid() {
            Some(invalid) => Err(invalid.to_string()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use serde_json::json;

    use super::*;
    use crate::{
        api::labels,
        cluster::PolicyInfo,
        testkit::{Cluster, NOW, PodBuilder, pod, podgroup, policy, with_context},
    };

    /// What the gate says about `ns/name` (a TDM-style candidate) in `world` under `policy`.
    fn verdict(world: &mut Cluster, policy: &PolicyInfo, name: &str) -> Result<(), String> {
        let snapshot = world.snapshot();
        let pod = snapshot
            .pods()
            .find(|p| p.key.to_string() == name)
            .unwrap_or_else(|| panic!("no pod {name}"))
            .clone();
        let candidate = Candidate::new(&pod, crate::framework::StrategyId::Tdm, "test");
        with_context(&snapshot, policy, NOW, &HashSet::new(), |ctx| {
            Invalid::default().check(&candidate, ctx)
        })
    }

    fn check(pods: Vec<PodBuilder>, name: &str) -> Result<(), String> {
        verdict(
            &mut Cluster::revocable().pods(pods),
            &policy(json!({})),
            name,
        )
    }

    fn assert_refused(result: Result<(), String>, expected: &[&str]) {
        let detail = result.expect_err("the gate should refuse");
        for text in expected {
            assert!(detail.contains(text), "{detail:?} lacks {text:?}");
        }
    }

    fn job_pod(name: &str) -> PodBuilder {
        pod(&format!("ns/{name}"), "rev-1")
            .owned_by("ReplicaSet", "j")
            .preemptable()
    }

    #[test]
    fn valid_settings_pass() {
        let pods = vec![
            job_pod("fine")
                .annotation(labels::COOLDOWN_TIME, "5m")
                .annotation(labels::MAX_UNAVAILABLE[0], "50%"),
        ];
        assert_eq!(check(pods, "ns/fine"), Ok(()));
        assert_eq!(
            check(vec![pod("ns/bare", "rev-1").bare()], "ns/bare"),
            Ok(())
        );
    }

    #[test]
    fn unreadable_pod_fields() {
        let pods = vec![pod("ns/bad-request", "rev-1").bare().patch(json!({"spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "lots"}}}]}}))];
        assert_refused(
            check(pods, "ns/bad-request"),
            &["Pod ns/bad-request", "resources.requests.cpu", "lots"],
        );
    }

    #[test]
    fn invalid_preemptable_on_the_pod_or_its_podgroup() {
        assert_refused(
            check(
                vec![
                    pod("ns/p", "rev-1")
                        .bare()
                        .label(labels::PREEMPTABLE, "yes"),
                ],
                "ns/p",
            ),
            &["Pod ns/p", labels::PREEMPTABLE, "\"yes\""],
        );
        let mut world = Cluster::revocable();
        world.cache.apply_podgroup(
            podgroup("ns/g")
                .annotation(labels::PREEMPTABLE, "si")
                .build(),
        );
        let mut world = world.pods([pod("ns/member", "rev-1")
            .bare()
            .annotation(labels::GROUP_NAME, "g")]);
        assert_refused(
            verdict(&mut world, &policy(json!({})), "ns/member"),
            &["PodGroup ns/g", labels::PREEMPTABLE, "\"si\""],
        );
    }

    #[test]
    fn invalid_cooldown_label_first_then_annotation() {
        assert_refused(
            check(
                vec![job_pod("c").annotation(labels::COOLDOWN_TIME, "10 min")],
                "ns/c",
            ),
            &[labels::COOLDOWN_TIME, "\"10 min\""],
        );
        // A malformed label is not hidden by a good annotation.
        let both = job_pod("c")
            .label(labels::COOLDOWN_TIME, "1d")
            .annotation(labels::COOLDOWN_TIME, "1h");
        assert_refused(
            check(vec![both], "ns/c"),
            &[labels::COOLDOWN_TIME, "\"1d\""],
        );
    }

    #[test]
    fn invalid_budget_on_a_pod_refuses_every_pod_of_its_job() {
        let pods = vec![
            job_pod("good").annotation(labels::MAX_UNAVAILABLE[1], "1"),
            job_pod("bad").annotation(labels::MAX_UNAVAILABLE[1], "one"),
        ];
        let mut world = Cluster::revocable().pods(pods);
        for name in ["ns/good", "ns/bad"] {
            assert_refused(
                verdict(&mut world, &policy(json!({})), name),
                &["Pod ns/bad", labels::MAX_UNAVAILABLE[1], "\"one\""],
            );
        }
    }

    #[test]
    fn invalid_budget_on_the_podgroup() {
        let mut world = Cluster::revocable();
        world.cache.apply_podgroup(
            podgroup("ns/g")
                .annotation(labels::MIN_AVAILABLE[0], "101%")
                .build(),
        );
        // The pod's own valid budget does not count: the PodGroup's is read first.
        let mut world = world.pods([pod("ns/member", "rev-1")
            .bare()
            .annotation(labels::GROUP_NAME, "g")
            .annotation(labels::PREEMPTABLE, "true")
            .annotation(labels::MIN_AVAILABLE[0], "1")]);
        assert_refused(
            verdict(&mut world, &policy(json!({})), "ns/member"),
            &["PodGroup ns/g", labels::MIN_AVAILABLE[0], "\"101%\""],
        );
    }

    #[test]
    fn pods_of_a_job_with_different_budgets() {
        let pods = vec![
            job_pod("a").annotation(labels::MAX_UNAVAILABLE[0], "1"),
            job_pod("b").annotation(labels::MAX_UNAVAILABLE[0], "2"),
            job_pod("c"),
        ];
        let mut world = Cluster::revocable().pods(pods);
        for name in ["ns/a", "ns/b", "ns/c"] {
            assert_refused(
                verdict(&mut world, &policy(json!({})), name),
                &["ReplicaSet ns/j", "different budgets"],
            );
        }
    }

    #[test]
    fn invalid_policy_default_budget() {
        // Planning never gets here (the policy does not run), but the gate must refuse on its own too.
        let broken = policy(json!({"defaults": {"jobBudget": {"minAvailable": -1}}}));
        assert!(broken.default_budget.is_err());
        let mut world = Cluster::revocable().pods([job_pod("x")]);
        assert_refused(
            verdict(&mut world, &broken, "ns/x"),
            &["DeschedulingPolicy p", "spec.defaults.jobBudget"],
        );
        // A job with its own budget does not need the default.
        let mut world =
            Cluster::revocable().pods([job_pod("y").annotation(labels::MAX_UNAVAILABLE[0], "1")]);
        assert_eq!(verdict(&mut world, &broken, "ns/y"), Ok(()));
    }

    #[test]
    fn the_first_problem_is_reported() {
        let pods = vec![job_pod("many").patch(json!({"spec": {"containers": [{"name": "m", "resources": {"requests": {"memory": "1Qi"}}}]}})).annotation(labels::PREEMPTABLE, "perhaps").annotation(labels::COOLDOWN_TIME, "soon")];
        let detail = check(pods, "ns/many").expect_err("refused");
        assert!(detail.contains("resources.requests.memory"), "{detail}");
    }
}
