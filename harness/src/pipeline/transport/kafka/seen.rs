//! What a cell's Kafka clients see of the cluster: leader changes, retried requests and
//! lost connections, read from librdkafka's statistics, which every client of a cell on a
//! cluster reports every [`STATISTICS_INTERVAL_MS`] to its context. The mock's cells report
//! none: they are measured (a report is built and parsed on the polling thread), and no
//! broker of theirs changes unless a test takes them all down.
//!
//! librdkafka's counters are cumulative per client and per broker connection; each client
//! keeps the values of its previous report and adds what grew since to the cell's
//! [`ClientCounts`]. A partition's leader is the broker id of its latest report: a change
//! from one broker to another counts once per client that saw it (a leader unknown in
//! between, `-1`, is not a change of its own).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rdkafka::statistics::Statistics;
use rdkafka::ClientConfig;

use super::super::{ClientCounts, ClientEvents};

/// How often every client of a cell on a cluster reports its statistics, in milliseconds.
pub const STATISTICS_INTERVAL_MS: &str = "100";

/// Asks `config`'s client for its statistics when `watched` (a cell on a cluster).
pub fn report_statistics(config: &mut ClientConfig, watched: bool) {
    if watched {
        config.set("statistics.interval.ms", STATISTICS_INTERVAL_MS);
    }
}

/// Which of a client's retried requests count as retried produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A producer: its retries are retried produces.
    Producer,
    /// A member of the group: fetches, commits, offset reads and group requests.
    Member,
}

/// One client's view: its previous report's counters, and the counts it adds to.
#[derive(Debug)]
pub struct Seen {
    role: Role,
    counts: Arc<ClientCounts>,
    last: Mutex<Last>,
}

#[derive(Debug, Default)]
struct Last {
    /// Per broker connection (librdkafka's name for it): retries and disconnects so far.
    brokers: BTreeMap<String, (u64, u64)>,
    /// Per topic and partition: its leader's broker id.
    leaders: BTreeMap<(String, i32), i32>,
}

impl Seen {
    /// A client in `role` whose reports add to `counts`.
    pub fn new(role: Role, counts: Arc<ClientCounts>) -> Self {
        Self { role, counts, last: Mutex::default() }
    }

    /// A client's report: what grew since its previous one is added to the counts.
    pub fn report(&self, statistics: &Statistics) {
        let mut last = self.last.lock();
        let (mut retries, mut disconnects) = (0, 0);
        for (name, broker) in &statistics.brokers {
            let now = (broker.txretries, broker.disconnects.map_or(0, |count| count.max(0) as u64));
            let before = last.brokers.insert(name.clone(), now).unwrap_or_default();
            retries += now.0.saturating_sub(before.0);
            disconnects += now.1.saturating_sub(before.1);
        }
        // Partition -1 is librdkafka's internal one for records not yet partitioned; a
        // leader of -1 is not known.
        let led = statistics.topics.iter().flat_map(|(topic, partitions)| {
            partitions
                .partitions
                .values()
                .filter(|partition| partition.partition >= 0 && partition.leader >= 0)
                .map(move |partition| ((topic.clone(), partition.partition), partition.leader))
        });
        let mut leader_changes = 0;
        for (place, leader) in led {
            let before = last.leaders.insert(place, leader);
            leader_changes += u64::from(before.is_some_and(|before| before != leader));
        }
        let (produce_retries, request_retries) = match self.role {
            Role::Producer => (retries, 0),
            Role::Member => (0, retries),
        };
        self.counts.add(ClientEvents {
            leader_changes,
            produce_retries,
            request_retries,
            disconnects,
            client_errors: 0,
        });
    }

