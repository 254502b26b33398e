//! What else fills a node's /dev/shm beside the DataLoaders (`doctor --with`, a scenario's
//! `[[consumers]]`): NCCL's shared-memory transport between the ranks of one node and its proxy's
//! ops pool, vLLM's message queues between its tensor-parallel workers, and Ray's object store.
//! Each need says where its number comes from, and whether it was measured here or is a
//! prediction from the library's released source.

use std::fmt;
use std::str::FromStr;

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

use model::bad_value::BadValue;
use model::size::ByteSize;

/// NCCL's receive buffer of one shared-memory connection with its default sizes: the LL
/// protocol's 524,288 bytes (8 lines x 512 threads x 8 steps x 16 bytes), LL128's 4,915,200
/// (120 x 640 x 8 x 8), SIMPLE's 4 MiB (1 MiB on ARM), and the 4 KiB header before them
/// (`DEFAULT_LL_BUFFSIZE`, `DEFAULT_LL128_BUFFSIZE` and `DEFAULT_BUFFSIZE` in NVIDIA/nccl's
/// src/init.cc; the segment is `offsetof(ncclRecvMem, buff)` plus the three, in
/// src/transport/shm.cc). NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE and NCCL_LL128_BUFFSIZE change it.
pub const NCCL_CONNECTION_BYTES: u64 = 524_288 + 4_915_200 + 4_194_304 + 4096;

/// Ring channels assumed when none are given: NCCL picks them from the topology.
const NCCL_CHANNELS: u32 = 2;

/// NCCL 2.23.4's proxy ops pool, one per rank, always in /dev/shm (`ncclProxyOpsPool` in
/// src/include/proxy.h, opened by ncclShmOpen as /dev/shm/nccl-*): `MAX_OPS_PER_PEER`
/// (2 x MAXCHANNELS 32 x 2 x NCCL_MAX_DEV_WORK_P2P_PER_BATCH 8) x NCCL_MAX_LOCAL_RANKS 64 =
/// 65,536 ops of 160 bytes (the `ncclProxyOp` of 2.23 with its profiler fields, laid out for
/// x86-64), then 352 bytes of counters, mutex and condition. Before 2.23 the op was 112 bytes:
/// 7,340,384 in all. Releases with 64 channels and 72 local ranks hold more.
pub const NCCL_PROXY_POOL_BYTES: u64 = 65_536 * 160 + 352;

/// vLLM 0.33.0's queues (vllm/distributed/device_communicators/shm_broadcast.py, a
/// `multiprocessing.shared_memory` segment each, so `psm_*` names): a ring of `chunks` chunks
/// of `chunk` bytes plus one flag byte per chunk for the writer and each reader.
const fn vllm_ring(chunk: u64, chunks: u64, readers: u64) -> u64 {
    (chunk + 1 + readers) * chunks
}

/// vLLM 0.33.0 at tensor parallelism `tp` on one node (`vllm/v1/executor/multiproc_executor.py`,
/// `vllm/distributed/parallel_state.py`): the executor's broadcast to every worker
/// (VLLM_MQ_MAX_CHUNK_BYTES_MB 16 MiB x 10 chunks), one response queue per worker (`MessageQueue`'s
/// default 24 MiB x 10), and the TP group's broadcaster (4 MiB x 6, to tp - 1 readers).
pub const fn vllm_queue_bytes(tp: u64) -> u64 {
    if tp < 2 {
        return 0;
    }
    vllm_ring(16 << 20, 10, tp) + tp * vllm_ring(24 << 20, 10, 1) + vllm_ring(4 << 20, 6, tp - 1)
}

/// A consumer of /dev/shm beside the loaders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Consumer {
    /// NCCL between `ranks` processes of one node over its SHM transport, `channels` rings.
    Nccl { ranks: u32, channels: Option<u32> },
    /// vLLM serving one model at tensor parallelism `tp` on the node.
    Vllm { tp: u32 },
    /// A Ray node's object store of this size.
    Ray { object_store: ByteSize },
}

/// What one consumer needs, and on what grounds.
#[derive(Clone, Debug, Serialize)]
pub struct ConsumerNeed {
    pub name: String,
    pub bytes: u64,
    /// How the bytes follow (the formula, in words).
    pub basis: String,
    /// Where the numbers come from.
    pub source: &'static str,
    /// Measured here (true), or predicted from the source.
    pub measured: bool,
}

