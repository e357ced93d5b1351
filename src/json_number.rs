//! A JSON number's text read as a decimal: its digits and where its point falls. serde_json keeps
//! a number's text as written (its `arbitrary_precision` feature), so a message may carry any
//! number JSON can write; these say how long it is written out, and what an integer parameter
//! is given for it.

/// The most digits a number in a message may have written out in full (`1e999` has 1,000; `1e1000`
/// is refused): numeric's largest declared precision. A few bytes such as `1e100000` stand for
/// 100,001 digits in any text PostgreSQL or chumbo writes of the value.
pub const MAX_DIGITS: u64 = 1000;

/// A number as its significant run of digits and the place of its decimal point in them (0: before
/// the first digit; negative: that many zeros come first; beyond their length: zeros follow).
struct Decimal {
    negative: bool,
    digits: String,
    point: i64,
}

/// `text` (a JSON number) as a [Decimal]; None when its exponent is beyond any i64.
fn decimal(text: &str) -> Option<Decimal> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], unsigned[at + 1..].parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (int_part, fraction_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{int_part}{fraction_part}");
    let leading_zeros = all.len() - all.trim_start_matches('0').len();
    let point = (int_part.len() as i64)
        .checked_add(exponent)?
        .checked_sub(leading_zeros as i64)?;
    let digits = all[leading_zeros..].trim_end_matches('0').to_string();
    Some(Decimal {
        negative,
        digits,
        point,
    })
}

/// Whether the number `text` has at most [MAX_DIGITS] digits written out in full, from its first
/// significant digit (or the point) to its last (or the point).
pub fn within_max_digits(text: &str) -> bool {
    // The common case, digits and a point with no exponent, is as long as it is written.
    if text.len() as u64 <= MAX_DIGITS && !text.contains(['e', 'E']) {
        return true;
    }
    let Some(d) = decimal(text) else {
        return false;
    };
    if d.digits.is_empty() {
        return true; // zero, however it is written
    }
    let len = d.digits.len() as i64;
    let written = d.point.max(0).saturating_add((len - d.point).max(0));
    written as u64 <= MAX_DIGITS
}

/// The digits of the number `text` when it is whole and written with a fraction or an exponent
/// (`2.0` → `2`, `1e2` → `100`); None otherwise, and for one of more than 20 digits (outside every
/// integer type: its input function says so).
pub fn whole_digits(text: &str) -> Option<String> {
    if !text.contains(['.', 'e', 'E']) {
        return None;
    }
    let d = decimal(text)?;
    if d.digits.is_empty() {
        return Some("0".into());
    }
    let len = d.digits.len() as i64;
    if d.point < len || d.point > 20 {
        return None; // a fraction left, or too many digits
    }
    let sign = if d.negative { "-" } else { "" };
    Some(format!(
        "{sign}{}{}",
        d.digits,
        "0".repeat((d.point - len) as usize)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_become_digits() {
        for (text, digits) in [
            ("2.0", Some("2")),
            ("1e2", Some("100")),
            ("1E+2", Some("100")),
            ("-3.000", Some("-3")),
            ("100e-2", Some("1")),
            ("0.5e1", Some("5")),
            ("-0.0", Some("0")),
            ("0e5", Some("0")),
            ("9223372036854775807.0", Some("9223372036854775807")),
            ("1.5", None),
            ("15e-1", None),
            ("1e-99999", None),
            ("1e99999999999999999999", None),
            ("1.5e300", None),
            ("2", None),
            ("-7", None),
        ] {
            assert_eq!(whole_digits(text).as_deref(), digits, "{text}");
        }
    }

    #[test]
    fn digits_written_out_are_counted() {
        for (text, within) in [
            ("1", true),
            ("123.456", true),
            ("1e999", true),
            ("1.5e999", true),
            ("1e1000", false),
            ("1e-999", true),
            ("1e-1000", true),
            ("1e-1001", false),
            ("0.5e-999", true),
            ("0.5e-1000", false),
            ("1000e996", true),
            ("1000e997", false),
            ("0e99999999", true),
            ("1e99999999999999999999", false),
            ("-1e100000", false),
        ] {
            assert_eq!(within_max_digits(text), within, "{text}");
        }
        assert!(within_max_digits(&"9".repeat(1000)));
        assert!(!within_max_digits(&"9".repeat(1001)));
        assert!(within_max_digits(&format!("0.{}1", "0".repeat(999))));
        assert!(!within_max_digits(&format!("0.{}1", "0".repeat(1000))));
    }
}
