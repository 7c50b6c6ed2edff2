//! Memory lent to large request bodies while they arrive.
//!
//! A body gets its share once its first [`STEP`] has arrived, for the whole length it declares, so
//! that it is read to its end without waiting again (bodies that each held part of the memory and
//! waited for more would wait on each other). A client that declares much and sends little holds
//! nothing. One that sends a first step and then trickles keeps its share only until another body
//! needs the memory: a holder falling behind (no step in [`STEP_TIME`], or a pace that cannot finish
//! before its deadline) is cut off, and its request answered 408. Bodies waiting for a share are
//! served from the address with the fewest bodies in first, then in order of arrival: the fairness
//! between addresses that the connection slots have.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use tokio::{sync::Notify, time::Instant};
use tokio_util::sync::CancellationToken;

/// What a body must have sent before it holds a share, and what a holder must go on sending every
/// [`STEP_TIME`]: the API server sends a review at once, megabytes a second; 64 KiB a second is a
/// client that trickles. Bytes that arrive before the share are at most this plus one read, per
/// connection (as hyper's own buffer).
pub(crate) const STEP: usize = 64 * 1024;

/// How long a holder may go without a [`STEP`] of its body before another body may take its share.
const STEP_TIME: Duration = Duration::from_secs(1);

/// How often a waiting body looks again at the holders: they fall behind as time passes, not only
/// when something is given back.
const RECHECK: Duration = Duration::from_millis(100);

/// A request body cut off: another body took its share.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Cut;

/// The memory lent to bodies while they arrive, in bytes.
pub(crate) struct Intake {
    total: usize,
    table: Mutex<Table>,
    /// Woken when memory is given back or the next waiter changes.
    changed: Notify,
}

#[derive(Default)]
struct Table {
    held: usize,
    next_id: u64,
    holders: HashMap<u64, Holder>,
    waiting: Vec<Waiter>,
}

/// A body holding its share: what is known of its pace.
#[derive(Clone, Debug)]
struct Holder {
    address: IpAddr,
    /// When it got its share, and how much of it had arrived then: its pace is counted from there,
    /// so that time spent waiting for the share is not held against it.
    since: Instant,
    base: usize,
    /// When its request is answered 408 anyway.
    deadline: Instant,
    /// The bytes it holds: the length it declared.
    length: usize,
    received: usize,
    /// When it last completed a [`STEP`] (or got its share).
    stepped_at: Instant,
    cut: CancellationToken,
}

#[derive(Clone, Copy, Debug)]
struct Waiter {
    id: u64,
    address: IpAddr,
}

/// Whether `holder` may lose its share to a body that needs it at `now`: it has sent less than a
/// [`STEP`] in the last [`STEP_TIME`], or, held for a [`STEP_TIME`] at least, at its pace since it
/// got its share it would not arrive before its deadline. A body that has arrived in full never falls
/// behind.
fn falling_behind(holder: &Holder, now: Instant) -> bool {
    if holder.received >= holder.length {
        return false;
    }
    if now.saturating_duration_since(holder.stepped_at) >= STEP_TIME {
        return true;
    }
    let elapsed = now.saturating_duration_since(holder.since);
    if elapsed < STEP_TIME {
        return false;
    }
    // At `sent` bytes in `elapsed`, the rest takes `rest * elapsed / sent`; compared without
    // division, in microseconds.
    let sent = holder.received.saturating_sub(holder.base) as u128;
    let left = holder.deadline.saturating_duration_since(now).as_micros();
    let rest = (holder.length - holder.received) as u128;
    rest * elapsed.as_micros() > sent * left
}

