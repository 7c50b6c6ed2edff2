//! The simulated eviction queue: what the controller's sender does with the evictions a cycle plans.
//! It is the controller's queue ([`drain::EvictionQueue`](crate::drain::EvictionQueue), least slack
//! first) sent at the controller's pace ([`Sender`], the drain model's own), and each evicted pod is
//! gone its termination grace period after its request was answered. Other strategies' evictions not
//! sent by their cycle's timeout are given up.

use std::{cmp::Reverse, collections::BinaryHeap};

use jiff::{SignedDuration, Timestamp};

use crate::{
    cluster::ObjectKey,
    drain::{
        self, Pacing, Sender, TokenBucket, Urgency,
        inputs::{InQueue, Queued},
    },
};

/// One eviction waiting to be sent.
#[derive(Clone, Debug)]
pub(super) struct Request {
    pub key: ObjectKey,
    pub urgency: Urgency,
    pub queued_at: Timestamp,
    /// How long the pod takes to go once its eviction is answered.
    pub terminates_in: SignedDuration,
    /// Given up if not sent by then (evictions of strategies other than `tdm`).
    pub give_up_at: Option<Timestamp>,
    /// Where the simulation logs it: its event and its place among the event's evictions.
    pub event: usize,
    pub index: usize,
}

/// What the queue did, in time order within one [`EvictionQueue::advance`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Happened {
    Sent {
        key: ObjectKey,
        event: usize,
        index: usize,
        at: Timestamp,
        answered: Timestamp,
        gone: Timestamp,
    },
    GivenUp {
        key: ObjectKey,
        event: usize,
        index: usize,
        at: Timestamp,
    },
    Gone {
        key: ObjectKey,
        at: Timestamp,
    },
}

pub(super) struct EvictionQueue {
    sender: Sender,
    waiting: drain::EvictionQueue<Request>,
    /// Pods sent and not gone yet: when each goes.
    leaving: BinaryHeap<Reverse<(Timestamp, u64, ObjectKey)>>,
    seq: u64,
    /// Requests in `waiting` that may be given up.
    may_give_up: usize,
}

impl EvictionQueue {
    pub(super) fn new(pacing: Pacing, start: Timestamp) -> EvictionQueue {
        EvictionQueue {
            sender: Sender::new(pacing, start),
            waiting: drain::EvictionQueue::new(),
            leaving: BinaryHeap::new(),
            seq: 0,
            may_give_up: 0,
        }
    }

    /// Queues a request. Everything up to its `queued_at` must have been advanced to already.
    pub(super) fn push(&mut self, request: Request) {
        if request.give_up_at.is_some() {
            self.may_give_up += 1;
        }
        self.waiting.push(request.urgency, request);
    }

    /// The evictions waiting, as the controller's queue would show them to the drain plan.
    pub(super) fn queued(&self) -> Queued {
        self.waiting
            .in_order()
            .into_iter()
            .enumerate()
            .map(|(position, (urgency, request))| {
                (
                    request.key.clone(),
                    InQueue {
                        urgency,
                        position,
                        sent: false,
                    },
                )
            })
            .collect()
    }

    /// The sender's token bucket as it stands.
    pub(super) fn bucket(&self) -> TokenBucket {
        self.sender.bucket().clone()
    }