impl Consumer {
    /// Its need.
    pub fn need(&self) -> ConsumerNeed {
        match *self {
            Consumer::Nccl { ranks, channels } => nccl_need(ranks, channels),
            Consumer::Vllm { tp } => vllm_need(tp),
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

fn nccl_need(ranks: u32, channels: Option<u32>) -> ConsumerNeed {
    let rings = channels.unwrap_or(NCCL_CHANNELS);
    let assumed = match channels {
        Some(_) => "",
        None => " (assumed: NCCL picks the channels from the topology; give nccl:RANKS:CHANNELS)",
    };
    ConsumerNeed {
        name: format!("NCCL, {ranks} ranks"),
        bytes: ranks as u64 * (rings as u64 * NCCL_CONNECTION_BYTES + NCCL_PROXY_POOL_BYTES),
        basis: format!(
            "{ranks} ranks x ({rings} ring channels{assumed} x {} per receiving connection, when the ranks talk through /dev/shm: no P2P between their GPUs, NCCL_P2P_DISABLE, or GPUs P2P cannot reach; + {} for each rank's proxy ops pool, NCCL 2.23.4's, more in releases with 64 channels)",
            ByteSize(NCCL_CONNECTION_BYTES),
            ByteSize(NCCL_PROXY_POOL_BYTES)
        ),
        source: "NVIDIA/nccl's source (src/init.cc's default buffer sizes, src/transport/shm.cc; 2.23.4's src/include/proxy.h for the ops pool); not measured: no GPUs here",
        measured: false,
    }
}

fn vllm_need(tp: u32) -> ConsumerNeed {
    let basis = if tp < 2 {
        "at tensor parallelism 1 vLLM runs its one worker in the engine process: no message queue in /dev/shm".to_string()
    } else {
        format!(
            "the executor's broadcast to {tp} workers (16 MiB x 10 chunks; VLLM_MQ_MAX_CHUNK_BYTES_MB changes it) + {tp} response queues of 24 MiB x 10 + the TP group's 4 MiB x 6, reserved at start-up: vLLM refuses to start (\"Insufficient space in /dev/shm\") when the free space is short, and takes the pages as messages are written"
        )
    };
    ConsumerNeed {
        name: format!("vLLM, tensor parallel {tp}"),
        bytes: vllm_queue_bytes(tp as u64),
        basis,
        source: "vLLM 0.33.0's source (vllm/distributed/device_communicators/shm_broadcast.py, vllm/v1/executor/multiproc_executor.py, vllm/distributed/parallel_state.py, vllm/envs.py); not measured: no GPUs here",
        measured: false,
    }
}

impl FromStr for Consumer {
    type Err = BadValue;

    /// `nccl:RANKS[:CHANNELS]`, `vllm:TP` or `ray:SIZE`.
    fn from_str(s: &str) -> Result<Consumer, BadValue> {
        let wanted = "nccl:RANKS[:CHANNELS] (e.g. nccl:8), vllm:TENSOR_PARALLEL (e.g. vllm:4) or ray:OBJECT_STORE_SIZE (e.g. ray:2g)";
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
            (Some("vllm"), Some(tp), None, None) => Ok(Consumer::Vllm {
                tp: count(tp).ok_or_else(bad)?,
            }),
            (Some("ray"), Some(size), None, None) => Ok(Consumer::Ray {
                object_store: ByteSize::parse(size).map_err(|_| bad())?,
            }),
            _ => Err(bad()),
        }
    }
}

/// One `[[consumers]]` table of a scenario, as written (keys with `-`, as the knobs').
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum ConsumerTable {
    Nccl {
        ranks: u32,
        channels: Option<u32>,
    },
    Vllm {
        #[serde(rename = "tensor-parallel")]
        tensor_parallel: u32,
    },
    Ray {
        #[serde(rename = "object-store")]
        object_store: String,
    },
}

/// A scenario's `[[consumers]]` tables. Each is checked as its `--with` spelling is, so both
/// say the same of a bad value; an error names the file and the table.
pub fn from_tables(value: Option<toml::Value>, origin: &str) -> Result<Vec<Consumer>> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let toml::Value::Array(entries) = value else {
        bail!("{origin}: 'consumers' must be an array of tables ([[consumers]])");
    };
    let wanted = "kind = \"nccl\" with ranks (and channels), kind = \"vllm\" with tensor-parallel, or kind = \"ray\" with object-store";
    entries
        .into_iter()
        .enumerate()
        .map(|(i, entry)| {
            let table = ConsumerTable::deserialize(entry).map_err(|e| {
                anyhow!(
                    "{origin}: consumers[{i}]: {} (expected {wanted})",
                    e.to_string().trim()
                )
            })?;
            let spec = match table {
                ConsumerTable::Nccl {
                    ranks,
                    channels: Some(c),
                } => format!("nccl:{ranks}:{c}"),
                ConsumerTable::Nccl {
                    ranks,
                    channels: None,
                } => format!("nccl:{ranks}"),
                ConsumerTable::Vllm { tensor_parallel } => format!("vllm:{tensor_parallel}"),
                ConsumerTable::Ray { object_store } => format!("ray:{object_store}"),
            };
            spec.parse::<Consumer>()
                .map_err(|e| anyhow!("{origin}: consumers[{i}]: {e}"))
        })
        .collect()
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
            Consumer::Vllm { tp } => write!(f, "vllm:{tp}"),
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
        assert_eq!(
            "vllm:4".parse::<Consumer>().unwrap(),
            Consumer::Vllm { tp: 4 }
        );
        for bad in [
            "nccl",
            "nccl:0",
            "nccl:8:2:1",
            "ray:lots",
            "vllm",
            "vllm:0",
            "vllm:2:1",
            "",
        ] {
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
        assert_eq!(need.bytes, 8 * (2 * 9_637_888 + 10_486_112));
        assert!(!need.measured && need.basis.contains("assumed"));
        let given = Consumer::Nccl {
            ranks: 8,
            channels: Some(4),
        }
        .need();
        assert_eq!(given.bytes, 8 * (4 * 9_637_888 + 10_486_112));
        assert!(!given.basis.contains("assumed"));
    }

    fn tables(text: &str) -> Result<Vec<Consumer>> {
        let mut root: toml::Table = text.parse().unwrap();
        from_tables(root.remove("consumers"), "t.toml")
    }

    #[test]
    fn consumer_tables_read_as_their_specs_and_bad_ones_name_the_table() {
        let read = tables(
            "[[consumers]]\nkind = \"nccl\"\nranks = 8\nchannels = 4\n[[consumers]]\nkind = \"vllm\"\ntensor-parallel = 2\n[[consumers]]\nkind = \"ray\"\nobject-store = \"2g\"\n",
        )
        .unwrap();
        let given: Vec<Consumer> = ["nccl:8:4", "vllm:2", "ray:2g"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(read, given);
        assert!(tables("").unwrap().is_empty());
        for (bad, says) in [
            ("consumers = 3", "must be an array of tables"),
            (
                "[[consumers]]\nkind = \"gloo\"",
                "consumers[0]: unknown variant",
            ),
            (
                "[[consumers]]\nkind = \"nccl\"\nranks = 0",
                "consumers[0]: 'nccl:0' is not",
            ),
            (
                "[[consumers]]\nkind = \"ray\"\nobject-store = \"lots\"",
                "consumers[0]",
            ),
            ("[[consumers]]\nkind = \"vllm\"\ntp = 2", "unknown field"),
        ] {
            let e = tables(bad).unwrap_err().to_string();
            assert!(e.starts_with("t.toml: ") && e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn nccl_s_ops_pool_is_its_ops_and_tail_and_the_older_layout_gives_the_known_size() {
        assert_eq!(NCCL_PROXY_POOL_BYTES, 10_486_112);
        // The same count of 112-byte ops (NCCL before 2.23) is the 7,340,384 bytes reported
        // for 2.18-2.22: the layout arithmetic agrees with that figure.
        assert_eq!(65_536 * 112 + 352, 7_340_384);
    }

    #[test]
    fn vllm_s_queues_are_160_mib_plus_240_mib_per_worker_plus_the_tp_group_s() {
        let mib = 1u64 << 20;
        assert_eq!(vllm_queue_bytes(1), 0);
        // TP 2: 10 x (16 MiB + 3) + 2 x 10 x (24 MiB + 2) + 6 x (4 MiB + 2).
        assert_eq!(
            vllm_queue_bytes(2),
            160 * mib + 30 + 2 * (240 * mib + 20) + 24 * mib + 12
        );
        let eight = Consumer::Vllm { tp: 8 }.need();
        assert_eq!(eight.bytes / mib, 160 + 8 * 240 + 24);
        assert!(!eight.measured && eight.source.contains("vLLM 0.33.0"));
        assert!(Consumer::Vllm { tp: 1 }
            .need()
            .basis
            .contains("no message queue"));
    }
}
