//! Time: [`Timestamp`] (milliseconds, UTC), the [`Clock`] that decides "now", and
//! half-open [`Validity`] intervals.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// A moment in time: milliseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);
    /// The earliest representable moment.
    pub const MIN: Timestamp = Timestamp(i64::MIN);
    /// The latest representable moment.
    pub const MAX: Timestamp = Timestamp(i64::MAX);

    /// The moment `millis` milliseconds after the epoch.
    pub const fn from_millis(millis: i64) -> Self {
        Timestamp(millis)
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// This moment moved forward by `millis` (saturating).
    pub const fn plus_millis(self, millis: i64) -> Self {
        Timestamp(self.0.saturating_add(millis))
    }

    /// Parses an RFC 3339 instant (`2026-03-01T12:00:00Z`), a date (`2026-03-01`,
    /// midnight UTC) or an integer number of milliseconds since the epoch. A bare
    /// number that reads as a date is refused: `2023` and `20230508` mean a year and a
    /// day to whoever wrote them, not moments of 1 January 1970.
    pub fn parse(input: &str) -> Result<Self, Error> {
        let s = input.trim();
        if let Ok(millis) = s.parse::<i64>() {
            if let Some(meant) = read_as_date(s) {
                return Err(Error::AmbiguousTime {
                    value: s.to_owned(),
                    meant,
                });
            }
            return Ok(Timestamp(millis));
        }
        if let Ok(ts) = s.parse::<jiff::Timestamp>() {
            return Ok(Timestamp(ts.as_millisecond()));
        }
        if let Ok(date) = s.parse::<jiff::civil::Date>()
            && let Ok(zoned) = date.to_zoned(jiff::tz::TimeZone::UTC)
        {
            return Ok(Timestamp(zoned.timestamp().as_millisecond()));
        }
        Err(Error::InvalidTime {
            value: s.chars().take(64).collect(),
        })
    }
}

/// The date a bare number reads as, if any: four digits are a year (`2023`), eight
/// that make a calendar day are one (`20230508`).
fn read_as_date(s: &str) -> Option<String> {
    // "+2023" reads as the year too.
    let s = s.strip_prefix('+').unwrap_or(s);
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match s.len() {
        4 => Some(format!("{s}-01-01")),
        8 => {
            let date = format!("{}-{}-{}", &s[..4], &s[4..6], &s[6..]);
            date.parse::<jiff::civil::Date>().is_ok().then_some(date)
        }
        _ => None,
    }
}

impl std::str::FromStr for Timestamp {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Timestamp::parse(s)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match jiff::Timestamp::from_millisecond(self.0) {
            Ok(ts) => write!(f, "{ts}"),
            Err(_) => write!(f, "{}ms", self.0),
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({self})")
    }
}

/// The source of "now". Every read and write takes its time from a clock, never
/// from the caller.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current moment.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock, for production.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp(jiff::Timestamp::now().as_millisecond())
    }
}

/// A clock that moves only when told to, for scenarios and tests. It never goes back.
#[derive(Debug, Default)]
pub struct LogicalClock(AtomicI64);

impl LogicalClock {
    /// A clock that reads `start`.
    pub fn new(start: Timestamp) -> Self {
        LogicalClock(AtomicI64::new(start.0))
    }

    /// Moves the clock to `t`; refuses to move it back.
    pub fn set(&self, t: Timestamp) -> Result<(), Error> {
        let mut current = self.0.load(Ordering::SeqCst);
        loop {
            if t.0 < current {
                return Err(Error::ClockBackwards {
                    now: Timestamp(current),
                    requested: t,
                });
            }
            match self
                .0
                .compare_exchange(current, t.0, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Ok(()),
                Err(seen) => current = seen,
            }
        }
    }

    /// Moves the clock forward by `millis` (negative values are treated as 0) and returns the new time.
    pub fn advance(&self, millis: i64) -> Timestamp {
        let step = millis.max(0);
        let previous = self.0.fetch_add(step, Ordering::SeqCst);
        Timestamp(previous.saturating_add(step))
    }
}

impl Clock for LogicalClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

/// A half-open interval `[from, until)`; `until = None` means open-ended.
///
/// Used for world-time validity of facts and for the validity of access-graph edges.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct Validity {
    from: Timestamp,
    until: Option<Timestamp>,
}

impl Validity {
    /// `[from, until)`; refuses an empty or reversed interval.
    pub fn new(from: Timestamp, until: Option<Timestamp>) -> Result<Self, Error> {
        match until {
            Some(until) if until <= from => Err(Error::ReversedInterval { from, until }),
            _ => Ok(Validity { from, until }),
        }
    }

    /// `[from, ∞)`.
    pub const fn since(from: Timestamp) -> Self {
        Validity { from, until: None }
    }

    /// All of time.
    pub const fn always() -> Self {
        Validity {
            from: Timestamp::MIN,
            until: None,
        }
    }

