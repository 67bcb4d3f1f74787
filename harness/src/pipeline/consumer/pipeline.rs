//! What outlives every consumer of a run: the log, the projection, the tally, the clock.

use super::tally::DeliveryTally;
use crate::measure::timer::Timer;
use crate::pipeline::log::{Record, Topic};
use crate::pipeline::projection::Projection;
use crate::pipeline::retry::RetryTopic;
use crate::pipeline::transport::{ClientCounts, SideTopics, Transport, TransportError};
use crate::watch::Watch;
use std::sync::Arc;
use std::time::Instant;

/// What outlives every consumer of a run: the log as produced, the business state, the
/// tally of deliveries, the timer that ends the handlers' waits, and the epoch that produce
/// times and timelines count from. The group and its commits are the transport's.
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// Every record produced, by partition and offset: a submitted message carries only a
    /// record's place, and the handler reads the record here.
    pub log: Arc<Vec<Vec<Record>>>,
    /// The business state the handlers build.
    pub projection: Arc<Projection>,
    /// How often each record was delivered and applied.
    pub tally: Arc<DeliveryTally>,
    /// Completes the waits of [`Treatment::Wait`](super::Treatment::Wait) and the retries' backoffs.
    pub timer: Timer,
    /// When the pipeline started: a record becomes visible its produce time after it.
    pub epoch: Instant,
    /// Counts every record settled, holds the executors, and stops the consumers once
    /// cancelled (the module docs); one nobody cancels unless [`Pipeline::watched`].
    pub watch: Watch,
    /// The retry and dead-letter topics every incarnation writes to: in-process unless
    /// [`Pipeline::over`] gives the transport's.
    pub side: Arc<dyn SideTopics>,
    /// What the transport's broker clients saw of the cluster ([`Pipeline::over`]); none
    /// without a broker.
    pub clients: Option<Arc<ClientCounts>>,
}

impl Pipeline {
    /// A pipeline over `log` as it stands (produced before it is consumed), with an empty
    /// projection and tally; its epoch is now.
    pub fn new(log: &Topic, timer: Timer) -> Self {
        let log: Vec<Vec<Record>> = (0..log.partitions())
            .map(|partition| log.partition(partition).map(|p| p.records().to_vec()))
            .collect::<Result<_, _>>()
            .unwrap_or_default();
        let ends: Vec<u64> = log.iter().map(|records| records.len() as u64).collect();
        let tally = Arc::new(DeliveryTally::new(&ends));
        let projection = Arc::new(Projection::new());
        let (log, epoch) = (Arc::new(log), Instant::now());
        let side: Arc<dyn SideTopics> = Arc::new(RetryTopic::new());
        Self { log, projection, tally, timer, epoch, watch: Watch::default(), side, clients: None }
    }

    /// The same pipeline over `transport`: writing to its retry and dead-letter topics, and
    /// counting what its clients see of the broker.
    pub fn over<T: Transport>(self, transport: &T) -> Result<Self, TransportError> {
        Ok(Self { side: transport.side_topics()?, clients: transport.client_counts(), ..self })
    }

    /// The same pipeline under `watch`, its cell's.
    pub fn watched(self, watch: Watch) -> Self {
        Self { watch, ..self }
    }

    /// The log's partitions.
    pub fn partitions(&self) -> u32 {
        self.log.len() as u32
    }

    /// The log's records, over every partition.
    pub fn records(&self) -> u64 {
        self.log.iter().map(|records| records.len() as u64).sum()
    }

    /// Nanoseconds since the epoch.
    pub fn now_ns(&self) -> u64 {
        since_ns(self.epoch)
    }
}

pub(super) fn since_ns(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}
