//! Who holds the connection slots of a listener, and who gives one up when they are all taken.
//!
//! A full listener still accepts: a connection from an address holding at least two connections
//! fewer than the largest holder takes the slot of that holder's connection that has waited longest
//! without a request under way (a handshake, idle time or headers, or a body still arriving). So a
//! flood from a few addresses, whatever it sends, cannot keep out a client from another address (the
//! API server, the kubelet): the flood only ever competes with itself. Any other connection waits,
//! without a handshake, until a slot is free, for as long as an idle connection may last; the
//! waiting room is as large as the listener, and a connection beyond it is closed at once.
//! Connections whose request is complete (being decided or answered) are never taken: they end by
//! themselves within the request and write deadlines.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex, MutexGuard},
};

use tokio::{sync::Notify, time::Instant};
use tokio_util::sync::CancellationToken;

/// What a connection is doing, as far as giving its slot up goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The TLS handshake is under way.
    Handshake,
    /// Waiting for a request's headers: idle between requests, or headers still arriving.
    Waiting,
    /// The headers are in and the body is still arriving (or waiting for its share of memory).
    Body,
    /// The request is complete: being decided, or its answer being written.
    Busy,
}

impl Phase {
    fn reclaimable(self) -> bool {
        self != Phase::Busy
    }
}

/// Why a connection did not get a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Its address holds as many connections as one address may.
    PerAddress,
    /// Every slot is taken and none may be taken for it (its address holds the most already, or
    /// every other connection has a request under way).
    Full,
}

struct Entry {
    ip: IpAddr,
    phase: Phase,
    /// When the connection entered its phase.
    since: Instant,
    /// It has had a request answered (an idle keep-alive connection, not an unfinished one).
    served: bool,
    /// Cancelled when the slot is taken from it.
    taken: CancellationToken,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    entries: HashMap<u64, Entry>,
    per_address: HashMap<IpAddr, usize>,
    /// Slots taken from one connection for another since the count was last read.
    taken: u64,
}

impl Table {
    fn count(&self, ip: IpAddr) -> usize {
        self.per_address.get(&ip).copied().unwrap_or(0)
    }

    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.entries.remove(&id)?;
        if let Some(count) = self.per_address.get_mut(&entry.ip) {
            *count -= 1;
            if *count == 0 {
                self.per_address.remove(&entry.ip);
            }
        }
        Some(entry)
    }

    /// The connection whose slot a newcomer from `ip` takes, if any: of the addresses holding at
    /// least two connections more than `ip` and one without a request under way, the one holding
    /// the most; of its connections, an unfinished one before an idle one, the oldest first. Two,
    /// not one: with one, flooding addresses a connection apart would take slots from each other
    /// without end, each time costing a handshake.
    fn victim(&self, ip: IpAddr) -> Option<u64> {
        let enough = self.count(ip) + 2;
        // Most of the time under a flood the newcomer's own address is among the largest holders:
        // say no without looking at every connection.
        if self.per_address.values().all(|&count| count < enough) {
            return None;
        }
        self.entries
            .iter()
            .filter(|(_, entry)| entry.phase.reclaimable() && self.count(entry.ip) >= enough)
            .max_by_key(|(_, entry)| {
                (
                    self.count(entry.ip),
                    !entry.served,
                    std::cmp::Reverse(entry.since),
                )
            })
            .map(|(id, _)| *id)
    }
}

/// The slots of one listener.
#[derive(Clone)]
pub(crate) struct Slots {
    shared: Arc<Shared>,
}

struct Shared {
    table: Mutex<Table>,
    max: usize,
    max_per_address: usize,
    /// Told once per slot given back, for the connections in the waiting room.
    freed: Notify,
}