    /// The start.
    pub const fn from(&self) -> Timestamp {
        self.from
    }

    /// The exclusive end, if closed.
    pub const fn until(&self) -> Option<Timestamp> {
        self.until
    }

    /// Whether `t` lies in `[from, until)`.
    pub fn contains(&self, t: Timestamp) -> bool {
        self.from <= t && self.until.is_none_or(|until| t < until)
    }

    /// Whether every moment of `other` lies in this interval.
    pub fn covers(&self, other: &Validity) -> bool {
        self.from <= other.from
            && match (self.until, other.until) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some(mine), Some(theirs)) => theirs <= mine,
            }
    }

    /// Whether the two intervals share at least one moment.
    pub fn overlaps(&self, other: &Validity) -> bool {
        self.until.is_none_or(|u| other.from < u) && other.until.is_none_or(|u| self.from < u)
    }

    /// This interval closed at `at`; `None` if that leaves it empty (`at <= from`).
    /// An interval already closed before `at` is returned unchanged.
    pub fn closed_at(&self, at: Timestamp) -> Option<Validity> {
        if at <= self.from {
            return None;
        }
        let until = match self.until {
            Some(u) if u <= at => u,
            _ => at,
        };
        Some(Validity {
            from: self.from,
            until: Some(until),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_covers_those_inside_it() {
        let open = Validity::since(t(10));
        let closed = Validity::new(t(10), Some(t(20))).unwrap();
        assert!(open.covers(&Validity::since(t(15))));
        assert!(open.covers(&closed));
        assert!(closed.covers(&closed));
        assert!(closed.covers(&Validity::new(t(12), Some(t(20))).unwrap()));
        assert!(!closed.covers(&Validity::since(t(12))));
        assert!(!closed.covers(&Validity::new(t(12), Some(t(21))).unwrap()));
        assert!(!open.covers(&Validity::since(t(9))));
    }

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    #[test]
    fn validity_is_half_open() {
        let v = Validity::new(t(10), Some(t(20))).unwrap();
        assert!(!v.contains(t(9)));
        assert!(v.contains(t(10)));
        assert!(v.contains(t(19)));
        assert!(!v.contains(t(20)), "the end is exclusive");
        assert!(Validity::since(t(5)).contains(t(i64::MAX)));
    }

    #[test]
    fn reversed_and_empty_intervals_are_refused() {
        assert!(matches!(
            Validity::new(t(10), Some(t(10))),
            Err(Error::ReversedInterval { .. })
        ));
        assert!(matches!(
            Validity::new(t(10), Some(t(3))),
            Err(Error::ReversedInterval { .. })
        ));
    }

    #[test]
    fn closing_and_overlap() {
        let v = Validity::since(t(10));
        assert_eq!(v.closed_at(t(10)), None);
        assert_eq!(v.closed_at(t(15)).unwrap().until(), Some(t(15)));
        let closed = Validity::new(t(10), Some(t(12))).unwrap();
        assert_eq!(closed.closed_at(t(15)), Some(closed));
        assert!(v.overlaps(&closed));
        assert!(!closed.overlaps(&Validity::since(t(12))));
    }

    #[test]
    fn timestamps_parse_and_print() {
        let ts = Timestamp::parse("2026-03-01T12:00:00Z").unwrap();
        assert_eq!(ts.to_string(), "2026-03-01T12:00:00Z");
        assert_eq!(
            Timestamp::parse("2026-03-01").unwrap().as_millis(),
            ts.as_millis() - 12 * 3_600_000
        );
        assert_eq!(Timestamp::parse("150").unwrap(), t(150));
        assert_eq!(Timestamp::parse("15000").unwrap(), t(15000));
        let year = Timestamp::parse(" 2023 ").unwrap_err();
        assert!(matches!(year, Error::AmbiguousTime { .. }));
        assert!(year.to_string().contains("2023-01-01"), "{year}");
        assert!(matches!(
            Timestamp::parse("+2023"),
            Err(Error::AmbiguousTime { .. })
        ));
        let day = Timestamp::parse("20230508").unwrap_err();
        assert!(day.to_string().contains("2023-05-08"), "{day}");
        // Eight digits that make no day are milliseconds.
        assert_eq!(Timestamp::parse("20231399").unwrap(), t(20_231_399));
        assert!(matches!(
            Timestamp::parse("yesterday"),
            Err(Error::InvalidTime { .. })
        ));
    }

    #[test]
    fn logical_clock_never_goes_back() {
        let clock = LogicalClock::new(t(100));
        assert_eq!(clock.now(), t(100));
        clock.set(t(200)).unwrap();
        assert!(clock.set(t(150)).is_err());
        assert_eq!(clock.advance(5), t(205));
        assert_eq!(clock.advance(-50), t(205));
    }
}
