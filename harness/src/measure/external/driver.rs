//! A driver's process: its command line split into words as a shell would (quotes kept
//! together) and started without a shell, so that its process is the driver's; its hello read, a cell written
//! to its standard input on a thread of its own, its standard output read line by line on
//! another (so that neither pipe can fill while the harness waits on the other), the last
//! lines of its standard error kept as its last words, and its CPU and threads read from
//! `/proc` while it runs. Whatever happens, [`Session`]'s drop kills and reaps it.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::protocol::{clip, CellInput, Hello, HEADER};
use crate::measure::system::Usage;
use crate::watch::Watch;

/// The longest line a driver may write; a longer one is malformed.
const MAX_LINE_BYTES: usize = 4_096;
/// Lines of its standard error kept as its last words.
const LAST_WORDS: usize = 12;
/// How long a driver has to give its hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the reader looks at the watch while a driver is silent.
const POLL: Duration = Duration::from_millis(50);
/// How long a driver that finished has to exit after its `done`.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// What the reader thread hands over: a line, or the end of the output and why.
enum Output {
    Line(String),
    /// End of output (`None`), or a read error or an over-long line (`Some(why)`).
    End(Option<String>),
}

/// A running driver.
pub struct Session {
    child: Child,
    lines: Receiver<Output>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Whether its standard error reached its end (all its last words are in).
    stderr_ended: Arc<AtomicBool>,
    writer: Option<JoinHandle<()>>,
    /// More lines for its standard input (a consumer's `stop`); dropped, the input ends.
    input: Option<mpsc::Sender<String>>,
    /// The output line number of the last line read (for error messages).
    pub line_number: usize,
    /// Whether its output ended.
    ended: bool,
    /// How long it may be silent before the cell fails.
    silence: Duration,
    watch: Watch,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("pid", &self.child.id()).finish_non_exhaustive()
    }
}

/// Asks the driver `command` for its hello, and lets it go.
pub fn describe(command: &str) -> Result<Hello, String> {
    let mut session =
        Session::spawn(command, format!("{HEADER}\n"), &Watch::default(), HELLO_TIMEOUT)?;
    let hello = session.hello()?;
    session.close_input();
    session.finish()?;
    Ok(hello)
}

impl Session {
    /// Starts `command`, reads its hello and sends it `cell`.
    pub fn start(command: &str, cell: &CellInput, watch: &Watch) -> Result<Self, String> {
        let mut input = format!("{HEADER}\n");
        cell.write(&mut input);
        // A driver that writes nothing for three quarters of the cell's no-progress timeout
        // fails the cell with its last words, before the watchdog stops the cell without them.
        let silence = watch.stall().mul_f64(0.75);
        let mut session = Self::spawn(command, input, watch, silence)?;
        session.input = None; // the cell is all it is sent: its input ends after it
        session.hello()?;
        Ok(session)
    }

    /// Starts `command` as a consumer driver (module `consume`), reads its hello and sends
    /// it `consume`; its input stays open for [`Session::send`].
    pub fn start_consumer(
        command: &str,
        consume: &super::consume::ConsumeInput,
        watch: &Watch,
    ) -> Result<Self, String> {
        let mut input = format!("{HEADER}\n");
        consume.write(&mut input);
        let silence = watch.stall().mul_f64(0.75);
        let mut session = Self::spawn(command, input, watch, silence)?;
        session.hello()?;
        Ok(session)
    }

    /// Sends `line` to its standard input, after what was sent before.
    pub fn send(&self, line: &str) {
        if let Some(input) = &self.input {
            // A driver that exited closed the pipe: its output says why.
            let _ = input.send(format!("{line}\n"));
        }
    }

    /// Kills it at once (SIGKILL to its process group: a crash, nothing of it runs on) and
    /// reaps it; what it wrote before stays to be read.
    pub fn kill(&mut self) {
        self.input = None;
        kill_group(&mut self.child);
    }

