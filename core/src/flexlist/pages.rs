//! A paged arena: slots addressed by a 32-bit index, stored in fixed-size pages.
//!
//! Why pages rather than one `Vec`: a growing `Vec` of a few million nodes copies all of them
//! whenever it outgrows its capacity (a latency spike in the middle of an update), and the
//! parallel build could not hand each thread a part of one `Vec` without first writing the
//! whole of it. With pages, growth allocates one page, and each thread of the parallel build
//! fills pages of its own under page numbers reserved for its part; numbers a part does not
//! use stay empty pages.

use std::ops::{Index, IndexMut};

const PAGE_BITS: u32 = 16;
/// Slots per page.
pub(crate) const PAGE_LEN: usize = 1 << PAGE_BITS;
/// Slots the first page of an arena starts with; it doubles up to [`PAGE_LEN`]. Most lists
/// are small (a version list, an object of a few blocks): a whole first page for each (4 MiB
/// of nodes) cost more in fresh pages zeroed by the kernel than building the list did.
const FIRST_PAGE_START: usize = 64;

#[derive(Debug)]
pub(crate) struct Paged<T> {
    pages: Vec<Vec<T>>,
}

impl<T: Clone> Clone for Paged<T> {
    /// Keeps every page's full capacity, so that a clone grows as cheaply as the original.
    fn clone(&self) -> Self {
        let copy = |page: &Vec<T>| {
            let mut new = Vec::with_capacity(page.capacity());
            new.extend_from_slice(page);
            new
        };
        Paged { pages: self.pages.iter().map(copy).collect() }
    }
}

impl<T> Default for Paged<T> {
    fn default() -> Self {
        Paged { pages: Vec::new() }
    }
}

impl<T> Paged<T> {
    /// An arena whose first slot will get index `first_page * PAGE_LEN`.
    pub fn starting_at(first_page: usize) -> Self {
        Paged { pages: (0..first_page).map(|_| Vec::new()).collect() }
    }

    /// Number of pages needed for `slots` slots.
    pub fn pages_for(slots: usize) -> usize {
        slots.div_ceil(PAGE_LEN)
    }

    /// Appends a slot and returns its index, or `None` when 32-bit indices run out.
    pub fn push(&mut self, value: T) -> Option<u32> {
        match self.pages.last_mut() {
            // The first page grows by doubling (a copy of at most one page); a later page is
            // allocated whole.
            Some(page) if page.capacity() > 0 && page.len() < PAGE_LEN => page.push(value),
            _ => {
                if self.pages.len() >= (1 << (32 - PAGE_BITS)) - 1 {
                    return None; // keep u32::MAX free as "no node"
                }
                let start = if self.pages.is_empty() { FIRST_PAGE_START } else { PAGE_LEN };
                let mut page = Vec::with_capacity(start);
                page.push(value);
                self.pages.push(page);
            }
        }
        let page = self.pages.len() - 1;
        Some(((page << PAGE_BITS) | (self.pages[page].len() - 1)) as u32)
    }

    /// Occupied slots (freed ones included: the owner keeps its own free list).
    pub fn len(&self) -> usize {
        self.pages.iter().map(Vec::len).sum()
    }

    /// Bytes allocated for slots.
    pub fn capacity_bytes(&self) -> usize {
        self.pages.iter().map(Vec::capacity).sum::<usize>() * std::mem::size_of::<T>()
            + self.pages.capacity() * std::mem::size_of::<Vec<T>>()
    }

    /// Moves the pages of `part` (built with [`Paged::starting_at`]) into `self`, at the page
    /// numbers `part` was built for. Those numbers must be free: beyond `self`'s last page.
    pub fn absorb(&mut self, part: Paged<T>) {
        for (number, page) in part.pages.into_iter().enumerate() {
            if page.capacity() == 0 {
                continue;
            }
            while self.pages.len() <= number {
                self.pages.push(Vec::new());
            }
            debug_assert!(self.pages[number].capacity() == 0, "page {number} taken twice");
            self.pages[number] = page;
        }
    }
}

impl<T> Index<u32> for Paged<T> {
    type Output = T;

    #[inline]
    fn index(&self, at: u32) -> &T {
        &self.pages[(at >> PAGE_BITS) as usize][(at as usize) & (PAGE_LEN - 1)]
    }
}

impl<T> IndexMut<u32> for Paged<T> {
    #[inline]
    fn index_mut(&mut self, at: u32) -> &mut T {
        &mut self.pages[(at >> PAGE_BITS) as usize][(at as usize) & (PAGE_LEN - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_index_and_absorb() {
        let mut a: Paged<u64> = Paged::default();
        for i in 0..(PAGE_LEN as u64 + 10) {
            assert_eq!(a.push(i), Some(i as u32));
        }
        assert_eq!(a[PAGE_LEN as u32 + 3], PAGE_LEN as u64 + 3);
        assert_eq!(a[5], 5, "slots of the first page survive its growth");
        assert_eq!(a.pages[0].capacity(), PAGE_LEN, "the first page grew to a whole page, no further");
        let small: Paged<u64> = {
            let mut p = Paged::default();
            p.push(1);
            p
        };
        assert!(small.capacity_bytes() < 1024, "a one-slot arena holds no whole page");
        let mut part: Paged<u64> = Paged::starting_at(5);
        let at = part.push(42).unwrap();
        assert_eq!(at as usize, 5 * PAGE_LEN);
        a.absorb(part);
        assert_eq!(a[at], 42);
        assert_eq!(a.len(), PAGE_LEN + 11);
        // New slots go after the last page.
        assert_eq!(a.push(7), Some(at + 1));
    }
}
