//! `keyed-bench broker` end to end: in a build with `--features kafka` it prints its
//! bootstrap line first, serves on it and exits 130 on SIGINT; in a build without, it exits
//! 2 saying how to build it; bad flags exit 2 in either.

use std::process::{Command, Output};

/// Exit status for bad input (flags, files).
const BAD_INPUT: i32 = 2;

fn keyed_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench")).args(args).output().expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_broker_count_out_of_range_exits_2_naming_the_flag() {
    for (flag, value) in [("--brokers", "0"), ("--brokers", "17"), ("--port", "0")] {
        let output = keyed_bench(&["broker", flag, value]);
        assert_eq!(output.status.code(), Some(BAD_INPUT), "{}", stderr(&output));
        assert!(
            stderr(&output).starts_with(&format!("error: {flag} must be")),
            "{}",
            stderr(&output)
        );
        assert!(output.stdout.is_empty());
    }
}

#[cfg(not(feature = "kafka"))]
#[test]
fn a_build_without_kafka_exits_2_saying_how_to_build_it() {
    let output = keyed_bench(&["broker"]);
    assert_eq!(output.status.code(), Some(BAD_INPUT), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.starts_with("error: `keyed-bench broker` is not in this build"), "{message}");
    assert!(message.contains("--features kafka"), "{message}");
    assert!(output.stdout.is_empty());
}

#[cfg(feature = "kafka")]
mod served {
    use std::io::{BufRead, BufReader};
    use std::net::{TcpListener, TcpStream};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use super::{keyed_bench, stderr, BAD_INPUT};

    fn start(args: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
            .arg("broker")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts")
    }

    /// The first line of the child's standard output.
    fn first_line(child: &mut Child) -> String {
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        BufReader::new(stdout).read_line(&mut line).expect("a line");
        line
    }

    fn signal(child: &Child, signal: libc::c_int) {
        let pid = libc::pid_t::try_from(child.id()).expect("a pid");
        // SAFETY: kill(2) only sends a signal; `pid` is our own child, still unreaped.
        let sent = unsafe { libc::kill(pid, signal) };
        assert_eq!(sent, 0, "kill failed");
    }

    /// Waits up to 30 s for the child to exit.
    fn exit_code(child: &mut Child) -> Option<i32> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = child.try_wait().expect("wait") {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        panic!("the broker did not stop within 30 s of the signal");
    }

    #[test]
    fn the_broker_prints_its_bootstrap_first_serves_it_and_stops_on_sigint() {
        let mut child = start(&["--brokers", "1"]);
        let line = first_line(&mut child);
        let port = line
            .trim_end()
            .strip_prefix("bootstrap=127.0.0.1:")
            .and_then(|port| port.parse::<u16>().ok())
            .unwrap_or_else(|| panic!("not `bootstrap=127.0.0.1:<port>`: {line:?}"));
        TcpStream::connect(("127.0.0.1", port)).expect("the broker listens on its port");
        signal(&child, libc::SIGINT);
        assert_eq!(exit_code(&mut child), Some(130));
        let output = child.wait_with_output().expect("stderr");
        let said = stderr(&output);
        assert!(said.contains("librdkafka") && said.contains("mock cluster"), "{said}");
        assert!(said.contains("SIGINT: the broker stopped"), "{said}");
    }

    #[test]
    fn a_chosen_port_is_the_bootstrap_and_sigterm_exits_143() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = start(&["--port", &port.to_string(), "--topic", "demo:3"]);
        assert_eq!(first_line(&mut child), format!("bootstrap=127.0.0.1:{port}\n"));
        TcpStream::connect(("127.0.0.1", port)).expect("the relay listens");
        signal(&child, libc::SIGTERM);
        assert_eq!(exit_code(&mut child), Some(143));
    }

    #[test]
    fn a_port_in_use_exits_2_and_prints_no_bootstrap() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port().to_string();
        let output = keyed_bench(&["broker", "--port", &port]);
        assert_eq!(output.status.code(), Some(BAD_INPUT), "{}", stderr(&output));
        assert!(stderr(&output).starts_with(&format!("error: --port {port}: cannot listen")));
        assert!(output.stdout.is_empty());
    }
}
