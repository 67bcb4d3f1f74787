//! A standalone broker (`keyed-bench broker`): librdkafka's mock cluster, the broker the
//! Kafka transport's cells run on, started on its own for other clients (kcat, a Java
//! consumer) until it is dropped.
//!
//! librdkafka 2.12.1's mock (`rdkafka_mock.c`) binds every broker to an ephemeral
//! 127.0.0.1 port: no setting or call chooses it (`rd_kafka_mock_broker_set_host_port`
//! only changes the address its metadata advertises). So a chosen port is a forwarder: a
//! listener on 127.0.0.1:`port` that relays each connection to the first broker, whose
//! metadata then sends the client to every broker at its own 127.0.0.1 address.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use parking_lot::Mutex;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::DefaultProducerContext;

use super::MOCK_PARTITION_BYTES;
use crate::pipeline::transport::broker::{BrokerConfig, BrokerTopic};

/// Why a standalone broker did not start.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// `--port` cannot be listened on (in use, or reserved).
    #[error(
        "--port {port}: cannot listen on 127.0.0.1:{port}: {reason}; choose another port, or \
         leave --port out to bootstrap at the brokers' own ports"
    )]
    Port {
        /// The port asked for.
        port: u16,
        /// Why it cannot be used (in the message: no source, which would print it twice).
        reason: io::Error,
    },
    /// librdkafka could not start the mock cluster.
    #[error("cannot start librdkafka's mock cluster: {0}")]
    Start(String),
    /// The mock refused a `--topic`.
    #[error("--topic {name}: the mock cluster cannot create it: {error}")]
    Topic {
        /// The topic.
        name: String,
        /// The mock's error.
        error: String,
    },
}

impl BrokerError {
    /// Whether the error is the input's (exit 2) rather than the broker's.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, Self::Port { .. } | Self::Topic { .. })
    }
}

/// librdkafka's mock cluster, serving until dropped.
pub struct MockBroker {
    /// Dropped first: no client reaches the cluster through it once it goes.
    forwarder: Option<Forwarder>,
    _cluster: MockCluster<'static, DefaultProducerContext>,
    /// Where clients bootstrap.
    bootstrap: String,
    /// The brokers' own addresses.
    brokers: String,
    /// The topics created at start, as `name (N partitions)`.
    topics: Vec<String>,
    count: u32,
}

impl fmt::Debug for MockBroker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockBroker")
            .field("bootstrap", &self.bootstrap)
            .field("brokers", &self.brokers)
            .field("forwarder", &self.forwarder)
            .finish_non_exhaustive()
    }
}

impl MockBroker {
    /// Starts `config.brokers` brokers, creates `config.topics` and, with `config.port`,
    /// listens there. The port is taken first, so that a port in use starts nothing.
    pub fn start(config: &BrokerConfig) -> Result<Self, BrokerError> {
        let listener = config.port.map(listen).transpose()?;
        let count = i32::try_from(config.brokers).unwrap_or(i32::MAX);
        let cluster =
            MockCluster::new(count).map_err(|error| BrokerError::Start(error.to_string()))?;
        for topic in &config.topics {
            create(&cluster, topic, count)?;
        }
        let brokers = cluster.bootstrap_servers();
        let forwarder = match listener {
            Some(listener) => Some(Forwarder::start(listener, first_broker(&brokers)?)?),
            None => None,
        };
        let bootstrap =
            forwarder.as_ref().map_or_else(|| brokers.clone(), |relay| relay.address.to_string());
        let topics = config
            .topics
            .iter()
            .map(|topic| format!("{} ({} partitions)", topic.name, topic.partitions))
            .collect();
        Ok(Self { forwarder, _cluster: cluster, bootstrap, brokers, topics, count: config.brokers })
    }

    /// Where clients bootstrap: `host:port[,host:port...]` (`bootstrap.servers`, kcat's
    /// `-b`).
    pub fn bootstrap_servers(&self) -> &str {
        &self.bootstrap
    }

    /// The brokers' own addresses, as their metadata advertises them.
    pub fn broker_addresses(&self) -> &str {
        &self.brokers
    }

