//! The tracefs ring buffer's binary page format (`per_cpu/cpuN/trace_pipe_raw`),
//! as the kernel describes it in `events/header_page` and `header_event`:
//! a page is a 64-bit base timestamp, a 64-bit commit word (the bytes of
//! data, and flags for lost events above them), then events, each a 32-bit
//! header (5 bits type_len, 27 bits time delta) and its payload.

/// One event's payload (starting with the common fields: type, flags,
/// preempt count, pid) and its timestamp in the instance's clock (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawEvent<'a> {
    pub timestamp: u64,
    pub data: &'a [u8],
}

impl RawEvent<'_> {
    /// The common `type` field: the event's id in `events/*/*/id`.
    pub fn kind(&self) -> u16 {
        self.u16_at(0)
    }

    /// The common `pid` field: the task the event happened in.
    pub fn pid(&self) -> i32 {
        self.u32_at(4) as i32
    }

    fn u16_at(&self, offset: usize) -> u16 {
        self.data.get(offset..offset + 2).map_or(0, |b| u16::from_ne_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32_at(&self, offset: usize) -> u32 {
        super::u32_at(self.data, offset)
    }

    pub(crate) fn u64_at(&self, offset: usize) -> u64 {
        super::u64_at(self.data, offset)
    }
}

const PADDING: u32 = 29;
const TIME_EXTEND: u32 = 30;
const TIME_STAMP: u32 = 31;
/// Page header: 8 bytes of base timestamp, 8 of commit.
const HEADER: usize = 16;
/// The commit word's flags (missed events) sit above the length.
const COMMIT_LENGTH_MASK: u64 = (1 << 27) - 1;
/// The commit word's flag: events were lost before this page.
const MISSED_EVENTS: u64 = 1 << 31;
/// Absolute timestamps carry 59 bits; the top bits come from the page.
const ABSOLUTE_MASK: u64 = (1 << 59) - 1;

/// The events of one page, in order, and whether events were lost before it.
pub(crate) fn page_events<'a>(page: &'a [u8], mut each: impl FnMut(RawEvent<'a>)) -> bool {
    if page.len() < HEADER {
        return false;
    }
    let word = |at: usize| u64::from_ne_bytes(page[at..at + 8].try_into().unwrap());
    let base = word(0);
    let commit = word(8);
    let end = (HEADER + (commit & COMMIT_LENGTH_MASK) as usize).min(page.len());
    let mut timestamp = base;
    let mut at = HEADER;
    while at + 4 <= end {
        let header = u32::from_ne_bytes(page[at..at + 4].try_into().unwrap());
        let type_len = header & 0x1f;
        let delta = u64::from(header >> 5);
        let array0 = || page.get(at + 4..at + 8).map_or(0, |b| u32::from_ne_bytes(b.try_into().unwrap()));
        let length = match type_len {
            PADDING => {
                if delta == 0 {
                    break; // the rest of the page is unused
                }
                4 + array0() as usize
            }
            TIME_EXTEND => {
                timestamp += (u64::from(array0()) << 27) | delta;
                8
            }
            TIME_STAMP => {
                let absolute = (u64::from(array0()) << 27) | delta;
                timestamp = (absolute & ABSOLUTE_MASK) | (base & !ABSOLUTE_MASK);
                8
            }
            0 => {
                timestamp += delta;
                let length = array0() as usize;
                let data = page.get(at + 8..(at + 4 + length).min(end)).unwrap_or(&[]);
                each(RawEvent { timestamp, data });
                4 + length
            }
            n => {
                timestamp += delta;
                let length = 4 * n as usize;
                let data = page.get(at + 4..(at + 4 + length).min(end)).unwrap_or(&[]);
                each(RawEvent { timestamp, data });
                4 + length
            }
        };
        if length < 4 {
            break; // a corrupt length: stop rather than loop
        }
        at += length;
    }
    commit & MISSED_EVENTS != 0
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a page the way the kernel writes one.
    pub(crate) struct PageBuilder {
        data: Vec<u8>,
        base: u64,
        last: u64,
    }

    impl PageBuilder {
        pub(crate) fn new(base: u64) -> PageBuilder {
            PageBuilder { data: Vec::new(), base, last: base }
        }

        fn header(&mut self, type_len: u32, delta: u64) {
            self.data.extend_from_slice(&(type_len | ((delta as u32) << 5)).to_ne_bytes());
        }

        /// An event at `timestamp` with `payload` (padded to 4 bytes).
        pub(crate) fn event(&mut self, timestamp: u64, payload: &[u8]) -> &mut Self {
            let mut delta = timestamp - self.last;
            if delta >= 1 << 27 {
                self.header(TIME_EXTEND, delta & ((1 << 27) - 1));
                self.data.extend_from_slice(&((delta >> 27) as u32).to_ne_bytes());
                delta = 0;
            }
            self.last = timestamp;
            let mut payload = payload.to_vec();
            payload.resize(payload.len().div_ceil(4) * 4, 0);
            if payload.len() <= 112 {
                self.header((payload.len() / 4) as u32, delta);
            } else {
                self.header(0, delta);
                self.data.extend_from_slice(&(payload.len() as u32 + 4).to_ne_bytes());
            }
            self.data.extend_from_slice(&payload);
            self
        }

        pub(crate) fn build(&self, missed: bool) -> Vec<u8> {
            let mut page = self.base.to_ne_bytes().to_vec();
            let commit = self.data.len() as u64 | if missed { MISSED_EVENTS } else { 0 };
            page.extend_from_slice(&commit.to_ne_bytes());
            page.extend_from_slice(&self.data);
            page.resize(4096, 0);
            page
        }
    }

    /// Common fields: type, flags, preempt count, pid.
    pub(crate) fn payload(kind: u16, pid: i32, rest: &[u8]) -> Vec<u8> {
        let mut data = kind.to_ne_bytes().to_vec();
        data.extend_from_slice(&[0, 0]);
        data.extend_from_slice(&pid.to_ne_bytes());
        data.extend_from_slice(rest);
        data
    }

    #[test]
    fn events_come_back_with_their_timestamps_kinds_and_pids() {
        let big = payload(4, 7, &[1u8; 200]);
        let page =
            PageBuilder::new(1_000).event(1_010, &payload(408, 7, &[9; 12])).event(1_500_000_000, &big).build(false);
        let mut seen = Vec::new();
        let missed = page_events(&page, |e| seen.push((e.timestamp, e.kind(), e.pid(), e.data.len())));
        assert!(!missed);
        assert_eq!(seen, vec![(1_010, 408, 7, 20), (1_500_000_000, 4, 7, 208)]);
    }

    #[test]
    fn missed_events_are_reported_and_a_short_page_is_empty() {
        let page = PageBuilder::new(5).event(6, &payload(1, 1, &[])).build(true);
        assert!(page_events(&page, |_| {}));
        assert!(!page_events(&[0u8; 8], |_| panic!("no events in a short page")));
    }

    #[test]
    fn garbage_never_panics() {
        let mut page = vec![0xffu8; 4096];
        page[8..16].copy_from_slice(&4000u64.to_ne_bytes());
        page_events(&page, |_| {});
        let mut zeros = vec![0u8; 64];
        zeros[8] = 40;
        page_events(&zeros, |_| {});
    }
}