    /// Nothing waits to be sent and no pod is on its way out.
    #[cfg(test)]
    fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.leaving.is_empty()
    }

    /// Sends, gives up and lets go everything due by `until` (inclusive: a request sent at the instant
    /// of a cycle goes before it plans, as the drain model has it), appending what happened to `out`.
    pub(super) fn advance(&mut self, until: Timestamp, out: &mut Vec<Happened>) {
        loop {
            let send = self
                .waiting
                .peek()
                .map(|(_, request)| self.sender.next_send(request.queued_at));
            let gone = self.leaving.peek().map(|Reverse((at, ..))| *at);
            match (send, gone) {
                (Some(send), gone) if send <= until && gone.is_none_or(|g| send <= g) => {
                    self.send_next(send, out);
                }
                (_, Some(gone)) if gone <= until => {
                    let Some(Reverse((at, _, key))) = self.leaving.pop() else {
                        break;
                    };
                    out.push(Happened::Gone { key, at });
                }
                _ => break,
            }
        }
        self.give_up_overdue(until, out);
    }

    fn send_next(&mut self, at: Timestamp, out: &mut Vec<Happened>) {
        let Some((_, request)) = self.waiting.pop() else {
            return;
        };
        if let Some(deadline) = request.give_up_at {
            self.may_give_up -= 1;
            if at > deadline {
                out.push(Happened::GivenUp {
                    key: request.key,
                    event: request.event,
                    index: request.index,
                    at: deadline,
                });
                return;
            }
        }
        let answered = self.sender.send(at);
        let gone = answered
            .checked_add(request.terminates_in)
            .unwrap_or(Timestamp::MAX);
        self.seq += 1;
        self.leaving
            .push(Reverse((gone, self.seq, request.key.clone())));
        out.push(Happened::Sent {
            key: request.key,
            event: request.event,
            index: request.index,
            at,
            answered,
            gone,
        });
    }

    /// Requests behind others whose time ran out while they waited: given up where they are.
    fn give_up_overdue(&mut self, until: Timestamp, out: &mut Vec<Happened>) {
        if self.may_give_up == 0 {
            return;
        }
        let mut given_up = self
            .waiting
            .take_out(|request| request.give_up_at.is_none_or(|d| d > until));
        self.may_give_up -= given_up.len();
        given_up.sort_by_key(|r| r.give_up_at);
        out.extend(given_up.into_iter().map(|request| Happened::GivenUp {
            at: request.give_up_at.unwrap_or(until),
            key: request.key,
            event: request.event,
            index: request.index,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::at;

    fn request(name: &str, priority: Timestamp, give_up_at: Option<Timestamp>) -> Request {
        Request {
            key: ObjectKey::new("ns", name),
            urgency: Urgency::at(priority),
            queued_at: at(0),
            terminates_in: SignedDuration::from_secs(30),
            give_up_at,
            event: 0,
            index: 0,
        }
    }

    fn queue(qps: f64, burst: u32) -> EvictionQueue {
        EvictionQueue::new(
            Pacing {
                qps,
                burst,
                concurrency: 4,
                request: SignedDuration::from_millis(100),
            },
            at(0),
        )
    }

    fn sent(out: &[Happened]) -> Vec<(String, Timestamp)> {
        out.iter()
            .filter_map(|h| match h {
                Happened::Sent { at, gone, .. } => Some((format!("sent {gone}"), *at)),
                Happened::GivenUp { key, at, .. } => Some((format!("given up {}", key.name), *at)),
                Happened::Gone { .. } => None,
            })
            .collect()
    }

    #[test]
    fn the_least_slack_goes_first_and_pods_go_their_grace_after_the_answer() {
        let mut queue = queue(1.0, 1);
        queue.push(request("late", at(900), None));
        queue.push(request("early", at(600), None));
        let mut out = Vec::new();
        queue.advance(at(10), &mut out);
        // One at once (the burst), the next a second later.
        assert_eq!(
            out[..2],
            [
                Happened::Sent {
                    key: ObjectKey::new("ns", "early"),
                    event: 0,
                    index: 0,
                    at: at(0),
                    answered: at(0) + SignedDuration::from_millis(100),
                    gone: at(30) + SignedDuration::from_millis(100)
                },
                Happened::Sent {
                    key: ObjectKey::new("ns", "late"),
                    event: 0,
                    index: 0,
                    at: at(1),
                    answered: at(1) + SignedDuration::from_millis(100),
                    gone: at(31) + SignedDuration::from_millis(100)
                },
            ]
        );
        assert!(!queue.is_idle(), "both pods are still terminating");
        queue.advance(at(40), &mut out);
        let gone: Vec<&str> = out
            .iter()
            .filter_map(|h| match h {
                Happened::Gone { key, .. } => Some(&*key.name),
                _ => None,
            })
            .collect();
        assert_eq!(gone, ["early", "late"]);
        assert!(queue.is_idle());
    }

    #[test]
    fn other_strategies_evictions_wait_behind_closing_zones_and_are_given_up_at_their_deadline() {
        let mut queue = queue(1.0, 1);
        queue.push(request("lnu", Timestamp::MAX, Some(at(120))));
        for i in 0..300 {
            queue.push(request(&format!("z{i}"), at(600), None));
        }
        let mut out = Vec::new();
        queue.advance(at(119), &mut out);
        assert_eq!(sent(&out).len(), 120, "the closing zone's first 120");
        queue.advance(at(121), &mut out);
        assert!(
            sent(&out).contains(&("given up lnu".to_owned(), at(120))),
            "{out:?}"
        );
        out.clear();
        queue.advance(at(1_000), &mut out);
        assert!(sent(&out).iter().all(|(what, _)| what.starts_with("sent")));
        assert_eq!(sent(&out).len(), 300 - 122);
    }
}
