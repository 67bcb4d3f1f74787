//! Seeded generation: the exact messages of every (scenario, parameter) cell, each made by
//! its scenario's generator from the scenario's own random stream.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::scenario::ScenarioId;
use super::{Sizes, Workload, WorkloadSpec};

/// Generates the workloads of `scenario`, one per parameter value, from `seed`.
/// `open_loop_rate` is the saturation rate that `open-loop` loads are fractions of.
pub fn generate(
    scenario: ScenarioId,
    sizes: &Sizes,
    seed: u64,
    open_loop_rate: f64,
) -> Vec<Workload> {
    WorkloadSpec::all(scenario, sizes)
        .iter()
        .map(|spec| spec.generate(sizes, seed, open_loop_rate))
        .collect()
}

impl WorkloadSpec {
    /// Its messages, from `seed` (see [`generate`]). Every workload of a scenario draws
    /// from a fresh copy of the scenario's own stream, so one is the same whether or not the
    /// others are generated.
    pub fn generate(&self, sizes: &Sizes, seed: u64, open_loop_rate: f64) -> Workload {
        let scenario = self.scenario;
        // Each scenario draws from its own stream, so adding one does not shift the others.
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ scenario.stream().wrapping_mul(0x9e37_79b9));
        let mut workload = Workload::new(self);
        if let Some(generator) = scenario.generator() {
            (generator.generate)(self, sizes, &mut rng, open_loop_rate, &mut workload);
        }
        workload
    }
}

#[cfg(test)]
mod tests {
    use strategies::Job;

    use super::*;

    fn sizes() -> Sizes {
        Sizes { messages: 5_000, ..Sizes::quick() }
    }

    /// The scenario of id `id`.
    fn scenario(id: &str) -> ScenarioId {
        id.parse().expect("a scenario id")
    }

    #[test]
    fn same_seed_same_messages() {
        for &scenario in ScenarioId::ALL {
            let a = generate(scenario, &sizes(), 7, 1e6);
            let b = generate(scenario, &sizes(), 7, 1e6);
            assert_eq!(a.len(), b.len());
            for (a, b) in a.iter().zip(&b) {
                assert_eq!(a.messages, b.messages, "{scenario}");
            }
        }
        let a = generate(scenario("uniform"), &sizes(), 7, 1e6);
        let c = generate(scenario("uniform"), &sizes(), 8, 1e6);
        assert_ne!(a[0].messages, c[0].messages);
    }

    /// Each key's messages in `workload` are numbered 0, 1, 2, ... in order.
    fn assert_seqs_count_up(workload: &Workload, scenario: ScenarioId) {
        let mut next = vec![0u64; workload.keys];
        for message in &workload.messages {
            let id = message.key.aggregate_id as usize;
            assert_eq!(message.seq, next[id], "{scenario} {}", workload.param);
            next[id] += 1;
        }
    }

    #[test]
    fn sequence_numbers_count_up_per_key() {
        for &scenario in ScenarioId::ALL {
            for workload in generate(scenario, &sizes(), 1, 1e6) {
                assert_seqs_count_up(&workload, scenario);
            }
        }
    }

    #[test]
    fn zipf_is_skewed_and_uniform_is_not() {
        let count_top = |scenario| {
            let workload = &generate(scenario, &sizes(), 3, 1e6)[0];
            let mut counts = vec![0usize; workload.keys];
            for message in &workload.messages {
                counts[message.key.aggregate_id as usize] += 1;
            }
            *counts.iter().max().unwrap()
        };
        assert!(count_top(scenario("zipf")) > 10 * count_top(scenario("uniform")));
    }

    #[test]
    fn hot_backlog_has_one_troubled_key_and_the_burst() {
        let workloads = generate(scenario("hot-backlog"), &sizes(), 1, 1e6);
        let params: Vec<_> = workloads.iter().map(|w| w.param.as_str()).collect();
        assert_eq!(params, ["stress=off", "burst=200", "burst=240", "burst=241", "burst=300"]);
        let twin = &workloads[0];
        assert!(twin.messages.iter().all(|m| m.key.aggregate_id != 0), "the twin has no burst");
        assert_eq!(twin.troubled, workloads[1].troubled, "the twin has the same bystanders");
        let burst_241 = &workloads[3];
        let hot = burst_241.messages.iter().filter(|m| m.key.aggregate_id == 0).count();
        assert_eq!(hot, 241);
        assert_eq!(burst_241.troubled.iter().filter(|&&t| t).count(), 1);
    }

    #[test]
    fn what_a_scenario_says_of_itself_matches_what_it_generates() {
        // The pipeline scenarios produce a log, not messages; `pipeline::scenario` tests them.
        for &scenario in ScenarioId::ALL.iter().filter(|scenario| !scenario.is_pipeline()) {
            let workloads = generate(scenario, &sizes(), 1, 1e6);
            assert_eq!(scenario.params(&sizes()), workloads.len(), "{scenario}: params");
            // A saga's messages are made as it runs: its job counts too.
            let waits = workloads
                .iter()
                .flat_map(|w| {
                    w.messages.iter().map(|message| message.job).chain(w.saga.map(|s| s.job))
                })
                .any(|job| matches!(job, Job::Wait { .. } | Job::Retry { .. }));
            assert_eq!(scenario.handlers_wait(), waits, "{scenario}: handlers_wait");
            let blocks = workloads
                .iter()
                .flat_map(|w| &w.messages)
                .any(|message| matches!(message.job, Job::Block { .. }));
            assert_eq!(scenario.handlers_block(), blocks, "{scenario}: handlers_block");
            let workers = workloads.iter().map(|w| w.workers).collect::<Vec<_>>();
            assert!(workers.iter().all(|&w| w == scenario.workers(&sizes())), "{scenario}");
            let mut types: Vec<u32> = workloads
                .iter()
                .flat_map(|w| &w.messages)
                .map(|message| message.key.aggregate_type)
                .collect();
            types.sort_unstable();
            types.dedup();
            assert_eq!(scenario.aggregate_types(&sizes()), types.len(), "{scenario}: types");
        }
    }

    #[test]
    fn specs_name_the_workloads_generate_makes_in_order() {
        let scenarios = || ScenarioId::ALL.iter().filter(|scenario| !scenario.is_pipeline());
        for sizes in [Sizes::quick(), Sizes::standard()] {
            for &scenario in scenarios() {
                let specs = WorkloadSpec::all(scenario, &sizes);
                assert_eq!(specs.len(), scenario.params(&sizes), "{scenario}");
            }
        }
        // At the quick sizes, each generated workload has the param its spec names.
        let sizes = Sizes::quick();
        for &scenario in scenarios() {
            let specs = WorkloadSpec::all(scenario, &sizes);
            let workloads = generate(scenario, &sizes, 1, 1e6);
            let params: Vec<_> = workloads.iter().map(|w| &w.param).collect();
            let named: Vec<_> = specs.iter().map(|s| &s.param).collect();
            assert_eq!(params, named, "{scenario}");
        }
    }
}
