//! The in-process back-end, the default: no broker, the same semantics within one process.
//!
//! Each subscription is a bounded queue (a tokio `mpsc` channel of
//! [`IN_PROCESS_QUEUE_CAPACITY`]) that outlives its consumers, so events published while no
//! consumer runs wait for the next one; a publish waits while a queue is full. Competing
//! consumers of one subscription take batches of up to `prefetch` events in turn. Retries wait
//! on a timer and go to the back of the queue; dead letters are kept in memory per
//! subscription. Nothing survives the process.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::task::Poll;

use futures::stream::FuturesUnordered;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::config::SubscriptionConfig;
use super::consume::{self, Verdict};
use super::contract::{ContractDescriptor, EventHandler};
use super::dead_letter::DeadLetter;
use super::envelope::Envelope;
use super::error::PublishError;
use super::handled_once::HandledOnceGate;
use super::subscription::Subscription;

/// Events one in-process subscription queue holds before a publish waits for room.
pub const IN_PROCESS_QUEUE_CAPACITY: usize = 65_536;

/// The in-process back-end's state: each contract's subscription queues.
#[derive(Default)]
pub(crate) struct InProcess {
    /// Per contract, its queues; copied on write so a publish only clones an `Arc`.
    by_contract: RwLock<HashMap<String, Arc<[Arc<Queue>]>>>,
}

/// One subscription.
struct Queue {
    name: String,
    sender: mpsc::Sender<Envelope>,
    receiver: tokio::sync::Mutex<mpsc::Receiver<Envelope>>,
    dead: Mutex<VecDeque<DeadLetter>>,
}

impl InProcess {
    pub(crate) async fn publish(&self, envelope: Envelope) -> Result<(), PublishError> {
        let queues = self
            .by_contract
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(envelope.contract.as_ref())
            .cloned();
        let Some(queues) = queues else {
            return Ok(());
        };
        let (last, others) = match queues.split_last() {
            Some(split) => split,
            None => return Ok(()),
        };
        let subscriptions = queues.len();
        // The bus closing mid fan-out leaves the event in the queues before the failed one.
        let closed = |delivered: usize| {
            match delivered {
            0 => PublishError::Closed,
            _ => PublishError::Unconfirmed(format!(
                "the bus closed after the event reached {delivered} of its {subscriptions} subscriptions"
            )),
        }
        };
        for (delivered, queue) in others.iter().enumerate() {
            queue
                .sender
                .send(envelope.clone())
                .await
                .map_err(|_| closed(delivered))?;
        }
        last.sender
            .send(envelope)
            .await
            .map_err(|_| closed(others.len()))
    }

    /// The queue of `subscription` on `contract`, created on first use.
    fn queue(&self, contract: &ContractDescriptor, subscription: &str) -> Arc<Queue> {
        let mut by_contract = self
            .by_contract
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let queues = by_contract
            .entry(contract.name.to_owned())
            .or_insert_with(|| Arc::from(Vec::new()));
        if let Some(queue) = queues.iter().find(|queue| queue.name == subscription) {
            return Arc::clone(queue);
        }
        let (sender, receiver) = mpsc::channel(IN_PROCESS_QUEUE_CAPACITY);
        let queue = Arc::new(Queue {
            name: subscription.to_owned(),
            sender,
            receiver: tokio::sync::Mutex::new(receiver),
            dead: Mutex::new(VecDeque::new()),
        });
        let mut grown: Vec<Arc<Queue>> = queues.iter().cloned().collect();
        grown.push(Arc::clone(&queue));
        *queues = Arc::from(grown);
        queue
    }

    pub(crate) fn declare(&self, contract: &ContractDescriptor, subscription: &str) {
        self.queue(contract, subscription);
    }

