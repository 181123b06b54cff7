//! The two C library behaviours ministat's output depends on: `printf`'s
//! `%g`/`%f` conversions and `strtod`'s idea of a number.
//!
//! Rust's float formatting is correctly rounded with ties to even on the
//! exact binary value, as glibc's `printf` is, so the digits agree; what is
//! emulated here is `%g`'s choice of notation, its trailing-zero removal and
//! the exponent's sign and two digits.

/// `printf("%.{precision}g", value)`.
pub fn g(value: f64, precision: usize) -> String {
    if let Some(special) = special(value) {
        return special;
    }
    let p = precision.max(1);
    if value == 0.0 {
        return if value.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // The exponent after rounding to p significant digits decides the style.
    let sci = format!("{:.*e}", p - 1, value);
    let (mantissa, exp) = sci.split_once('e').expect("exponent present");
    let exp: i32 = exp.parse().expect("integer exponent");
    if exp < -4 || exp >= p as i32 {
        let mantissa = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp) as usize;
        strip_zeros(&format!("{value:.decimals$}")).to_string()
    }
}

/// `printf("%{width}.{precision}g", value)`: right-aligned.
pub(crate) fn g_width(value: f64, width: usize, precision: usize) -> String {
    format!("{:>width$}", g(value, precision))
}

/// `printf("%.{precision}f", value)`.
pub fn f(value: f64, precision: usize) -> String {
    special(value).unwrap_or_else(|| format!("{value:.precision$}"))
}

/// glibc prints NaN with its sign bit, so `-nan` appears (e.g. √ of a negative variance).
fn special(value: f64) -> Option<String> {
    if value.is_nan() {
        Some(if value.is_sign_negative() { "-nan" } else { "nan" }.into())
    } else if value.is_infinite() {
        Some(if value < 0.0 { "-inf" } else { "inf" }.into())
    } else {
        None
    }
}

fn strip_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// `strtod` on a whole token: `Some` only when the entire token (after
/// leading white space) is a number, as ministat requires. Accepts what
/// glibc accepts: decimal and hexadecimal floats, `inf`, `infinity`, `nan`
/// and `nan(chars)`, with an optional sign.
pub(crate) fn parse_c_double(token: &str) -> Option<f64> {
    let t = token.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let lower = body.to_ascii_lowercase();
    let magnitude = if lower == "inf" || lower == "infinity" {
        f64::INFINITY
    } else if lower == "nan"
        || (lower.starts_with("nan(") && lower.ends_with(')') && nan_chars(&lower[4..lower.len() - 1]))
    {
        f64::NAN
    } else if let Some(hex) = lower.strip_prefix("0x") {
        parse_hex(hex)?
    } else {
        decimal(body)?
    };
    Some(if negative { -magnitude } else { magnitude })
}

fn nan_chars(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Digits with an optional point and exponent; Rust's parser is correctly rounded like glibc's.
fn decimal(body: &str) -> Option<f64> {
    let bytes = body.as_bytes();
    let mut i = 0;
    let mut digits = 0;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i < bytes.len() && bytes[i] == b'.' {
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        let start = j;
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            j += 1;
        }
        if j > start {
            i = j;
        }
    }
    if i != bytes.len() {
        return None;
    }
    body.parse().ok()
}

/// Hexadecimal float body after `0x`: digits, optional point, optional `p` exponent.
fn parse_hex(hex: &str) -> Option<f64> {
    let (mantissa, exponent) = match hex.split_once('p') {
        Some((m, e)) => (m, Some(e)),
        None => (hex, None),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut value = 0.0f64;
    for c in int_part.chars().chain(frac_part.chars()) {
        value = value * 16.0 + c.to_digit(16)? as f64;
    }
    let mut exp: i32 = -4 * frac_part.len() as i32;
    if let Some(e) = exponent {
        let e: i32 = e.parse().ok()?;
        exp = exp.checked_add(e)?;
    }
    Some(value * 2f64.powi(exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_matches_glibc() {
        // Expected strings from glibc printf.
        for (v, p, expected) in [
            (0.125, 8, "0.125"),
            (1.5811388300841898, 8, "1.5811388"),
            (123456789.0, 8, "1.2345679e+08"),
            (0.00012345, 8, "0.00012345"),
            (1e-5, 8, "1e-05"),
            (2.5, 6, "2.5"),
            (83.33333333333333, 6, "83.3333"),
            (100000.0, 6, "100000"),
            (1000000.0, 6, "1e+06"),
            (-0.0001, 6, "-0.0001"),
            (0.0, 6, "0"),
            (1e100, 6, "1e+100"),
            (f64::INFINITY, 8, "inf"),
            (-f64::NAN, 8, "-nan"),
        ] {
            assert_eq!(g(v, p), expected, "%.{p}g of {v}");
        }
        assert_eq!(g_width(1.0, 13, 8), "            1");
        assert_eq!(f(95.0, 1), "95.0");
    }

    #[test]
    fn strtod_accepts_what_glibc_accepts() {
        for (text, value) in [
            ("1", 1.0),
            ("-2.5", -2.5),
            ("+.5", 0.5),
            ("1.", 1.0),
            ("1e3", 1000.0),
            ("1E-2", 0.01),
            ("0x10", 16.0),
            ("0x1.8p1", 3.0),
            (" 7", 7.0),
            ("inf", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
        ] {
            assert_eq!(parse_c_double(text), Some(value), "{text}");
        }
        assert!(parse_c_double("nan").unwrap().is_nan());
        assert!(parse_c_double("NAN(abc)").unwrap().is_nan());
        for bad in ["", "x", "1x", "1e", "1 ", ".", "1,5", "--1", "0x", "e5", "1e+"] {
            assert_eq!(parse_c_double(bad), None, "{bad:?}");
        }
    }
}