    /// An error a member's poll reported.
    pub fn error(&self) {
        self.counts.add(ClientEvents { client_errors: 1, ..ClientEvents::default() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// librdkafka's statistics of one client with one broker connection and one partition.
    fn report(retries: u64, disconnects: i64, leader: i32) -> Statistics {
        let json = format!(
            r#"{{"name":"c","client_id":"c","type":"consumer","ts":0,"time":0,"age":0,
            "replyq":0,"msg_cnt":0,"msg_size":0,"msg_max":0,"msg_size_max":0,"tx":0,
            "tx_bytes":0,"rx":0,"rx_bytes":0,"txmsgs":0,"txmsg_bytes":0,"rxmsgs":0,
            "rxmsg_bytes":0,"simple_cnt":0,"metadata_cache_cnt":0,
            "brokers":{{"127.0.0.1:9092/1":{{"name":"127.0.0.1:9092/1","nodeid":1,
              "nodename":"127.0.0.1:9092","source":"learned","state":"UP","stateage":0,
              "outbuf_cnt":0,"outbuf_msg_cnt":0,"waitresp_cnt":0,"waitresp_msg_cnt":0,
              "tx":0,"txbytes":0,"txerrs":0,"txretries":{retries},"txidle":0,
              "req_timeouts":0,"rx":0,"rxbytes":0,"rxerrs":0,"rxcorriderrs":0,"rxpartial":0,
              "rxidle":0,"zbuf_grow":0,"buf_grow":0,"wakeups":0,"connects":1,
              "disconnects":{disconnects},"req":{{}},"toppars":{{}}}}}},
            "topics":{{"t":{{"topic":"t","age":0,"metadata_age":0,
              "batchsize":{{"min":0,"max":0,"avg":0,"sum":0,"stddev":0,"p50":0,"p75":0,
                "p90":0,"p95":0,"p99":0,"p99_99":0,"outofrange":0,"hdrsize":0,"cnt":0}},
              "batchcnt":{{"min":0,"max":0,"avg":0,"sum":0,"stddev":0,"p50":0,"p75":0,
                "p90":0,"p95":0,"p99":0,"p99_99":0,"outofrange":0,"hdrsize":0,"cnt":0}},
              "partitions":{{"0":{{"partition":0,"broker":{leader},"leader":{leader},
                "desired":true,"unknown":false,"msgq_cnt":0,"msgq_bytes":0,
                "xmit_msgq_cnt":0,"xmit_msgq_bytes":0,"fetchq_cnt":0,"fetchq_size":0,
                "fetch_state":"active","query_offset":0,"next_offset":0,"app_offset":0,
                "stored_offset":0,"committed_offset":0,"eof_offset":0,"lo_offset":0,
                "hi_offset":0,"ls_offset":0,"consumer_lag":0,"consumer_lag_stored":0,
                "txmsgs":0,"txbytes":0,"rxmsgs":0,"rxbytes":0,"msgs":0,"rx_ver_drops":0,
                "msgs_inflight":0,"next_ack_seq":0,"next_err_seq":0,"acked_msgid":0}}}}}}}}}}"#
        );
        serde_json::from_str(&json).expect("librdkafka's statistics")
    }

    #[test]
    fn growth_since_the_previous_report_is_counted_and_a_leader_change_once() {
        let counts = Arc::new(ClientCounts::default());
        let seen = Seen::new(Role::Producer, Arc::clone(&counts));
        seen.report(&report(2, 0, 1));
        seen.report(&report(2, 0, 1));
        assert_eq!(counts.read(), ClientEvents { produce_retries: 2, ..Default::default() });
        // The leader goes (unknown), then another broker leads: one change.
        seen.report(&report(5, 1, -1));
        seen.report(&report(5, 1, 3));
        seen.report(&report(5, 1, 3));
        let events = counts.read();
        assert_eq!(events.leader_changes, 1, "{events:?}");
        assert_eq!((events.produce_retries, events.disconnects), (5, 1));

        let member = Seen::new(Role::Member, Arc::clone(&counts));
        member.report(&report(4, 0, 3));
        member.error();
        let events = counts.read();
        assert_eq!((events.request_retries, events.produce_retries), (4, 5));
        assert_eq!(events.client_errors, 1);
    }
}
