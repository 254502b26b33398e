//! A node's /dev/shm judged against a policy, the way a fleet's health machinery asks it: one
//! verdict (ok, a problem, or unknown when the node cannot be seen well enough), each problem
//! with the numbers its words need. `facts` gathers the facts, `shmbench node` says
//! the verdict to Slurm, Node Problem Detector, NHC and Prometheus (`text`, `drain`, `npd`, `nhc`, `prom`).

use serde::Serialize;

use model::segment_maker::Producer;

pub mod daemonset;
pub mod drain;
pub mod facts;
pub mod nhc;
pub mod npd;
pub mod prom;
pub mod text;
pub mod verdict;

pub use verdict::{NodeStatus, NodeVerdict, Problem, Unknown};

/// What the node's /dev/shm must be.
#[derive(Clone, Debug, Serialize)]
pub struct NodePolicy {
    /// The size the node's jobs need; None: the size is not judged.
    pub need_bytes: Option<u64>,
    /// Where that need comes from, for the reason (`--need`, or the doctor's model of a job).
    pub need_from: String,
    /// The share of the size that may be in use (0.9: a problem past 90%).
    pub max_used_share: f64,
    /// Bytes of dead leftovers tolerated.
    pub max_dead_bytes: u64,
    /// Dead leftovers younger than this are not counted yet (a job's teardown in progress).
    pub dead_older_than_s: f64,
    /// Memory mappings one process of the jobs holds at its peak (the doctor's model), judged
    /// against vm.max_map_count; None: not judged.
    pub maps_needed: Option<u64>,
}

/// A file in /dev/shm whose owner is proven gone and that no live process holds (the audit's
/// proof: `audit::findings::Staleness::DeadOwner`).
#[derive(Clone, Debug, Serialize)]
pub struct DeadFile {
    pub name: String,
    pub bytes: u64,
    /// Seconds since it last changed (the later of its mtime and ctime).
    pub age_s: f64,
}

/// Bytes and files in the tmpfs that one kind of producer's names point to (a hint by name,
/// held or not, named or unlinked).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ProducerBytes {
    pub producer: Producer,
    pub bytes: u64,
    pub files: u64,
}

/// What was seen of the node's /dev/shm.
#[derive(Clone, Debug, Serialize)]
pub struct NodeFacts {
    pub path: String,
    /// The filesystem's type, as `statfs` names it (`tmpfs`, `ext4`, or its magic number);
    /// `missing` when the path does not exist.
    pub filesystem: String,
    /// Its size (0 for a tmpfs mounted without a limit, `size=0`: bounded by memory only).
    pub size_bytes: u64,
    pub used_bytes: u64,
    /// Inodes left (statvfs): at 0, no segment can be created however many bytes are free.
    pub inodes_free: Option<u64>,
    /// Mounted read-only: no segment can be created.
    pub read_only: bool,
    /// Where the filesystem holding the path is mounted, when that is not the path itself
    /// (the path is then a directory of another mount, such as /dev's devtmpfs).
    pub within_mount: Option<String>,
    /// The directory's permission bits (None where it is not a directory).
    pub mode: Option<u32>,
    /// Proven dead leftovers, largest first.
    pub dead: Vec<DeadFile>,
    /// Files no live process holds whose names name no owner: counted, never called dead.
    pub unowned_bytes: u64,
    pub unowned_files: u64,
    /// Files whose owner is proven gone that no sweep can remove (a second name, the kernel or
    /// a mount holds them): counted apart, never dead and never unknown.
    pub pinned_bytes: u64,
    pub pinned_files: u64,
    pub producers: Vec<ProducerBytes>,
    pub max_map_count: Option<u64>,
    /// Why some files could not be judged (not every process is visible: not root, another pid
    /// namespace): with no leftover proven dead, the leftover check is then unknown.
    pub blind: Option<String>,
}

impl NodeFacts {
    /// A filesystem's facts before anything is read of its use and files: what a path that
    /// does not exist or is not a tmpfs gives, filled in where more is known.
    pub(crate) fn bare(path: String, filesystem: &str, max_map_count: Option<u64>) -> NodeFacts {
        NodeFacts {
            path,
            filesystem: filesystem.into(),
            size_bytes: 0,
            used_bytes: 0,
            inodes_free: None,
            read_only: false,
            within_mount: None,
            mode: None,
            dead: Vec::new(),
            unowned_bytes: 0,
            unowned_files: 0,
            pinned_bytes: 0,
            pinned_files: 0,
            producers: Vec::new(),
            max_map_count,
            blind: None,
        }
    }

