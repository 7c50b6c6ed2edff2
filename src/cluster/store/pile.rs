//! What a snapshot update lets go of, collected for the caller to drop later: a list that grows in
//! chunks too small for glibc's allocator to treat as large requests.
//!
//! The update runs under the cache's lock and collects about 3,000 versions per 1% churn. Before
//! serving a large request (past 1 KiB), glibc's malloc consolidates its fast bins, which hold every
//! small block freed since the last such request: the previous update's leftovers and the watches'
//! garbage. A `Vec` growing by doubling would make such requests, and pay for frees that happened
//! outside the lock under it (a quarter of the update's time). Chunks below that size are served from
//! the small bins, which never consolidate; the next large request, outside the lock, does it.
//! jemalloc, which tidal runs on, has no such step, and the chunks cost it nothing; where the library
//! runs on glibc's malloc (its own tests) they still matter.

/// Items in insertion order, in chunks of at most [`Pile::CHUNK`].
pub(crate) struct Pile<T> {
    chunks: Vec<Vec<T>>,
}

impl<T> Default for Pile<T> {
    fn default() -> Self {
        Pile { chunks: Vec::new() }
    }
}

impl<T> Pile<T> {
    /// Items per chunk: a chunk's buffer stays at or under 960 bytes, below the 1,008 bytes from which
    /// glibc serves a request from its large bins (on 64-bit targets).
    const CHUNK: usize = match size_of::<T>() {
        0 => 1,
        size if size >= 960 => 1,
        size => 960 / size,
    };

    pub(crate) fn push(&mut self, item: T) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < Self::CHUNK => chunk.push(item),
            _ => {
                let mut chunk = Vec::with_capacity(Self::CHUNK);
                chunk.push(item);
                self.chunks.push(chunk);
            }
        }
    }

    /// Moves the items of `other` after these, without copying them.
    pub(crate) fn append(&mut self, other: Pile<T>) {
        self.chunks.extend(other.chunks);
    }

    pub(crate) fn len(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }
}

impl<T> Extend<T> for Pile<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        items.into_iter().for_each(|item| self.push(item));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_every_item_in_order_in_small_chunks() {
        let mut pile = Pile::default();
        pile.extend(0..250_u64);
        let mut more = Pile::default();
        more.push(1_000_u64);
        pile.append(more);
        assert_eq!(pile.len(), 251);
        assert_eq!(
            pile.iter().copied().collect::<Vec<_>>(),
            (0..250).chain([1_000]).collect::<Vec<_>>()
        );
        assert!(
            pile.chunks
                .iter()
                .all(|chunk| chunk.capacity() * size_of::<u64>() <= 960),
            "no chunk is a large request"
        );
    }

    #[test]
    fn large_items_go_one_per_chunk() {
        let mut pile = Pile::default();
        pile.extend([[0_u8; 2_000], [1; 2_000]]);
        assert_eq!(pile.len(), 2);
        assert_eq!(pile.chunks.len(), 2);
    }
}