/// The holders to cut off so that `need` bytes fit beside the `free` ones: those falling behind,
/// from the address holding the most first and the largest share first within it, until there is
/// room. `None` when cutting all of them would not make room (then none is cut).
fn to_cut(holders: &[(u64, &Holder)], free: usize, need: usize, now: Instant) -> Option<Vec<u64>> {
    if need <= free {
        return Some(Vec::new());
    }
    let mut by_address: HashMap<IpAddr, usize> = HashMap::new();
    for (_, holder) in holders {
        *by_address.entry(holder.address).or_default() += holder.length;
    }
    let mut behind: Vec<(u64, &Holder)> = holders
        .iter()
        .filter(|(_, holder)| falling_behind(holder, now))
        .copied()
        .collect();
    behind.sort_by(|(a_id, a), (b_id, b)| {
        by_address[&b.address]
            .cmp(&by_address[&a.address])
            .then(b.length.cmp(&a.length))
            .then(a_id.cmp(b_id))
    });
    let mut room = free;
    let mut cut = Vec::new();
    for (id, holder) in behind {
        if room >= need {
            break;
        }
        room += holder.length;
        cut.push(id);
    }
    (room >= need).then_some(cut)
}

/// The waiter to serve next: the one whose address has the fewest bodies in the intake (holding or
/// waiting), then holds the least; the first to arrive among equals. An API server has a few calls
/// under way; an address flooding the port has many, and they wait behind everyone else's.
fn next_waiter(waiting: &[Waiter], holders: &HashMap<u64, Holder>) -> Option<u64> {
    let mut by_address: HashMap<IpAddr, (usize, usize)> = HashMap::new();
    for holder in holders.values() {
        let (count, bytes) = by_address.entry(holder.address).or_default();
        *count += 1;
        *bytes += holder.length;
    }
    for waiter in waiting {
        by_address.entry(waiter.address).or_default().0 += 1;
    }
    // `min_by_key` keeps the first of equals: the earliest arrival.
    waiting
        .iter()
        .min_by_key(|waiter| by_address[&waiter.address])
        .map(|waiter| waiter.id)
}

