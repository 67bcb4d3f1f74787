//! A workload's parameter as text (`keys=20`, `slow=128,senders=1`): written by the
//! generators, read back by the report.

use super::Sizes;

/// The parameter a `--keys` count gives its cells: `keys=N` when the flag lists several
/// (a sweep), nothing when it gives one.
pub(crate) fn key_param(sizes: &Sizes, keys: usize) -> String {
    if sizes.keys.len() > 1 {
        format!("keys={keys}")
    } else {
        String::new()
    }
}

/// The key count of a `keys=N` param (the key sweeps).
pub fn keys_param(param: &str) -> Option<usize> {
    param.strip_prefix("keys=").and_then(|keys| keys.parse().ok())
}

/// The value of the `name=` part of a param of space-separated parts (`0.5`, the `load` of
/// `keys=1000 load=0.5`), as its text.
pub fn param_part<'p>(param: &'p str, name: &str) -> Option<&'p str> {
    param.split(' ').find_map(|part| part.strip_prefix(name)?.strip_prefix('='))
}

/// The `keys=N` part of a param of space-separated parts (`keys=1000` of
/// `keys=1000 load=0.5`).
pub fn keys_part(param: &str) -> Option<&str> {
    param.split(' ').find(|part| keys_param(part).is_some())
}

/// The key count of a param's `keys=N` part.
pub fn keys_in(param: &str) -> Option<usize> {
    keys_part(param).and_then(keys_param)
}

/// A param without its `keys=N` part: its other parts, space-separated.
pub fn without_keys(param: &str) -> String {
    param.split(' ').filter(|part| keys_param(part).is_none()).collect::<Vec<_>>().join(" ")
}

/// The slow aggregates and senders of a `slow=S,senders=N` param (`cold-command`).
pub fn cold_command_param(param: &str) -> Option<(usize, usize)> {
    let field = |name: &str| {
        param.split(',').find_map(|part| part.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
    };
    Some((field("slow")?, field("senders")?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{generate, ScenarioId};

    fn sizes() -> Sizes {
        Sizes { messages: 5_000, ..Sizes::quick() }
    }

    /// The scenario of id `id`.
    fn scenario(id: &str) -> ScenarioId {
        id.parse().expect("a scenario id")
    }

    #[test]
    fn params_read_back_as_they_are_written() {
        let cold = generate(scenario("cold-command"), &sizes(), 1, 1e6);
        assert_eq!(cold_command_param(&cold[0].param), Some((128, 1)));
        let sweep = generate(scenario("async-io"), &sizes(), 1, 1e6);
        assert_eq!(keys_param(&sweep[0].param), Some(20));
        assert_eq!((keys_param("burst=3"), cold_command_param("slow=2")), (None, None));
    }

    #[test]
    fn a_param_of_several_parts_gives_each() {
        let param = "keys=1000 load=0.5";
        assert_eq!((param_part(param, "load"), param_part(param, "lo")), (Some("0.5"), None));
        assert_eq!((keys_part(param), keys_in(param)), (Some("keys=1000"), Some(1000)));
        assert_eq!(
            (without_keys(param), without_keys("burst=3")),
            ("load=0.5".into(), "burst=3".into())
        );
        assert_eq!((keys_in("load=0.5"), param_part("burst=241", "burst")), (None, Some("241")));
    }
}
