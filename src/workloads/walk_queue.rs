//! The directories a cooperative `traverse` shares: a stack of paths in one
//! anonymous shared mapping made before the workers start, so that forked
//! worker processes share it exactly as threads do.
//!
//! Busy workers hand directories to idle ones: after listing a directory a
//! worker keeps most subdirectories for itself and pushes some here while
//! the stack is short; an idle worker pops, or sleeps on a futex until
//! something is pushed or the walk is over (no directory pending anywhere).
//!
//! Each path on the stack carries the worker that pushed it, so a walker's
//! [`WalkTally`] can tell the directories it took from others (steals) from
//! its own taken back, and says how long it waited for work and how often
//! it found the queue's lock held: why a second walker is or is not faster.

use std::ffi::CString;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::sys;

/// Bytes of path the stack can hold; virtual (reserved without swap), so
/// pages cost memory only when a walk's frontier reaches them. A path that
/// does not fit stays with the worker that found it.
const ARENA: usize = 64 << 20;

#[repr(C)]
struct Header {
    /// 0 free, 1 held: guards `count`, `top` and the arena.
    lock: AtomicU32,
    /// Bumped on every push and when the walk ends; idle workers sleep on it.
    wake: AtomicU32,
    /// Workers asleep on `wake` (or about to be): a push wakes through the
    /// kernel only when there is one, not at every push.
    sleepers: AtomicU32,
    /// Directories discovered (pushed or kept) and not yet fully listed.
    pending: AtomicU64,
    /// Paths on the stack.
    count: AtomicU64,
    /// Bytes of the arena in use: each path, then its pusher and its length as u32s.
    top: AtomicU64,
    /// 1: other processes' workers walk the tree too (the ranks of an MPI
    /// job), so nothing pending here does not end the walk; [`WalkQueue::finish`] does.
    cooperating: AtomicU32,
    /// 1: the walk is over everywhere.
    done: AtomicU32,
    /// Acquisitions that found the lock held, all callers together: the
    /// tests' handshake (a holder releases once a waiter is seen).
    #[cfg(test)]
    waits: AtomicU32,
}

pub struct WalkQueue {
    base: *mut u8,
    len: usize,
}

/// Who pushed a path: a worker's index, or [`FROM_ANOTHER_RANK`].
pub type Pusher = u32;

/// The pusher of paths handed over by another MPI rank.
pub const FROM_ANOTHER_RANK: Pusher = u32::MAX;

/// What one walker did, counted outside its hot path (plain fields, its own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkTally {
    /// Directories it listed.
    pub dirs: u64,
    /// Directories it took from the shared queue that another worker (or
    /// rank) had pushed: work stolen.
    pub stolen: u64,
    /// Directories it pushed to the shared queue for others.
    pub given: u64,
    /// Nanoseconds it waited with nothing to list.
    pub idle_ns: u64,
    /// Times it found the queue's lock held and had to wait for it.
    pub lock_waits: u64,
}

const RECORD_TAIL: usize = 8;

/// Spins of an idle walker before it sleeps: about 20 µs (a `pause` is
/// some 10 to 140 cycles, depending on the CPU).
const SPINS: u32 = 2_000;

// SAFETY: the header is atomics; the arena is touched only under `lock`.
unsafe impl Send for WalkQueue {}
// SAFETY: as above.
unsafe impl Sync for WalkQueue {}

impl WalkQueue {
    /// A queue holding the tree's top directory `.`, pending.
    pub fn new() -> std::io::Result<WalkQueue> {
        let queue = WalkQueue::empty()?;
        queue.header().pending.store(1, Ordering::Relaxed);
        assert!(queue.push(c".", 0, &mut WalkTally::default()), "an empty stack has room");
        Ok(queue)
    }

    /// A queue with nothing in it: a rank's, whose work comes from other ranks.
    pub fn empty() -> std::io::Result<WalkQueue> {
        let len = size_of::<Header>() + ARENA;
        Ok(WalkQueue { base: sys::map_shared(len, true)?, len })
    }

    /// From now on the walk ends by [`WalkQueue::finish`] alone.
    pub(crate) fn cooperate(&self) {
        self.header().cooperating.store(1, Ordering::Release);
    }

    /// How many paths a worker keeps on the stack for others (it keeps the
    /// rest to itself): a few per worker in memory; more when other ranks
    /// take them in batches of messages.
    pub(crate) fn target_len(&self, workers: usize) -> usize {
        match self.header().cooperating.load(Ordering::Relaxed) {
            0 => 2 * workers,
            _ => 32 * workers,
        }
    }