impl Intake {
    pub(crate) fn new(bytes: usize) -> Arc<Intake> {
        Arc::new(Intake {
            total: bytes.max(1),
            table: Mutex::new(Table::default()),
            changed: Notify::new(),
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // Nothing panics while holding the lock; a poisoned table is still consistent.
        self.table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Bytes lent out now.
    pub(crate) fn held(&self) -> usize {
        self.table().held
    }

    /// A body of `length` bytes (at most the whole intake is lent to one) from `address`, whose
    /// request is answered 408 at `deadline`. It holds nothing yet.
    pub(crate) fn arrival(
        self: &Arc<Self>,
        address: IpAddr,
        deadline: Instant,
        length: usize,
    ) -> Arrival {
        let id = {
            let mut table = self.table();
            table.next_id += 1;
            table.next_id
        };
        Arrival {
            intake: Arc::clone(self),
            id,
            address,
            deadline,
            length: length.clamp(1, self.total),
            cut: CancellationToken::new(),
            holding: false,
        }
    }
}

/// One body's place in the intake: given back when dropped.
pub(crate) struct Arrival {
    intake: Arc<Intake>,
    id: u64,
    address: IpAddr,
    deadline: Instant,
    length: usize,
    cut: CancellationToken,
    holding: bool,
}

impl Arrival {
    /// Whether it holds its share (the whole length it declared).
    pub(crate) fn holding(&self) -> bool {
        self.holding
    }

    /// Cancelled when another body has taken this one's share.
    pub(crate) fn cut_off(&self) -> &CancellationToken {
        &self.cut
    }

    /// `received` bytes of the body have arrived in all. Once its first [`STEP`] is in (or the whole
    /// body, if shorter), waits for its share; `Err(Cut)` once another body has taken it.
    pub(crate) async fn arrived(&mut self, received: usize) -> Result<(), Cut> {
        if self.cut.is_cancelled() {
            return Err(Cut);
        }
        if self.holding {
            let mut table = self.intake.table();
            let Some(holder) = table.holders.get_mut(&self.id) else {
                return Err(Cut);
            };
            if received / STEP > holder.received / STEP {
                holder.stepped_at = Instant::now();
            }
            holder.received = received;
            return Ok(());
        }
        if received < STEP.min(self.length) {
            return Ok(());
        }
        self.take_share(received).await;
        Ok(())
    }

    async fn take_share(&mut self, received: usize) {
        loop {
            let changed = self.intake.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.try_take(received) {
                self.holding = true;
                // The next waiter may be served now.
                self.intake.changed.notify_waiters();
                return;
            }
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep(RECHECK) => {}
            }
        }
    }

    /// Takes the share if this body is the next to be served and there is room, cutting off holders
    /// that fall behind to make it.
    fn try_take(&self, received: usize) -> bool {
        let now = Instant::now();
        let mut table = self.intake.table();
        if !table.waiting.iter().any(|waiter| waiter.id == self.id) {
            table.waiting.push(Waiter {
                id: self.id,
                address: self.address,
            });
        }
        if next_waiter(&table.waiting, &table.holders) != Some(self.id) {
            return false;
        }
        let free = self.intake.total - table.held;
        let cut = {
            let holders: Vec<(u64, &Holder)> =
                table.holders.iter().map(|(id, h)| (*id, h)).collect();
            match to_cut(&holders, free, self.length, now) {
                Some(cut) => cut,
                None => return false,
            }
        };
        for id in cut {
            if let Some(holder) = table.holders.remove(&id) {
                table.held -= holder.length;
                holder.cut.cancel();
            }
        }
        table.waiting.retain(|waiter| waiter.id != self.id);
        table.held += self.length;
        table.holders.insert(
            self.id,
            Holder {
                address: self.address,
                since: now,
                base: received,
                deadline: self.deadline,
                length: self.length,
                received,
                stepped_at: now,
                cut: self.cut.clone(),
            },
        );
        true
    }
}

impl Drop for Arrival {
    fn drop(&mut self) {
        let mut table = self.intake.table();
        if let Some(holder) = table.holders.remove(&self.id) {
            table.held -= holder.length;
        }
        table.waiting.retain(|waiter| waiter.id != self.id);
        drop(table);
        self.intake.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;

    const MIB: usize = 1024 * 1024;

    fn now() -> Instant {
        static NOW: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        *NOW.get_or_init(Instant::now)
    }

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    /// A holder that got its share 2 s before [`now`], 8 s before its deadline.
    fn holder(address: u8, length: usize, received: usize, since_step: Duration) -> Holder {
        let now = now();
        Holder {
            address: ip(address),
            since: now - Duration::from_secs(2),
            base: 0,
            deadline: now + Duration::from_secs(8),
            length,
            received,
            stepped_at: now - since_step,
            cut: CancellationToken::new(),
        }
    }

    #[test]
    fn a_holder_falls_behind_when_it_stops_or_cannot_finish_in_time() {
        let now = now();
        let steady = holder(1, 6 * MIB, 3 * MIB, Duration::from_millis(10));
        assert!(!falling_behind(&steady, now));
        let stopped = holder(1, 6 * MIB, 3 * MIB, STEP_TIME);
        assert!(falling_behind(&stopped, now));
        // 200 KiB in 2 s: the other 5.8 MiB would take 60 s, past the deadline 8 s away.
        let slow = holder(1, 6 * MIB, 200 * 1024, Duration::from_millis(10));
        assert!(falling_behind(&slow, now));
        let complete = holder(1, 6 * MIB, 6 * MIB, Duration::from_secs(5));
        assert!(!falling_behind(&complete, now));
    }

    #[test]
    fn room_is_made_from_the_largest_holder_address_and_only_when_enough() {
        let now = now();
        let stalled = Duration::from_secs(2);
        let (a, b, c, d) = (
            holder(1, 2 * MIB, STEP, stalled),
            holder(2, 3 * MIB, STEP, stalled),
            holder(2, MIB, STEP, stalled),
            holder(3, 5 * MIB, MIB, Duration::ZERO),
        );
        let holders = [(1, &a), (2, &b), (3, &c), (4, &d)];
        assert_eq!(to_cut(&holders, 6 * MIB, 6 * MIB, now), Some(vec![]));
        // Address 2 holds the most (4 MiB): its largest share goes first.
        assert_eq!(to_cut(&holders, MIB, 4 * MIB, now), Some(vec![2]));
        assert_eq!(to_cut(&holders, MIB, 5 * MIB, now), Some(vec![2, 3]));
        assert_eq!(to_cut(&holders, MIB, 7 * MIB, now), Some(vec![2, 3, 1]));
        // The holder keeping pace is never cut: 8 MiB cannot be made.
        assert_eq!(to_cut(&holders, MIB, 8 * MIB, now), None);
    }

    #[test]
    fn waiters_from_the_address_with_fewest_bodies_go_first() {
        let waiter = |id, address| Waiter {
            id,
            address: ip(address),
        };
        let mut holders = HashMap::new();
        holders.insert(9, holder(1, 4 * MIB, STEP, Duration::ZERO));
        // Address 1 has two bodies in (one holding), address 2 one waiting, address 3 three waiting.
        let waiting = [
            waiter(1, 3),
            waiter(2, 1),
            waiter(3, 3),
            waiter(4, 2),
            waiter(5, 3),
        ];
        assert_eq!(next_waiter(&waiting, &holders), Some(4));
        // Equal counts: the address holding less, then the earliest.
        let waiting = [waiter(1, 1), waiter(2, 2), waiter(3, 2)];
        assert_eq!(next_waiter(&waiting, &holders), Some(2));
        let waiting = [waiter(1, 2), waiter(2, 3)];
        assert_eq!(next_waiter(&waiting, &HashMap::new()), Some(1));
    }

    /// An intake of 8 MiB, and a deadline 10 s away.
    fn eight_mib() -> (Arc<Intake>, Instant) {
        (
            Intake::new(8 * MIB),
            Instant::now() + Duration::from_secs(10),
        )
    }

    /// A body that declares much and sends little holds nothing; one that sent its first step and
    /// then stopped loses its share to a body that needs it, and learns it.
    #[tokio::test(start_paused = true)]
    async fn shares_go_to_bodies_that_arrive() {
        let (intake, deadline) = eight_mib();
        let mut trickling = intake.arrival(ip(1), deadline, 6 * MIB);
        trickling.arrived(1).await.unwrap();
        assert_eq!(intake.held(), 0);

        let mut stalled = intake.arrival(ip(1), deadline, 6 * MIB);
        stalled.arrived(STEP).await.unwrap();
        assert_eq!(intake.held(), 6 * MIB);

        let mut sending = intake.arrival(ip(2), deadline, 5 * MIB);
        // Within a step time of its share, the stalled body keeps it.
        assert!(sending.arrived(STEP).now_or_never().is_none());
        tokio::time::advance(STEP_TIME).await;
        sending.arrived(STEP).await.unwrap();
        assert!(stalled.cut_off().is_cancelled());
        assert_eq!(stalled.arrived(2 * STEP).await, Err(Cut));
        assert_eq!(intake.held(), 5 * MIB);
        drop(stalled);
        assert_eq!(intake.held(), 5 * MIB);
        sending.arrived(5 * MIB).await.unwrap();
        drop(sending);
        drop(trickling);
        assert_eq!(intake.held(), 0);
    }

    /// Bodies that keep pace are never cut: a second one waits until the first is done.
    #[tokio::test(start_paused = true)]
    async fn a_body_keeping_pace_keeps_its_share() {
        let (intake, deadline) = eight_mib();
        let mut first = intake.arrival(ip(1), deadline, 6 * MIB);
        first.arrived(STEP).await.unwrap();
        let mut second = intake.arrival(ip(2), deadline, 6 * MIB);
        let mut waiting = Box::pin(second.arrived(STEP));
        for step in 2..=6 {
            tokio::time::advance(Duration::from_millis(500)).await;
            first.arrived(step * MIB).await.unwrap();
            assert!((&mut waiting).now_or_never().is_none());
        }
        assert!(!first.cut_off().is_cancelled());
        drop(first);
        waiting.await.unwrap();
        assert_eq!(intake.held(), 6 * MIB);
    }
}
