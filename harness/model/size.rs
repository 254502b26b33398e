//! Byte sizes as users write them: `64m`, `2g`, `16GiB`, `512MiB`, `1.5g`, `77070336`.
//!
//! Units are binary, as Docker's `--shm-size` reads them (`64m` and `64MB` are both 64 MiB), so a
//! size copied from a `docker run` line means the same thing here.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A number of bytes, parsed from and printed as a human size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SizeError {
    #[error("empty size: write a number with an optional unit, e.g. 64m, 2g, 16GiB")]
    Empty,
    #[error("'{0}' is not a size: write a number with an optional unit b, k, m, g, t (binary, as docker's --shm-size), e.g. 64m, 2g, 16GiB")]
    Malformed(String),
    #[error("'{0}' is too large: sizes must fit in 64 bits (at most 16 EiB)")]
    Overflow(String),
}

impl ByteSize {
    pub const KIB: u64 = 1 << 10;
    pub const MIB: u64 = 1 << 20;
    pub const GIB: u64 = 1 << 30;

    pub fn bytes(self) -> u64 {
        self.0
    }

    /// Parses `text`; the unit letters are case-insensitive and may be followed by `i`/`b`.
    pub fn parse(text: &str) -> Result<Self, SizeError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(SizeError::Empty);
        }
        let split = trimmed
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(trimmed.len());
        let (number, unit) = trimmed.split_at(split);
        let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => Self::KIB,
            "m" | "mb" | "mib" => Self::MIB,
            "g" | "gb" | "gib" => Self::GIB,
            "t" | "tb" | "tib" => 1 << 40,
            _ => return Err(SizeError::Malformed(text.to_string())),
        };
        if number.is_empty() || number.matches('.').count() > 1 {
            return Err(SizeError::Malformed(text.to_string()));
        }
        let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole
                .parse()
                .map_err(|_| SizeError::Overflow(text.to_string()))?
        };
        let mut bytes = whole
            .checked_mul(multiplier)
            .ok_or_else(|| SizeError::Overflow(text.to_string()))?;
        if !frac.is_empty() {
            // Fractions are exact to 9 digits; the remainder is dropped (floor to whole bytes).
            let digits = &frac[..frac.len().min(9)];
            let scale = 10u128.pow(digits.len() as u32);
            let value: u128 = digits
                .parse()
                .map_err(|_| SizeError::Malformed(text.to_string()))?;
            let extra = value * multiplier as u128 / scale;
            bytes = bytes
                .checked_add(extra as u64)
                .ok_or_else(|| SizeError::Overflow(text.to_string()))?;
        }
        Ok(ByteSize(bytes))
    }
}

impl fmt::Display for ByteSize {
    /// Prints the largest binary unit that keeps the value readable: `64 MiB`, `1.5 GiB`, `73.5 MiB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u64); 4] = [
            ("TiB", 1 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ];
        for (name, scale) in UNITS {
            if self.0 >= scale {
                let value = self.0 as f64 / scale as f64;
                return if self.0.is_multiple_of(scale) {
                    write!(f, "{} {name}", self.0 / scale)
                } else {
                    write!(f, "{value:.1} {name}")
                };
            }
        }
        write!(f, "{} B", self.0)
    }
}

impl std::str::FromStr for ByteSize {
    type Err = SizeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    /// Accepts either a number of bytes or a size string, so scenarios can say `"64m"` and cell
    /// configs can carry exact byte counts.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
            Negative(i64),
            Float(f64),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(n) => Ok(ByteSize(n)),
            Raw::Text(s) => ByteSize::parse(&s).map_err(serde::de::Error::custom),
            Raw::Negative(n) => Err(serde::de::Error::custom(format!(
                "{n} is not a size: sizes cannot be negative"
            ))),
            Raw::Float(x) => Err(serde::de::Error::custom(format!(
                "{x} is not a size: write bytes as a whole number or a string such as \"64m\""
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_docker_style_units_as_binary() {
        assert_eq!(ByteSize::parse("64m").unwrap().bytes(), 64 << 20);
        assert_eq!(ByteSize::parse("64MB").unwrap().bytes(), 64 << 20);
        assert_eq!(ByteSize::parse("16GiB").unwrap().bytes(), 16 << 30);
        assert_eq!(ByteSize::parse("2 g").unwrap().bytes(), 2 << 30);
        assert_eq!(ByteSize::parse("1.5g").unwrap().bytes(), 3 << 29);
        assert_eq!(ByteSize::parse("77070336").unwrap().bytes(), 77_070_336);
    }

    #[test]
    fn rejects_garbage_and_overflow() {
        assert!(matches!(
            ByteSize::parse("lots"),
            Err(SizeError::Malformed(_))
        ));
        assert!(matches!(
            ByteSize::parse("-5m"),
            Err(SizeError::Malformed(_))
        ));
        assert!(matches!(
            ByteSize::parse("1.2.3m"),
            Err(SizeError::Malformed(_))
        ));
        assert!(matches!(
            ByteSize::parse("64q"),
            Err(SizeError::Malformed(_))
        ));
        assert!(matches!(
            ByteSize::parse("18446744073709551616"),
            Err(SizeError::Overflow(_))
        ));
        assert!(matches!(
            ByteSize::parse("99999999999t"),
            Err(SizeError::Overflow(_))
        ));
        assert_eq!(ByteSize::parse("  "), Err(SizeError::Empty));
    }

    #[test]
    fn displays_readably() {
        assert_eq!(ByteSize(64 << 20).to_string(), "64 MiB");
        assert_eq!(ByteSize(77_070_336).to_string(), "73.5 MiB");
        assert_eq!(ByteSize(512).to_string(), "512 B");
    }
}
