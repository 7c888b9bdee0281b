//! The text form of a duration in a call policy: `"300ms"`, `"2s"`, `"1.5s"`, `"1m"`, `"2h"`. The
//! `#[wirecall(timeout = "...")]` attribute (read by the macros at compile time) and policy
//! files and environment variables (read by the runtime) parse it here, so a value means the
//! same on both sides of the crate boundary, as method ids do.

use core::fmt;
use core::time::Duration;

/// Parses `text`: a decimal number (with at most 9 decimals) followed by one unit, `ms`, `s`,
/// `m` or `h`, with no space; `"us"` is refused on purpose (a policy deadline that short is
/// a mistake). Zero is refused: a zero deadline or window fails every call.
///
/// ```
/// use core::time::Duration;
/// use wirecall_wire::parse_duration;
///
/// assert_eq!(parse_duration("300ms"), Ok(Duration::from_millis(300)));
/// assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1_500)));
/// assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
/// assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7_200)));
/// assert!(parse_duration("0s").is_err());
/// assert!(parse_duration("300").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or(DurationError::NoUnit)?;
    let (number, unit) = text.split_at(split);
    let nanos_per_unit: u128 = match unit {
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60 * 1_000_000_000,
        "h" => 3_600 * 1_000_000_000,
        _ if number.is_empty() => return Err(DurationError::NotANumber),
        _ => return Err(DurationError::UnknownUnit),
    };
    let (whole, fraction) = match number.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (number, ""),
    };
    if whole.is_empty() || fraction.len() > 9 || fraction.contains('.') {
        return Err(DurationError::NotANumber);
    }
    let whole: u128 = whole.parse().map_err(|_| DurationError::NotANumber)?;
    let mut fraction_nanos: u128 = 0;
    let mut scale = nanos_per_unit;
    for digit in fraction.bytes() {
        scale /= 10;
        fraction_nanos += u128::from(digit - b'0') * scale;
    }
    let nanos = whole
        .checked_mul(nanos_per_unit)
        .and_then(|nanos| nanos.checked_add(fraction_nanos))
        .ok_or(DurationError::TooLong)?;
    if nanos == 0 {
        return Err(DurationError::Zero);
    }
    let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| DurationError::TooLong)?;
    // Below a second: always fits.
    Ok(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

/// Why [`parse_duration`] refused a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// No unit after the number (`"300"`).
    NoUnit,
    /// A unit other than `ms`, `s`, `m` or `h`.
    UnknownUnit,
    /// The number is missing or malformed (`"ms"`, `"-1s"`, `"1..5s"`).
    NotANumber,
    /// Zero, which would fail every call.
    Zero,
    /// Longer than a `Duration` holds.
    TooLong,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NoUnit => "a duration needs a unit: write e.g. \"300ms\", \"2s\" or \"1m\"",
            Self::UnknownUnit => "unknown unit: use `ms`, `s`, `m` or `h`, e.g. \"300ms\"",
            Self::NotANumber => {
                "not a duration: write a positive number and a unit, e.g. \"300ms\" or \"1.5s\""
            }
            Self::Zero => "a zero duration would fail every call: give a positive one",
            Self::TooLong => "the duration is too long",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unit_and_fractions_parse() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("0.25s"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7_200)));
        assert_eq!(parse_duration("1.000000001s"), Ok(Duration::new(1, 1)));
    }

    #[test]
    fn malformed_texts_name_what_is_wrong() {
        assert_eq!(parse_duration("300"), Err(DurationError::NoUnit));
        assert_eq!(parse_duration("3 s"), Err(DurationError::UnknownUnit));
        assert_eq!(parse_duration("3us"), Err(DurationError::UnknownUnit));
        assert_eq!(parse_duration("-3s"), Err(DurationError::NotANumber));
        assert_eq!(parse_duration("ms"), Err(DurationError::NotANumber));
        assert_eq!(parse_duration(".5s"), Err(DurationError::NotANumber));
        assert_eq!(parse_duration("1.2.3s"), Err(DurationError::NotANumber));
        assert_eq!(parse_duration("0ms"), Err(DurationError::Zero));
        assert_eq!(parse_duration("0.0s"), Err(DurationError::Zero));
        assert_eq!(
            parse_duration("99999999999999999999999h"),
            Err(DurationError::TooLong)
        );
        assert_eq!(parse_duration(""), Err(DurationError::NoUnit));
    }
}
