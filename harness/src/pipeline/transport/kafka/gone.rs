//! Whether a cell's broker is gone: once one of the transport's requests found no broker
//! answering within `--kafka-timeout-ms`, every later request of the cell fails at once, and
//! the cell's end (the members' closes, the paced producer's last flush, the deletion of its
//! topics and group) waits for no broker. A cell whose cluster died or froze then fails
//! within about the timeout, not once per request still to make: a committer's tick over
//! four partitions alone would otherwise wait four timeouts.

use parking_lot::Mutex;

use super::super::TransportError;

/// The first words of a request that found no broker, once one did.
#[derive(Debug, Default)]
pub struct Gone {
    words: Mutex<Option<String>>,
}

impl Gone {
    /// Notes that a request found no broker answering within the timeout, in `words` (the
    /// first words are kept).
    pub fn note(&self, words: &str) {
        self.words.lock().get_or_insert_with(|| words.to_owned());
    }

    /// Whether a request of the cell found no broker.
    pub fn is_gone(&self) -> bool {
        self.words.lock().is_some()
    }

    /// Fails, naming the first request that found no broker, once one did.
    pub fn check(&self) -> Result<(), TransportError> {
        match &*self.words.lock() {
            None => Ok(()),
            Some(words) => Err(TransportError::Broker(format!(
                "the broker stopped answering earlier in the cell: {words}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_words_are_kept_and_every_check_after_fails_with_them() {
        let gone = Gone::default();
        assert!(gone.check().is_ok() && !gone.is_gone());
        gone.note("no answer to the commit of partition 0 within 5000 ms");
        gone.note("no broker answered for 5000 ms");
        let error = gone.check().unwrap_err().to_string();
        assert!(error.contains("stopped answering earlier in the cell"), "{error}");
        assert!(error.contains("commit of partition 0"), "{error}");
        assert!(gone.is_gone());
    }
}
