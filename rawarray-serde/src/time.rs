//! Dates and times as the integers a file stores: the units of the `timestamp` and `duration`
//! logical markers ([`crate::Logical`], doc/format.md section 7), and the ISO 8601 text of a
//! stored value, for tools that print values (`ra cat`).
//!
//! The calendar is the proleptic Gregorian calendar in UTC, as Arrow's and numpy's are; the day
//! arithmetic is Howard Hinnant's `civil_from_days`, exact over every `i64` day count.

use std::fmt;

/// The unit of a `timestamp` or `duration`: the stored integer counts these. Arrow's four
/// units, which are also numpy's `datetime64`/`timedelta64` units of the same names.
///
/// ```
/// use rawarray_serde::time::TimeUnit;
/// assert_eq!("us".parse::<TimeUnit>().unwrap(), TimeUnit::Microsecond);
/// assert_eq!(TimeUnit::Nanosecond.per_second(), 1_000_000_000);
/// assert!("D".parse::<TimeUnit>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimeUnit {
    /// Seconds (`"s"`).
    Second,
    /// Milliseconds (`"ms"`).
    Millisecond,
    /// Microseconds (`"us"`).
    Microsecond,
    /// Nanoseconds (`"ns"`).
    Nanosecond,
}

impl TimeUnit {
    /// Every unit, coarsest first.
    pub const ALL: [TimeUnit; 4] = [
        TimeUnit::Second,
        TimeUnit::Millisecond,
        TimeUnit::Microsecond,
        TimeUnit::Nanosecond,
    ];

    /// Its name in a schema, and numpy's: `s`, `ms`, `us`, `ns`.
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Second => "s",
            TimeUnit::Millisecond => "ms",
            TimeUnit::Microsecond => "us",
            TimeUnit::Nanosecond => "ns",
        }
    }

    /// How many of it make one second.
    pub fn per_second(self) -> i64 {
        match self {
            TimeUnit::Second => 1,
            TimeUnit::Millisecond => 1_000,
            TimeUnit::Microsecond => 1_000_000,
            TimeUnit::Nanosecond => 1_000_000_000,
        }
    }

    /// Digits of a second's fraction it counts: 0, 3, 6 or 9.
    fn fraction_digits(self) -> usize {
        match self {
            TimeUnit::Second => 0,
            TimeUnit::Millisecond => 3,
            TimeUnit::Microsecond => 6,
            TimeUnit::Nanosecond => 9,
        }
    }
}

impl fmt::Display for TimeUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for TimeUnit {
    type Err = String;

    fn from_str(s: &str) -> Result<TimeUnit, String> {
        TimeUnit::ALL
            .into_iter()
            .find(|u| u.name() == s)
            .ok_or_else(|| format!("time unit \"{s}\" is not one of s, ms, us, ns"))
    }
}

/// The year, month (1-12) and day (1-31) of `days` since 1970-01-01.
///
/// ```
/// use rawarray_serde::time::civil_from_days;
/// assert_eq!(civil_from_days(0), (1970, 1, 1));
/// assert_eq!(civil_from_days(-1), (1969, 12, 31));
/// assert_eq!(civil_from_days(18_262), (2020, 1, 1));
/// assert_eq!(civil_from_days(11_016), (2000, 2, 29));
/// ```
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // i128: `days + 719_468` and the era arithmetic cannot overflow for any i64.
    let z = i128::from(days) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    let year = yoe + era * 400 + i128::from(month <= 2);
    // |year| <= 2^63 / 365 + 1: fits an i64.
    (year as i64, month, day)
}

/// A date as ISO 8601: `2020-01-31`; years outside 0..=9999 carry a sign (`+12345-01-01`,
/// `-0001-12-31`), as ISO 8601's expanded years do.
///
/// ```
/// use rawarray_serde::time::date_text;
/// assert_eq!(date_text(18_292), "2020-01-31");
/// assert_eq!(date_text(-719_529), "-0001-12-31");
/// ```
pub fn date_text(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    if (0..=9999).contains(&y) {
        format!("{y:04}-{m:02}-{d:02}")
    } else {
        format!("{y:+05}-{m:02}-{d:02}")
    }
}

