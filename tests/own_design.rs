//! A design registered by a user program runs through the whole suite as the built-in ones
//! do: results (with its descriptor), summary, charts, report, gates and a later process's
//! reading of the file.

use harness::cli::RunArgs;
use harness::results::Results;
use harness::workload::SizeArgs;
use strategies::{Descriptor, Design, Family, StrategyId, Threads};

#[test]
fn a_registered_design_appears_in_every_output_beside_the_built_in_ones() {
    let descriptor = Descriptor::custom(
        "user-stealing",
        "a user's design: work-stealing under another name",
        Family::Mailboxes,
        true,
        Threads::SharedPool,
    );
    let design = Design::register(descriptor, |config, handler| {
        StrategyId::WorkStealing.build(config, handler)
    })
    .expect("the id is free");
    assert!(Design::all().contains(&design), "`--strategy all` includes it");

    let out = std::env::temp_dir().join(format!("keyed-bench-own-design-{}", std::process::id()));
    let args = RunArgs {
        scenario: "uniform".into(),
        workers: vec![2],
        sizes: SizeArgs { messages: Some(5_000), keys: Some(vec![100]), ..SizeArgs::default() },
        repeat: Some(1),
        no_breakdown: true,
        out: out.clone(),
        ..RunArgs::defaults()
    };
    let config = harness::config::RunConfig::try_from((args, "test".to_owned())).expect("valid");
    let outcome = harness::bench::run(&config).expect("the suite runs");

    let results = Results::read(&outcome.results).expect("a valid results file");
    let run = results.runs.iter().find(|run| run.strategy == "user-stealing").expect("its cell");
    assert!(run.correctness.is_clean(), "{:?}", run.correctness);
    assert_eq!(results.meta.designs.len(), 1, "only designs that are not built in are recorded");
    assert_eq!(results.meta.designs[0].id, "user-stealing");
    assert!(results.meta.designs[0].ordered);
    assert!(outcome.summary.contains("user-stealing"), "{}", outcome.summary);
    let report = std::fs::read_to_string(&outcome.report).unwrap();
    assert!(report.contains("user-stealing"), "the report shows it");
    let throughput = std::fs::read_to_string(out.join("plots/throughput.svg")).unwrap();
    assert!(throughput.contains("user-stealing"), "the throughput chart draws it");
    let gate = outcome.gate.expect("the rules judge a uniform run of every strategy");
    assert!(gate.contains("user-stealing"), "{gate}");
    std::fs::remove_dir_all(&out).unwrap();
}