    fn spawn(
        command: &str,
        input: String,
        watch: &Watch,
        silence: Duration,
    ) -> Result<Self, String> {
        let words = shlex::split(command)
            .filter(|words| !words.is_empty())
            .ok_or_else(|| format!("`{command}` is not a command line (an unclosed quote?)"))?;
        let mut command = Command::new(&words[0]);
        // A process group of its own: a driver's own children are stopped with it, and the
        // Ctrl-C that stops a run after its cell in progress does not reach it first.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .args(&words[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot start `{}`: {error}", words[0]))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr_pipe = child.stderr.take().expect("piped");
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let kept = Arc::clone(&stderr);
        let stderr_ended = Arc::new(AtomicBool::new(false));
        let ended = Arc::clone(&stderr_ended);
        std::thread::spawn(move || {
            keep_last_words(stderr_pipe, &kept);
            ended.store(true, Ordering::Release);
        });
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || read_lines(stdout, &sender));
        let (more, later) = mpsc::channel::<String>();
        let writer = std::thread::spawn(move || {
            let mut stdin = stdin;
            // A driver that exits early closes the pipe: its output says why.
            let mut written = stdin.write_all(input.as_bytes()).and_then(|()| stdin.flush());
            while let (Ok(()), Ok(line)) = (&written, later.recv()) {
                written = stdin.write_all(line.as_bytes()).and_then(|()| stdin.flush());
            }
        });
        Ok(Self {
            child,
            lines,
            stderr,
            stderr_ended,
            writer: Some(writer),
            input: Some(more),
            line_number: 0,
            ended: false,
            silence,
            watch: watch.clone(),
        })
    }

    /// Reads the hello: the header, then lines up to `ready`.
    fn hello(&mut self) -> Result<Hello, String> {
        let header = self.next_line()?.ok_or_else(|| self.why("it wrote nothing"))?;
        if header != HEADER {
            return Err(self.why(&format!("its first line is `{}`, not `{HEADER}`", clip(&header))));
        }
        let mut lines = Vec::new();
        loop {
            match self.next_line()? {
                Some(line) if line == "ready" => break,
                Some(line) => lines.push(line),
                None => return Err(self.why("its hello ended before `ready`")),
            }
            if lines.len() > 64 {
                return Err(self.why("its hello runs past 64 lines without `ready`"));
            }
        }
        Hello::parse(&lines).map_err(|why| self.why(&why))
    }

    /// The next line of its output, `None` at its end; an error after a silence longer
    /// than allowed, a read error, an over-long line, or a cancelled watch.
    pub fn next_line(&mut self) -> Result<Option<String>, String> {
        self.next_line_within(Duration::MAX).map(Option::flatten)
    }

    /// As [`Session::next_line`], but `Ok(None)` once it wrote nothing for `quiet` (if that
    /// is shorter than its silence limit); `Ok(Some(None))` at its output's end.
    pub fn next_line_within(&mut self, quiet: Duration) -> Result<Option<Option<String>>, String> {
        if self.ended {
            return Ok(Some(None));
        }
        let silent_since = Instant::now();
        loop {
            if self.watch.is_cancelled() {
                return Err("the cell was cancelled".into());
            }
            let output = match self.lines.recv_timeout(POLL) {
                Ok(output) => output,
                Err(RecvTimeoutError::Disconnected) => Output::End(None),
                Err(RecvTimeoutError::Timeout)
                    if silent_since.elapsed() < quiet.min(self.silence) =>
                {
                    continue
                }
                Err(RecvTimeoutError::Timeout) if quiet < self.silence => return Ok(None),
                Err(RecvTimeoutError::Timeout) => {
                    let silence = self.silence.as_secs_f64();
                    let at = self.line_number;
                    return Err(self.why(&format!(
                        "it wrote nothing for {silence:.1} s after output line {at}"
                    )));
                }
            };
            return match output {
                Output::Line(line) => {
                    self.line_number += 1;
                    self.watch.beat();
                    Ok(Some(Some(line)))
                }
                Output::End(None) => {
                    self.ended = true;
                    Ok(Some(None))
                }
                Output::End(Some(why)) => {
                    self.ended = true;
                    Err(self.why(&format!("after output line {}: {why}", self.line_number)))
                }
            };
        }
    }

    /// Closes its standard input (a `describe` session: no cell follows).
    fn close_input(&mut self) {
        self.input = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `what` went wrong: the reason with the driver's exit status (where it exited) and
    /// its last words.
    pub fn why(&mut self, what: &str) -> String {
        // A driver that is ending gets a moment to say why.
        let deadline = Instant::now() + Duration::from_millis(300);
        let mut status = None;
        while status.is_none() && Instant::now() < deadline {
            status = self.child.try_wait().ok().flatten();
            if status.is_none() {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let mut text = format!("driver: {what}");
        if let Some(status) = status {
            text.push_str(&format!("; it exited with {status}"));
        }
        text.push_str(&self.last_words_when(status.is_some()));
        text
    }

    fn last_words(&self) -> String {
        self.last_words_when(true)
    }

    /// Its last words; where it `exited`, once its standard error ended (or half a second).
    fn last_words_when(&self, exited: bool) -> String {
        // Its standard error may still be arriving: a moment for it to end.
        let wait = if exited { Duration::from_millis(500) } else { Duration::from_millis(20) };
        let deadline = Instant::now() + wait;
        while !self.stderr_ended.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let kept = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.is_empty() {
            return "; it wrote nothing on standard error".into();
        }
        let words: Vec<&str> = kept.iter().map(String::as_str).collect();
        format!("; its last words: {}", words.join(" | "))
    }

    /// Waits for it to exit after its output ended: an error where it did not exit within
    /// [`EXIT_WAIT`] (it is killed) or exited with a failure.
    pub fn finish(mut self) -> Result<(), String> {
        self.input = None;
        let deadline = Instant::now() + EXIT_WAIT;
        let ended = loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => break Ok(()),
                Ok(Some(status)) => {
                    break Err(format!("driver: it exited with {status}{}", self.last_words()))
                }
                Ok(None) if Instant::now() < deadline && !self.watch.is_cancelled() => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(None) => {
                    break Err(format!(
                        "driver: it did not exit within {} s of its output's end{}",
                        EXIT_WAIT.as_secs(),
                        self.last_words()
                    ))
                }
                Err(error) => break Err(format!("driver: cannot wait for it: {error}")),
            }
        };
        // Exited (or killed by the drop below): the writer's pipe is closed, so it ends.
        drop(self.writer.take());
        ended
    }

    /// Its CPU time so far (every thread: its GC and compiler threads too), from `/proc`.
    pub fn usage(&self) -> Option<Usage> {
        crate::measure::system::process_usage(self.pid())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// Kills `child`'s process group and reaps it.
fn kill_group(child: &mut Child) {
    if let Ok(group) = libc::pid_t::try_from(child.id()) {
        // SAFETY: `kill` has no memory preconditions; the group is the driver's own (it was
        // started as the leader of a new group), so nothing else is signalled.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    let _ = child.wait();
}

/// Reads `stdout` line by line into `sender` until its end.
fn read_lines(stdout: ChildStdout, sender: &mpsc::Sender<Output>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let output = read_line(&mut reader);
        let ended = matches!(output, Output::End(_));
        if sender.send(output).is_err() || ended {
            return;
        }
    }
}

/// The next line of `reader`, or its end and why.
fn read_line(reader: &mut BufReader<ChildStdout>) -> Output {
    let mut buffer = Vec::new();
    let read = reader.take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut buffer);
    let why = match read {
        Ok(0) => return Output::End(None),
        Err(error) => format!("cannot read its output: {error}"),
        Ok(_) if buffer.last() == Some(&b'\n') => {
            buffer.pop();
            match String::from_utf8(buffer) {
                Ok(line) => return Output::Line(line),
                Err(_) => "a line that is not UTF-8".into(),
            }
        }
        Ok(_) if buffer.len() > MAX_LINE_BYTES => {
            format!("a line longer than {MAX_LINE_BYTES} bytes")
        }
        Ok(_) => format!(
            "its output ends in the middle of a line: `{}`",
            clip(&String::from_utf8_lossy(&buffer))
        ),
    };
    Output::End(Some(why))
}

/// Keeps the last [`LAST_WORDS`] lines of `stderr` in `kept`.
fn keep_last_words(stderr: std::process::ChildStderr, kept: &Mutex<VecDeque<String>>) {
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { return };
        let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() == LAST_WORDS {
            kept.pop_front();
        }
        kept.push_back(clip(&line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_driver_that_is_no_driver_says_so_with_its_last_words() {
        let error = describe("sh -c \"echo hello; echo 'no such protocol' >&2\"").unwrap_err();
        assert!(error.contains("its first line is `hello`"), "{error}");
        assert!(error.contains("its last words: no such protocol"), "{error}");
        let error = describe("printf 'keyed-bench-external 1\\nname x'").unwrap_err();
        assert!(error.contains("ends in the middle of a line"), "{error}");
        let error = describe("sh -c 'exit 3'").unwrap_err();
        assert!(error.contains("it wrote nothing") && error.contains("exit status: 3"), "{error}");
        let error = describe("/no/such/driver").unwrap_err();
        assert!(error.starts_with("cannot start `/no/such/driver`"), "{error}");
        let error = describe("driver 'unclosed").unwrap_err();
        assert!(error.contains("not a command line"), "{error}");
    }
}