/// A timestamp of `count` units since 1970-01-01T00:00:00 UTC as ISO 8601 in UTC, with as many
/// fraction digits as the unit counts: `2020-01-01T12:30:00.250Z` for milliseconds.
///
/// ```
/// use rawarray_serde::time::{timestamp_text, TimeUnit};
/// assert_eq!(timestamp_text(0, TimeUnit::Second), "1970-01-01T00:00:00Z");
/// assert_eq!(timestamp_text(-1, TimeUnit::Millisecond), "1969-12-31T23:59:59.999Z");
/// assert_eq!(timestamp_text(1_577_881_800_250, TimeUnit::Millisecond), "2020-01-01T12:30:00.250Z");
/// ```
pub fn timestamp_text(count: i64, unit: TimeUnit) -> String {
    let per = unit.per_second();
    let (secs, frac) = (count.div_euclid(per), count.rem_euclid(per));
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let mut out = date_text(days);
    out.push_str(&format!(
        "T{:02}:{:02}:{:02}",
        sod / 3_600,
        sod / 60 % 60,
        sod % 60
    ));
    let digits = unit.fraction_digits();
    if digits > 0 {
        out.push_str(&format!(".{frac:0digits$}"));
    }
    out.push('Z');
    out
}

/// A duration of `count` units: the number and the unit, `90s`, `-250ms`.
///
/// ```
/// use rawarray_serde::time::{duration_text, TimeUnit};
/// assert_eq!(duration_text(-250, TimeUnit::Millisecond), "-250ms");
/// ```
pub fn duration_text(count: i64, unit: TimeUnit) -> String {
    format!("{count}{unit}")
}

/// Whether `tz` may be a timestamp's time zone in a schema: Arrow's forms, an IANA name
/// (`Europe/Paris`, `Etc/GMT+5`) or a UTC offset (`+05:30`), 1 to 64 characters of ASCII
/// letters, digits and `/ _ + - :`. The reader does not look it up: the stored values are UTC
/// instants either way, and the zone only says how to show them.
///
/// ```
/// use rawarray_serde::time::valid_time_zone;
/// assert!(valid_time_zone("America/Argentina/Buenos_Aires") && valid_time_zone("+05:30"));
/// assert!(!valid_time_zone("") && !valid_time_zone("UTC]") && !valid_time_zone("a, b"));
/// ```
pub fn valid_time_zone(tz: &str) -> bool {
    (1..=64).contains(&tz.len())
        && tz
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/_+-:".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inverse of `civil_from_days`, written independently (days before each month).
    fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let mut days = 0i64;
        if y >= 1970 {
            for yy in 1970..y {
                days += if leap(yy) { 366 } else { 365 };
            }
        } else {
            for yy in y..1970 {
                days -= if leap(yy) { 366 } else { 365 };
            }
        }
        let lens = [
            31,
            if leap(y) { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        days + lens[..(m - 1) as usize].iter().sum::<i64>() + i64::from(d) - 1
    }

    #[test]
    fn civil_from_days_agrees_with_counting_days() {
        for days in (-800_000..800_000).step_by(997).chain(-1_000..1_000) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{days} -> {y}-{m}-{d}");
        }
    }

    #[test]
    fn extreme_counts_print_without_overflow() {
        for unit in TimeUnit::ALL {
            for v in [i64::MIN, i64::MAX, 0, -1] {
                let t = timestamp_text(v, unit);
                assert!(t.ends_with('Z'), "{t}");
            }
        }
        assert_eq!(
            timestamp_text(i64::MIN, TimeUnit::Nanosecond),
            "1677-09-21T00:12:43.145224192Z"
        );
        assert_eq!(
            timestamp_text(i64::MAX, TimeUnit::Nanosecond),
            "2262-04-11T23:47:16.854775807Z"
        );
        assert_eq!(date_text(i64::from(i32::MAX)), "+5881580-07-11");
    }
}
