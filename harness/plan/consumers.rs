//! What else fills a node's /dev/shm beside the DataLoaders (`doctor --with`): NCCL's
//! shared-memory transport between the ranks of one node, and Ray's object store. Each need
//! says where its number comes from, and whether it was measured here or is a prediction from
//! the library's source.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::model::bad_value::BadValue;
use crate::model::size::ByteSize;

/// NCCL's receive buffer of one shared-memory connection with its default sizes: the LL
/// protocol's 524,288 bytes (8 lines x 512 threads x 8 steps x 16 bytes), LL128's 4,915,200
/// (120 x 640 x 8 x 8), SIMPLE's 4 MiB (1 MiB on ARM), and the 4 KiB header before them
/// (`DEFAULT_LL_BUFFSIZE`, `DEFAULT_LL128_BUFFSIZE` and `DEFAULT_BUFFSIZE` in NVIDIA/nccl's
/// src/init.cc; the segment is `offsetof(ncclRecvMem, buff)` plus the three, in
/// src/transport/shm.cc). NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE and NCCL_LL128_BUFFSIZE change it.
pub(crate) const NCCL_CONNECTION_BYTES: u64 = 524_288 + 4_915_200 + 4_194_304 + 4096;

/// Ring channels assumed when none are given: NCCL picks them from the topology.
const NCCL_CHANNELS: u32 = 2;

/// A consumer of /dev/shm beside the loaders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Consumer {
    /// NCCL between `ranks` processes of one node over its SHM transport, `channels` rings.
    Nccl { ranks: u32, channels: Option<u32> },
    /// A Ray node's object store of this size.
    Ray { object_store: ByteSize },
}

/// What one consumer needs, and on what grounds.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ConsumerNeed {
    pub(crate) name: String,
    pub(crate) bytes: u64,
    /// How the bytes follow (the formula, in words).
    pub(crate) basis: String,
    /// Where the numbers come from.
    pub(crate) source: &'static str,
    /// Measured here (true), or predicted from the source.
    pub(crate) measured: bool,
}

impl Consumer {
    /// Its need.
    pub(crate) fn need(&self) -> ConsumerNeed {
        match *self {
            Consumer::Nccl { ranks, channels } => {
                let rings = channels.unwrap_or(NCCL_CHANNELS);
                let assumed = match channels {
                    Some(_) => "",
                    None => " (assumed: NCCL picks the channels from the topology; give nccl:RANKS:CHANNELS)",
                };
                ConsumerNeed {
                    name: format!("NCCL, {ranks} ranks"),
                    bytes: ranks as u64 * rings as u64 * NCCL_CONNECTION_BYTES,
                    basis: format!(
                        "{ranks} ranks x {rings} ring channels{assumed} x {} per receiving connection, when the ranks talk through /dev/shm (no P2P between their GPUs: NCCL_P2P_DISABLE, or GPUs P2P cannot reach); its proxy's ops pool, also in /dev/shm, is not counted",
                        ByteSize(NCCL_CONNECTION_BYTES)
                    ),
                    source: "NVIDIA/nccl's source (src/init.cc's default buffer sizes, src/transport/shm.cc); not measured: no GPUs here",
                    measured: false,
                }
            }
            Consumer::Ray { object_store } => ConsumerNeed {
                name: format!("Ray object store {object_store}"),
                bytes: object_store.bytes(),
                basis: format!(
                    "the store's {object_store}, its pages taken as objects are put; when /dev/shm is smaller than the store, Ray moves it to /tmp/ray (slower) with a warning"
                ),
                source: "Ray 2.60.0 with object_store_memory 1 GiB: in a 2 GiB /dev/shm a 32 MiB put used 32.0 MiB of it; in 64 MiB the store went to /tmp/ray (tests/ray_store.rs)",
                measured: true,
            },
        }
    }
}

impl FromStr for Consumer {
    type Err = BadValue;

    /// `nccl:RANKS[:CHANNELS]` or `ray:SIZE`.
    fn from_str(s: &str) -> Result<Consumer, BadValue> {
        let wanted = "nccl:RANKS[:CHANNELS] (e.g. nccl:8) or ray:OBJECT_STORE_SIZE (e.g. ray:2g)";
        let bad = || BadValue::new(s, wanted);
        let count = |t: &str| t.parse::<u32>().ok().filter(|n| (1..=1024).contains(n));
        let mut parts = s.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("nccl"), Some(ranks), channels, None) => Ok(Consumer::Nccl {
                ranks: count(ranks).ok_or_else(bad)?,
                channels: match channels {
                    Some(c) => Some(count(c).ok_or_else(bad)?),
                    None => None,
                },
            }),
            (Some("ray"), Some(size), None, None) => Ok(Consumer::Ray {
                object_store: ByteSize::parse(size).map_err(|_| bad())?,
            }),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Consumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Consumer::Nccl {
                ranks,
                channels: Some(c),
            } => write!(f, "nccl:{ranks}:{c}"),
            Consumer::Nccl {
                ranks,
                channels: None,
            } => write!(f, "nccl:{ranks}"),
            Consumer::Ray { object_store } => write!(f, "ray:{object_store}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_say_what_is_wanted() {
        assert_eq!(
            "nccl:8".parse::<Consumer>().unwrap(),
            Consumer::Nccl {
                ranks: 8,
                channels: None
            }
        );
        assert_eq!(
            "nccl:8:4".parse::<Consumer>().unwrap(),
            Consumer::Nccl {
                ranks: 8,
                channels: Some(4)
            }
        );
        assert_eq!(
            "ray:2g".parse::<Consumer>().unwrap(),
            Consumer::Ray {
                object_store: ByteSize(2 << 30)
            }
        );
        for bad in ["nccl", "nccl:0", "nccl:8:2:1", "ray:lots", "vllm:2", ""] {
            let e = bad.parse::<Consumer>().unwrap_err().to_string();
            assert!(e.contains("nccl:RANKS"), "{bad}: {e}");
        }
    }

    #[test]
    fn nccl_s_connection_is_its_three_default_buffers_and_header() {
        assert_eq!(NCCL_CONNECTION_BYTES, 9_637_888);
        let need = Consumer::Nccl {
            ranks: 8,
            channels: None,
        }
        .need();
        assert_eq!(need.bytes, 8 * 2 * 9_637_888);
        assert!(!need.measured && need.basis.contains("assumed"));
        let given = Consumer::Nccl {
            ranks: 8,
            channels: Some(4),
        }
        .need();
        assert_eq!(given.bytes, 8 * 4 * 9_637_888);
        assert!(!given.basis.contains("assumed"));
    }
}