    pub(crate) fn delete(&self, contract: &ContractDescriptor, subscription: &str) {
        let mut by_contract = self
            .by_contract
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(queues) = by_contract.get_mut(contract.name) {
            let kept: Vec<Arc<Queue>> = queues
                .iter()
                .filter(|queue| queue.name != subscription)
                .cloned()
                .collect();
            *queues = Arc::from(kept);
        }
    }

    pub(crate) fn subscribe(
        &self,
        subscription: &str,
        handler: Arc<dyn EventHandler>,
        config: SubscriptionConfig,
    ) -> Subscription {
        let queue = self.queue(handler.contract(), subscription);
        let stop = CancellationToken::new();
        let consumer = tokio::spawn(consume_queue(queue, handler, config, stop.clone()));
        Subscription::new(stop, consumer)
    }

    pub(crate) fn take_dead_letters(
        &self,
        contract: &ContractDescriptor,
        subscription: &str,
        max: usize,
    ) -> Vec<DeadLetter> {
        let queue = self.queue(contract, subscription);
        let mut dead = queue.dead.lock().unwrap_or_else(PoisonError::into_inner);
        let take = max.min(dead.len());
        dead.drain(..take).collect()
    }
}

async fn consume_queue(
    queue: Arc<Queue>,
    handler: Arc<dyn EventHandler>,
    config: SubscriptionConfig,
    stop: CancellationToken,
) {
    let prefetch = usize::from(config.prefetch.max(1));
    let window = config
        .handled_once
        .as_ref()
        .map(|window| HandledOnceGate::new(window, handler.contract().name, &queue.name));
    let mut batch = Vec::with_capacity(prefetch);
    let mut waiting = FuturesUnordered::new();
    // The box of the last event that finished at its first poll, to settle the next one in.
    let mut spare = None;
    loop {
        // Competing consumers take the receiver in turn; each holds it only while it waits
        // for its next batch.
        let taken = tokio::select! {
            biased;
            () = stop.cancelled() => return,
            mut receiver = queue.receiver.lock() => tokio::select! {
                biased;
                () = stop.cancelled() => return,
                taken = receiver.recv_many(&mut batch, prefetch) => taken,
            },
        };
        if taken == 0 {
            return;
        }
        // The batch's events are handled concurrently (a batch holds at most `prefetch`).
        // Each is polled once in place: most handlers finish there, and only one that waits
        // joins `waiting` (pushing every event through it cost about 500 instructions an
        // event, a seventh of its handling).
        // An event that finishes there hands its box on to the next: one allocation per
        // event that waits, not per event.
        for envelope in batch.drain(..) {
            let settling = settle(&queue, &*handler, &config, window.as_ref(), envelope);
            let mut settling = match spare.take() {
                Some(mut boxed) => {
                    Pin::set(&mut boxed, settling);
                    boxed
                }
                None => Box::pin(settling),
            };
            if poll_once(settling.as_mut()).await.is_pending() {
                waiting.push(settling);
            } else {
                spare = Some(settling);
            }
        }
        while waiting.next().await.is_some() {}
    }
}

/// Polls `future` once, in the calling task.
async fn poll_once<F: Future + ?Sized>(mut future: Pin<&mut F>) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await
}

async fn settle(
    queue: &Arc<Queue>,
    handler: &dyn EventHandler,
    config: &SubscriptionConfig,
    window: Option<&HandledOnceGate>,
    mut envelope: Envelope,
) {
    match consume::handle(handler, &envelope, &config.retry, window).await {
        Verdict::Done => {}
        Verdict::Retry {
            delay, attempts, ..
        } => {
            envelope.attempts = attempts;
            let sender = queue.sender.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                // The queue lives as long as the bus; a send fails only once it is gone.
                let _ = sender.send(envelope).await;
            });
        }
        Verdict::DeadLetter {
            attempts,
            reason,
            error,
        } => {
            envelope.attempts = attempts;
            queue
                .dead
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push_back(DeadLetter {
                    envelope,
                    reason,
                    error,
                });
        }
    }
}