    pub(crate) fn is_tmpfs(&self) -> bool {
        self.filesystem == "tmpfs"
    }

    pub(crate) fn is_missing(&self) -> bool {
        self.filesystem == MISSING
    }

    /// The dead leftovers older than `age_s`: what the policy counts.
    pub(crate) fn dead_older_than(&self, age_s: f64) -> impl Iterator<Item = &DeadFile> {
        self.dead.iter().filter(move |d| d.age_s >= age_s)
    }
}

/// The `filesystem` of a path that does not exist.
pub(crate) const MISSING: &str = "missing";

/// Judges `facts` against `policy`: a problem wherever one is proven; otherwise unknown where
/// something could not be judged; otherwise ok.
pub fn judge(facts: &NodeFacts, policy: &NodePolicy) -> NodeVerdict {
    let mut problems = Vec::new();
    let mut unknowns = Vec::new();
    if facts.is_missing() {
        problems.push(Problem::Missing);
    } else if !facts.is_tmpfs() && facts.within_mount.is_none() {
        problems.push(Problem::NotTmpfs {
            filesystem: facts.filesystem.clone(),
        });
    }
    if let Some(mount_point) = &facts.within_mount {
        problems.push(Problem::NotOwnMount {
            filesystem: facts.filesystem.clone(),
            mount_point: mount_point.clone(),
        });
    }
    if facts.read_only {
        problems.push(Problem::ReadOnly);
    } else if let Some(mode) = facts.mode.filter(|m| m & 0o002 == 0) {
        problems.push(Problem::NotWritable { mode });
    }
    if facts.inodes_free == Some(0) {
        problems.push(Problem::NoInodes);
    }
    // A tmpfs without a size limit is bounded by memory, which this check does not judge.
    let unlimited = facts.is_tmpfs() && facts.size_bytes == 0;
    if let Some(need) = policy.need_bytes.filter(|_| !unlimited) {
        if facts.size_bytes < need {
            problems.push(Problem::TooSmall {
                size_bytes: facts.size_bytes,
                need_bytes: need,
                need_from: policy.need_from.clone(),
            });
        }
    }
    if facts.size_bytes > 0
        && facts.used_bytes as f64 > policy.max_used_share * facts.size_bytes as f64
    {
        problems.push(Problem::TooFull {
            used_bytes: facts.used_bytes,
            size_bytes: facts.size_bytes,
            max_used_share: policy.max_used_share,
        });
    }
    // A leftover proven dead is a problem even where other files could not be judged; where
    // none is, what could not be seen leaves the check unknown, never ok. With no bytes
    // tolerated, an empty dead file counts too (it holds an inode).
    let dead: Vec<&DeadFile> = facts.dead_older_than(policy.dead_older_than_s).collect();
    let bytes: u64 = dead.iter().map(|d| d.bytes).sum();
    if !dead.is_empty() && (policy.max_dead_bytes == 0 || bytes > policy.max_dead_bytes) {
        problems.push(Problem::DeadLeftovers {
            bytes,
            files: dead.len() as u64,
            oldest_s: dead.iter().map(|d| d.age_s).fold(0.0, f64::max),
        });
    } else if let Some(why) = &facts.blind {
        unknowns.push(Unknown::Leftovers { why: why.clone() });
    }
    if let Some(needed) = policy.maps_needed {
        match facts.max_map_count {
            Some(max) if max < needed => problems.push(Problem::FewMappings {
                max_map_count: max,
                needed,
            }),
            Some(_) => {}
            None => unknowns.push(Unknown::MapCount),
        }
    }
    let status = match (problems.is_empty(), unknowns.is_empty()) {
        (false, _) => NodeStatus::Problem,
        (true, false) => NodeStatus::Unknown,
        (true, true) => NodeStatus::Ok,
    };
    NodeVerdict {
        status,
        problems,
        unknowns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn facts() -> NodeFacts {
        NodeFacts {
            size_bytes: 2048 * MIB,
            used_bytes: 100 * MIB,
            inodes_free: Some(1000),
            ..NodeFacts::bare("/dev/shm".into(), "tmpfs", Some(65530))
        }
    }

    fn policy() -> NodePolicy {
        NodePolicy {
            need_bytes: Some(1200 * MIB),
            need_from: "--need".into(),
            max_used_share: 0.9,
            max_dead_bytes: 0,
            dead_older_than_s: 600.0,
            maps_needed: Some(100),
        }
    }

    #[test]
    fn a_node_that_fits_is_ok_and_each_shortfall_is_its_problem() {
        assert_eq!(judge(&facts(), &policy()).status, NodeStatus::Ok);
        let small = NodeFacts {
            size_bytes: 64 * MIB,
            used_bytes: 60 * MIB,
            ..facts()
        };
        let verdict = judge(&small, &policy());
        assert_eq!(verdict.status, NodeStatus::Problem);
        let codes: Vec<_> = verdict.problems.iter().map(Problem::code).collect();
        assert_eq!(codes, ["too_small", "too_full"]);
        let disk = NodeFacts {
            filesystem: "ext2/ext3".into(),
            ..facts()
        };
        assert_eq!(judge(&disk, &policy()).problems[0].code(), "not_tmpfs");
        let maps = NodeFacts {
            max_map_count: Some(50),
            ..facts()
        };
        assert_eq!(judge(&maps, &policy()).problems[0].code(), "few_mappings");
        let stuck = NodeFacts {
            inodes_free: Some(0),
            read_only: true,
            ..facts()
        };
        let codes: Vec<_> = judge(&stuck, &policy())
            .problems
            .iter()
            .map(Problem::code)
            .collect();
        assert_eq!(codes, ["read_only", "no_inodes"]);
        let missing = NodeFacts {
            filesystem: MISSING.into(),
            size_bytes: 0,
            ..facts()
        };
        assert_eq!(judge(&missing, &policy()).problems[0].code(), "missing");
        // size=0: no limit but memory, so neither too small nor too full.
        let unlimited = NodeFacts {
            size_bytes: 0,
            ..facts()
        };
        assert_eq!(judge(&unlimited, &policy()).status, NodeStatus::Ok);
    }

    #[test]
    fn only_dead_leftovers_old_enough_and_past_the_bytes_count() {
        let dead = |age_s| DeadFile {
            name: "torch_7_1_0".into(),
            bytes: 3 * MIB,
            age_s,
        };
        let young = NodeFacts {
            dead: vec![dead(5.0)],
            ..facts()
        };
        assert_eq!(judge(&young, &policy()).status, NodeStatus::Ok);
        let old = NodeFacts {
            dead: vec![dead(5.0), dead(3600.0)],
            ..facts()
        };
        let verdict = judge(&old, &policy());
        assert_eq!(
            verdict.problems,
            [Problem::DeadLeftovers {
                bytes: 3 * MIB,
                files: 1,
                oldest_s: 3600.0
            }]
        );
        let tolerant = NodePolicy {
            max_dead_bytes: 3 * MIB,
            ..policy()
        };
        assert_eq!(judge(&old, &tolerant).status, NodeStatus::Ok);
        let empty = NodeFacts {
            dead: vec![DeadFile {
                bytes: 0,
                ..dead(3600.0)
            }],
            ..facts()
        };
        assert_eq!(
            judge(&empty, &policy()).problems[0].code(),
            "dead_leftovers"
        );
    }

    #[test]
    fn what_cannot_be_seen_is_unknown_unless_a_problem_is_proven() {
        let blind = NodeFacts {
            blind: Some("not root".into()),
            max_map_count: None,
            ..facts()
        };
        let verdict = judge(&blind, &policy());
        assert_eq!(verdict.status, NodeStatus::Unknown);
        assert_eq!(verdict.status.exit_code(), 2);
        assert_eq!(verdict.unknowns.len(), 2);
        let blind_and_small = NodeFacts {
            size_bytes: 64 * MIB,
            used_bytes: 0,
            ..blind
        };
        assert_eq!(
            judge(&blind_and_small, &policy()).status.exit_code(),
            1,
            "a proven problem outranks what could not be seen"
        );
    }
}