    /// Nothing pending here: every directory found here or handed here is listed.
    pub fn idle(&self) -> bool {
        self.header().pending.load(Ordering::Acquire) == 0
    }

    /// `n` popped directories went to another process: no longer pending here.
    pub(crate) fn handed_off(&self, n: usize) {
        self.header().pending.fetch_sub(n as u64, Ordering::AcqRel);
    }

    /// The walk is over everywhere: waiting workers leave.
    pub fn finish(&self) {
        self.header().done.store(1, Ordering::Release);
        self.wake_all();
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping starts with a zero-initialised Header, page-aligned.
        unsafe { &*self.base.cast::<Header>() }
    }

    fn arena(&self) -> *mut u8 {
        // SAFETY: inside the mapping.
        unsafe { self.base.add(size_of::<Header>()) }
    }

    fn locked<R>(&self, tally: &mut WalkTally, body: impl FnOnce(&Header) -> R) -> R {
        let header = self.header();
        let mut spins = 0u32;
        while header.lock.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            if spins == 0 {
                tally.lock_waits += 1;
                #[cfg(test)]
                header.waits.fetch_add(1, Ordering::SeqCst);
            }
            spins += 1;
            if spins.is_multiple_of(64) {
                // The holder may be a descheduled process: let it run.
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        let result = body(header);
        header.lock.store(0, Ordering::Release);
        result
    }

    /// Paths on the stack now.
    pub fn len(&self) -> usize {
        self.header().count.load(Ordering::Relaxed) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pushes `path` for `pusher` and wakes idle workers; false (nothing
    /// pushed) when the arena is full.
    pub fn push(&self, path: &std::ffi::CStr, pusher: Pusher, tally: &mut WalkTally) -> bool {
        let bytes = path.to_bytes();
        let pushed = self.locked(tally, |h| {
            let top = h.top.load(Ordering::Relaxed) as usize;
            if top + bytes.len() + RECORD_TAIL > ARENA {
                return false;
            }
            // SAFETY: top + len + RECORD_TAIL is within the arena; we hold the lock.
            unsafe {
                let at = self.arena().add(top);
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), at, bytes.len());
                std::ptr::write_unaligned(at.add(bytes.len()).cast::<u32>(), pusher);
                std::ptr::write_unaligned(at.add(bytes.len() + 4).cast::<u32>(), bytes.len() as u32);
            }
            h.top.store((top + bytes.len() + RECORD_TAIL) as u64, Ordering::Relaxed);
            h.count.fetch_add(1, Ordering::Relaxed);
            true
        });
        if pushed {
            tally.given += 1;
            self.wake_all();
        }
        pushed
    }

    /// Pops the most recently pushed path, with who pushed it.
    pub fn pop(&self, tally: &mut WalkTally) -> Option<(CString, Pusher)> {
        self.locked(tally, |h| {
            let top = h.top.load(Ordering::Relaxed) as usize;
            if top == 0 {
                return None;
            }
            // SAFETY: the stack holds whole records below `top`; we hold the lock.
            let (bytes, pusher) = unsafe {
                let tail = self.arena().add(top - RECORD_TAIL);
                let pusher = std::ptr::read_unaligned(tail.cast::<u32>());
                let len = std::ptr::read_unaligned(tail.add(4).cast::<u32>()) as usize;
                let start = top - RECORD_TAIL - len;
                let bytes = std::slice::from_raw_parts(self.arena().add(start), len).to_vec();
                h.top.store(start as u64, Ordering::Relaxed);
                (bytes, pusher)
            };
            h.count.fetch_sub(1, Ordering::Relaxed);
            Some((CString::new(bytes).expect("paths hold no NUL"), pusher))
        })
    }

    /// `n` more directories were found (pushed or kept by their finder).
    pub fn found(&self, n: usize) {
        self.header().pending.fetch_add(n as u64, Ordering::AcqRel);
    }

    /// A directory is fully listed and `found` subdirectories of it are now
    /// pending, in one atomic step (none when it found one): to be called
    /// before any of them is pushed, so that the count never reaches zero
    /// while one is on its way.
    pub(crate) fn listed_finding(&self, found: usize) {
        match found {
            0 => self.listed(),
            1 => {}
            n => {
                self.header().pending.fetch_add(n as u64 - 1, Ordering::AcqRel);
            }
        }
    }

    /// A directory is fully listed; the last one ends the walk for everyone.
    pub fn listed(&self) {
        if self.header().pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.wake_all();
        }
    }