impl Slots {
    pub(crate) fn new(max: usize, max_per_address: usize) -> Slots {
        Slots {
            shared: Arc::new(Shared {
                table: Mutex::new(Table::default()),
                max: max.max(1),
                max_per_address: max_per_address.max(1),
                freed: Notify::new(),
            }),
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.shared.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a new connection from `ip`, taken from another connection if need be (see the
    /// module's documentation). `first` is its phase.
    pub(crate) fn admit(&self, ip: IpAddr, first: Phase) -> Result<Slot, Refused> {
        // An IPv4 client on a dual-stack socket arrives as ::ffff:a.b.c.d: one client, one count.
        let ip = ip.to_canonical();
        let mut table = self.table();
        if table.count(ip) >= self.shared.max_per_address {
            return Err(Refused::PerAddress);
        }
        if table.entries.len() >= self.shared.max {
            let victim = table.victim(ip).ok_or(Refused::Full)?;
            if let Some(entry) = table.remove(victim) {
                entry.taken.cancel();
                table.taken += 1;
            }
        }
        let id = table.next_id;
        table.next_id += 1;
        let taken = CancellationToken::new();
        table.entries.insert(
            id,
            Entry {
                ip,
                phase: first,
                since: Instant::now(),
                served: false,
                taken: taken.clone(),
            },
        );
        *table.per_address.entry(ip).or_insert(0) += 1;
        Ok(Slot {
            slots: self.clone(),
            id,
            taken,
        })
    }

    /// Resolves once a slot has been given back (each slot wakes one waiter; enable the future
    /// before trying [`Slots::admit`], so that a slot given back in between is not missed).
    pub(crate) fn freed(&self) -> tokio::sync::futures::Notified<'_> {
        self.shared.freed.notified()
    }

    /// Slots taken from one connection for another since the last call.
    pub(crate) fn take_count(&self) -> u64 {
        std::mem::take(&mut self.table().taken)
    }

    /// Connections holding a slot.
    #[cfg(test)]
    pub(crate) fn open(&self) -> usize {
        self.table().entries.len()
    }
}

/// One connection's slot: given back when dropped.
pub(crate) struct Slot {
    slots: Slots,
    id: u64,
    taken: CancellationToken,
}

impl Slot {
    /// The connection has entered `phase`.
    pub(crate) fn enter(&self, phase: Phase) {
        let mut table = self.slots.table();
        if let Some(entry) = table.entries.get_mut(&self.id) {
            if entry.phase == Phase::Busy && phase == Phase::Waiting {
                entry.served = true;
            }
            entry.phase = phase;
            entry.since = Instant::now();
        }
    }

    /// Cancelled when another connection has taken this slot: the connection must close.
    pub(crate) fn taken(&self) -> &CancellationToken {
        &self.taken
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // Not there any more when it was taken: that slot went to the newcomer.
        if self.slots.table().remove(self.id).is_some() {
            self.slots.shared.freed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn addresses_are_counted_and_capped_and_slots_given_back() {
        let slots = Slots::new(10, 2);
        let first = slots.admit(ip(1), Phase::Waiting).unwrap();
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let second = slots.admit(mapped, Phase::Waiting).expect("a's second");
        assert_eq!(
            slots.admit(ip(1), Phase::Waiting).err(),
            Some(Refused::PerAddress)
        );
        assert!(slots.admit(ip(2), Phase::Waiting).is_ok());
        drop(first);
        let third = slots
            .admit(ip(1), Phase::Waiting)
            .expect("a place given back");
        drop((second, third));
        assert_eq!(slots.open(), 0);
        assert!(
            slots.table().per_address.is_empty(),
            "no address left behind"
        );
    }

    /// Full: a newcomer from an address holding two fewer takes the slot of the largest holder's
    /// oldest connection; one from the largest holder, or one only a connection short of it, waits.
    #[test]
    fn a_full_listener_takes_from_the_largest_holder_only() {
        let slots = Slots::new(4, 10);
        let flood: Vec<Slot> = (0..3)
            .map(|_| slots.admit(ip(1), Phase::Handshake).unwrap())
            .collect();
        let other = slots.admit(ip(2), Phase::Waiting).unwrap();
        // The flood's own address holds the most: it waits.
        assert_eq!(
            slots.admit(ip(1), Phase::Handshake).err(),
            Some(Refused::Full)
        );
        // A third address takes the flood's oldest connection.
        let newcomer = slots.admit(ip(3), Phase::Handshake).unwrap();
        assert!(flood[0].taken().is_cancelled());
        assert!(!flood[1].taken().is_cancelled() && !other.taken().is_cancelled());
        // ip 1 holds 2 now: a fourth address (0) takes from it, ip 2 (1) may not.
        assert_eq!(
            slots.admit(ip(2), Phase::Waiting).err(),
            Some(Refused::Full)
        );
        let fourth = slots.admit(ip(4), Phase::Waiting).unwrap();
        assert!(flood[1].taken().is_cancelled());
        assert!(!newcomer.taken().is_cancelled() && !other.taken().is_cancelled());
        // One each: nobody takes from anybody.
        assert_eq!(
            slots.admit(ip(5), Phase::Waiting).err(),
            Some(Refused::Full)
        );
        drop((flood, other, newcomer, fourth));
        assert_eq!(slots.open(), 0);
    }

    #[test]
    fn busy_connections_are_never_taken_and_unfinished_go_before_idle() {
        let slots = Slots::new(4, 10);
        let busy: Vec<Slot> = (0..2)
            .map(|_| {
                let slot = slots.admit(ip(1), Phase::Waiting).unwrap();
                slot.enter(Phase::Busy);
                slot
            })
            .collect();
        let idle = slots.admit(ip(1), Phase::Waiting).unwrap();
        idle.enter(Phase::Busy);
        idle.enter(Phase::Waiting);
        let unfinished = slots.admit(ip(1), Phase::Body).unwrap();
        // The idle connection is the older, but it has been answered: the unfinished one goes first.
        let a = slots.admit(ip(2), Phase::Waiting).unwrap();
        assert!(unfinished.taken().is_cancelled());
        assert!(!idle.taken().is_cancelled());
        let b = slots.admit(ip(3), Phase::Waiting).unwrap();
        assert!(idle.taken().is_cancelled());
        // Only requests under way are left of ip 1's: they keep their slots, the newcomer waits.
        assert_eq!(
            slots.admit(ip(4), Phase::Waiting).err(),
            Some(Refused::Full)
        );
        assert!(busy.iter().all(|slot| !slot.taken().is_cancelled()));
        drop((busy, idle, unfinished, a, b));
        assert_eq!(slots.open(), 0);
    }
}