    /// What the broker is and how to use it, for standard error: a few lines.
    pub fn help(&self) -> Vec<String> {
        let version = rdkafka::util::get_rdkafka_version().1;
        // One address is enough to bootstrap from.
        let boot = self.bootstrap.split(',').next().unwrap_or_default();
        let mib = MOCK_PARTITION_BYTES / (1024 * 1024);
        let relay = match &self.forwarder {
            Some(_) => format!(
                "; {boot} relays each connection to broker 1, whose metadata sends clients \
                 on to every broker at its own address"
            ),
            None => String::new(),
        };
        let created = if self.topics.is_empty() {
            String::new()
        } else {
            format!(" Created: {}.", self.topics.join(", "))
        };
        vec![
            format!(
                "keyed-bench broker: librdkafka {version}'s mock cluster, {} broker(s) at {} in \
                 this process{relay}. Nothing is written to disk: what it holds goes when it \
                 stops.",
                self.count, self.brokers
            ),
            "It serves produce (idempotent and transactional too), fetch, list offsets, \
             metadata, offset commit and fetch, and consumer groups (classic and KIP-848); not \
             CreateTopics, DeleteTopics, CreatePartitions, group or config admin requests, TLS \
             or SASL."
                .to_owned(),
            format!(
                "Topics: a metadata request that allows auto-creation (a librdkafka producer's, \
                 kcat -P; a consumer's only with allow.auto.create.topics=true) creates a \
                 missing topic with 4 partitions; a produce to a missing topic fails; --topic \
                 NAME[:PARTITIONS] creates one at start.{created}"
            ),
            format!(
                "Each partition keeps at most about {mib} MiB and 100,000 batches (older \
                 batches are dropped, and its start offset moves up); commit metadata has no \
                 length cap."
            ),
            format!(
                "Try: printf 'k1:v1\\nk2:v2\\n' | kcat -b {boot} -t demo -P -K: ; kcat -b \
                 {boot} -t demo -C -e -K: ; kcat -b {boot} -L"
            ),
            "Ctrl-C (SIGINT) or SIGTERM stops it: exit 130 or 143.".to_owned(),
        ]
    }
}

fn create(
    cluster: &MockCluster<'static, DefaultProducerContext>,
    topic: &BrokerTopic,
    brokers: i32,
) -> Result<(), BrokerError> {
    let partitions = i32::try_from(topic.partitions).unwrap_or(i32::MAX);
    cluster
        .create_topic(&topic.name, partitions, brokers.min(3))
        .map_err(|error| BrokerError::Topic { name: topic.name.clone(), error: error.to_string() })
}

fn listen(port: u16) -> Result<TcpListener, BrokerError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port))
        .map_err(|reason| BrokerError::Port { port, reason })
}

/// The first address of the mock's bootstrap list.
fn first_broker(brokers: &str) -> Result<SocketAddr, BrokerError> {
    let first = brokers.split(',').next().unwrap_or_default();
    first.parse().map_err(|error| {
        BrokerError::Start(format!("the mock's first broker `{first}` is no address: {error}"))
    })
}

/// The connections a forwarder relays, by number: its side of each client's.
type Open = Arc<Mutex<BTreeMap<u64, TcpStream>>>;

/// A listener that relays every connection to one address, until dropped.
#[derive(Debug)]
struct Forwarder {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    open: Open,
    accept: Option<JoinHandle<()>>,
}

impl Forwarder {
    fn start(listener: TcpListener, target: SocketAddr) -> Result<Self, BrokerError> {
        let failed = |error: io::Error| BrokerError::Start(format!("cannot forward: {error}"));
        let address = listener.local_addr().map_err(failed)?;
        let stop = Arc::new(AtomicBool::new(false));
        let open = Open::default();
        let (accept_stop, accept_open) = (Arc::clone(&stop), Arc::clone(&open));
        let accept = thread::Builder::new()
            .name("broker-accept".into())
            .spawn(move || accept_loop(&listener, target, &accept_stop, &accept_open))
            .map_err(failed)?;
        Ok(Self { address, stop, open, accept: Some(accept) })
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes the accept, which then sees the stop.
        let _ = TcpStream::connect(self.address);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        for client in self.open.lock().values() {
            let _ = client.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: &TcpListener, target: SocketAddr, stop: &AtomicBool, open: &Open) {
    let mut next = 0_u64;
    for client in listener.incoming() {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(client) = client else { continue };
        next += 1;
        if relay(next, client, target, open).is_err() {
            // The broker is gone, or no thread could start: the client sees its connection
            // closed, as on a broker that went down.
            if let Some(client) = open.lock().remove(&next) {
                let _ = client.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Relays `client` to `target` on two threads, one per direction.
fn relay(id: u64, client: TcpStream, target: SocketAddr, open: &Open) -> io::Result<()> {
    let upstream = TcpStream::connect(target)?;
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    open.lock().insert(id, client.try_clone()?);
    let (client_in, upstream_out) = (client.try_clone()?, upstream.try_clone()?);
    thread::Builder::new()
        .name("broker-forward".into())
        .spawn(move || pump(client_in, upstream_out))?;
    let open = Arc::clone(open);
    thread::Builder::new().name("broker-forward".into()).spawn(move || {
        pump(upstream, client);
        open.lock().remove(&id);
    })?;
    Ok(())
}

/// Copies `from` into `to` until either ends, then ends both halves it used.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let _ = io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_broker_is_the_first_address() {
        let first = first_broker("127.0.0.1:4001,127.0.0.1:4002").unwrap();
        assert_eq!(first, "127.0.0.1:4001".parse().unwrap());
        assert!(first_broker("").is_err());
    }
}