    /// The next directory for worker `taker`, waiting while others may
    /// still find some; `None` when the walk is over or `stop` says so.
    pub fn take(&self, taker: Pusher, stop: &dyn Fn() -> bool, tally: &mut WalkTally) -> Option<CString> {
        let mut waiting_since = None;
        // The clock is read only once the queue is found empty.
        let waited = |since: Option<u64>| since.map_or(0, |s| sys::monotonic_ns().saturating_sub(s));
        loop {
            let seen = self.header().wake.load(Ordering::Acquire);
            if let Some((dir, pusher)) = self.pop(tally) {
                tally.idle_ns += waited(waiting_since);
                if pusher != taker {
                    tally.stolen += 1;
                }
                return Some(dir);
            }
            let header = self.header();
            let over = match header.cooperating.load(Ordering::Acquire) {
                0 => header.pending.load(Ordering::Acquire) == 0,
                _ => header.done.load(Ordering::Acquire) == 1,
            };
            if over || stop() {
                tally.idle_ns += waited(waiting_since);
                return None;
            }
            waiting_since.get_or_insert_with(sys::monotonic_ns);
            // A short spin first: a busy walker pushes again within
            // microseconds, sooner than a sleeping thread (or an idle
            // virtual CPU) is woken.
            if self.spin_for_work(seen) {
                continue;
            }
            let header = self.header();
            header.sleepers.fetch_add(1, Ordering::SeqCst);
            sys::futex_wait(&header.wake, seen, Some(Duration::from_millis(5)));
            header.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Spins up to about 20 µs for a push or the walk's end (`wake` moving on from `seen`).
    fn spin_for_work(&self, seen: u32) -> bool {
        for _ in 0..SPINS {
            if self.header().wake.load(Ordering::Acquire) != seen {
                return true;
            }
            std::hint::spin_loop();
        }
        false
    }

    fn wake_all(&self) {
        let header = self.header();
        // SeqCst against the sleeper's increment: either this sees it, or
        // its futex_wait sees `wake` moved on and does not sleep.
        header.wake.fetch_add(1, Ordering::SeqCst);
        if header.sleepers.load(Ordering::SeqCst) > 0 {
            sys::futex_wake_all(&header.wake);
        }
    }
}

impl Drop for WalkQueue {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(popped: Option<(CString, Pusher)>) -> Option<CString> {
        popped.map(|(p, _)| p)
    }

    #[test]
    fn a_stack_of_paths_of_any_length_with_their_pushers() {
        let q = WalkQueue::new().unwrap();
        let mut t = WalkTally::default();
        assert_eq!(q.pop(&mut t), Some((CString::from(c"."), 0)));
        let long = CString::new("d/".repeat(2000)).unwrap();
        assert!(q.push(c"a", 1, &mut t) && q.push(&long, 2, &mut t) && q.push(c"b/c", FROM_ANOTHER_RANK, &mut t));
        assert_eq!(q.len(), 3);
        assert_eq!(q.pop(&mut t), Some((CString::from(c"b/c"), FROM_ANOTHER_RANK)));
        assert_eq!(q.pop(&mut t), Some((long, 2)));
        assert_eq!(q.pop(&mut t), Some((CString::from(c"a"), 1)));
        assert!(q.pop(&mut t).is_none() && q.is_empty());
        assert_eq!(t, WalkTally { given: 3, ..WalkTally::default() }, "pushes alone are counted; no lock was held");
    }

    #[test]
    fn a_walker_counts_what_it_stole_and_how_long_it_waited() {
        let q = WalkQueue::new().unwrap();
        let mut mine = WalkTally::default();
        assert!(q.take(0, &|| false, &mut mine).is_some(), "the top, pushed as worker 0's");
        q.found(2);
        assert!(q.push(c"./own", 0, &mut mine) && q.push(c"./theirs", 1, &mut mine));
        assert_eq!(q.take(0, &|| false, &mut mine).as_deref(), Some(c"./theirs"));
        assert_eq!(q.take(0, &|| false, &mut mine).as_deref(), Some(c"./own"));
        assert_eq!((mine.stolen, mine.given, mine.idle_ns), (1, 2, 0), "one steal, no wait");
        // Waiting: the taker finds the queue empty, and only then (it has
        // gone to sleep on the futex) does another thread push. What it
        // counts as idle covers at least the time from seeing it asleep to
        // the push, whatever the scheduler did in between.
        std::thread::scope(|s| {
            let taker = s.spawn(|| {
                let mut t = WalkTally::default();
                (q.take(0, &|| false, &mut t), t)
            });
            wait_for(|| q.header().sleepers.load(Ordering::SeqCst) > 0);
            let asleep_at = sys::monotonic_ns();
            q.found(1);
            let pushed_at = sys::monotonic_ns();
            assert!(q.push(c"./late", 1, &mut WalkTally::default()));
            let (got, t) = taker.join().unwrap();
            assert_eq!(got.as_deref(), Some(c"./late"));
            assert_eq!(t.stolen, 1);
            assert!(t.idle_ns >= pushed_at - asleep_at, "waited {} ns, at least {}", t.idle_ns, pushed_at - asleep_at);
        });
        // The lock found held is counted once per acquisition, however long
        // it spins: released only once the popper has found it held.
        q.header().lock.store(1, Ordering::Release);
        std::thread::scope(|s| {
            let popper = s.spawn(|| {
                let mut t = WalkTally::default();
                (path(q.pop(&mut t)), t.lock_waits)
            });
            wait_for(|| q.header().waits.load(Ordering::SeqCst) == 1);
            q.header().lock.store(0, Ordering::Release);
            assert_eq!(popper.join().unwrap(), (None, 1));
        });
    }

    /// Polls `condition` until it holds; a minute without is a hang, not a verdict.
    fn wait_for(condition: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !condition() {
            assert!(std::time::Instant::now() < deadline, "a handshake never came: a hang");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    #[test]
    fn a_cooperating_walk_ends_when_finished_not_when_idle() {
        let q = WalkQueue::empty().unwrap();
        let t = &mut WalkTally::default();
        q.cooperate();
        assert!(q.idle());
        std::thread::scope(|s| {
            let taker = s.spawn(|| q.take(0, &|| false, &mut WalkTally::default()));
            // Asleep on the futex: it found nothing, and the walk not over.
            wait_for(|| q.header().sleepers.load(Ordering::SeqCst) > 0);
            assert!(!taker.is_finished(), "idle, but not over");
            q.found(1);
            assert!(q.push(c"./from-another-rank", FROM_ANOTHER_RANK, &mut WalkTally::default()));
            assert_eq!(taker.join().unwrap().as_deref(), Some(c"./from-another-rank"));
        });
        q.listed();
        assert!(q.idle());
        q.finish();
        assert!(q.take(0, &|| false, t).is_none());
        // Handing off popped work leaves nothing pending here.
        q.found(2);
        assert!(q.push(c"a", 0, t) && q.push(c"b", 0, t));
        assert!(q.pop(t).is_some() && q.pop(t).is_some());
        q.handed_off(2);
        assert!(q.idle());
    }

    #[test]
    fn the_walk_ends_when_nothing_is_pending() {
        let q = WalkQueue::new().unwrap();
        let t = &mut WalkTally::default();
        let stop = || false;
        let top = q.take(0, &stop, t).unwrap();
        assert_eq!(top.as_c_str(), c".");
        q.found(1);
        assert!(q.push(c"./x", 0, t));
        q.listed();
        assert_eq!(q.take(0, &stop, t).as_deref(), Some(c"./x"));
        // Listed, finding three: pending before any is pushed.
        q.listed_finding(3);
        assert!(!q.idle());
        for name in [c"./x/a", c"./x/b", c"./x/c"] {
            assert!(q.push(name, 0, t));
        }
        for n in [1, 0, 0] {
            assert!(q.take(0, &stop, t).is_some());
            q.listed_finding(n);
            assert!(!q.idle());
        }
        // ./x/a/d, found by the first of them.
        assert!(q.push(c"./x/a/d", 0, t) && q.take(0, &stop, t).is_some());
        q.listed_finding(0);
        assert!(q.idle() && q.take(0, &stop, t).is_none(), "nothing pending: over");
    }

    #[test]
    fn forked_processes_share_it() {
        let q = WalkQueue::new().unwrap();
        q.pop(&mut WalkTally::default());
        // SAFETY: the child only pushes and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let ok = q.push(c"from-the-child", 7, &mut WalkTally::default());
            // Leaves without running the parent's destructors.
            sys::exit_now(if ok { 0 } else { 1 });
        }
        sys::wait_child(pid, true).unwrap();
        assert_eq!(q.pop(&mut WalkTally::default()), Some((CString::from(c"from-the-child"), 7)));
    }
}
