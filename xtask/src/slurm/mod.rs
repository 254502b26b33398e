//! The Slurm clusters the tests submit to, each started by `cargo xtask test` and stopped after
//! it ([`cluster`] makes and ends them):
//! - the one-node cluster (`SLURM_CONF`): the Slurm path's tests, one node whose /dev/shm is a
//!   512 MiB tmpfs of its own;
//! - the fleet (`SHMBENCH_TEST_SLURM_FLEET_CONF`): seven nodes that differ on purpose, for the
//!   fleet's path end to end (`tests/slurm_fleet.rs`). Four are alike; `small-shm`'s /dev/shm
//!   is too small for the tests' loader, `leftover`'s holds a dead job's file that leaves less
//!   than one batch, and `one-cpu`'s slurmd (so its jobs) may use one CPU. Seven because the
//!   fleet's verdict needs five nodes measuring a cell (`--min-nodes`), and three of the seven
//!   are bad.

mod cluster;

use cluster::{Layout, Node};

use crate::requirement::Requirement;

/// The one-node cluster's node /dev/shm.
pub const NODE_SHM: &str = "512m";

fn one_node() -> Layout {
    Layout {
        dir: "/tmp/shmbench-slurm-cluster",
        name: "shmbench-test",
        ports: (16817, 16818),
        nodes: vec![Node {
            name: "shmbench-node".into(),
            shm: NODE_SHM,
            leftover: None,
            cpus: None,
            own_host: None,
        }],
    }
}

/// The fleet's nodes' /dev/shm (the alike ones'), and its too small one's: the tests' loader
/// (2 workers, batch 8 of 3x224x224 f32, 4.6 MiB a batch) holds up to five batches.
pub const FLEET_SHM: &str = "64m";
const SMALL_SHM: &str = "8m";
/// Leaves 2 MiB of `leftover`'s 64: less than one batch.
const LEFTOVER: &str = "62M";

fn fleet() -> Layout {
    let node = |name: &str, port: u16| Node {
        name: name.into(),
        shm: FLEET_SHM,
        leftover: None,
        cpus: None,
        own_host: Some(port),
    };
    let mut nodes: Vec<Node> = (1..=4)
        .map(|i| node(&format!("good-{i}"), 16920 + i))
        .collect();
    nodes.push(Node {
        shm: SMALL_SHM,
        ..node("small-shm", 16925)
    });
    nodes.push(Node {
        leftover: Some(LEFTOVER),
        ..node("leftover", 16926)
    });
    nodes.push(Node {
        cpus: Some("0"),
        ..node("one-cpu", 16927)
    });
    Layout {
        dir: "/tmp/shmbench-slurm-fleet",
        name: "shmbench-fleet",
        ports: (16917, 16918),
        nodes,
    }
}

/// A Slurm cluster the tests submit to, and the variables that tell them where it is.
pub struct Cluster {
    name: &'static str,
    layout: fn() -> Layout,
    /// The variable naming its slurm.conf, and the one saying its (alike) nodes' /dev/shm.
    conf_variable: &'static str,
    shm_variable: &'static str,
    shm: &'static str,
}

pub const ONE_NODE: Cluster = Cluster {
    name: "a one-node Slurm cluster",
    layout: one_node,
    conf_variable: "SLURM_CONF",
    shm_variable: "SHMBENCH_TEST_SLURM_NODE_SHM",
    shm: NODE_SHM,
};

pub const FLEET: Cluster = Cluster {
    name: "a seven-node Slurm cluster (the fleet)",
    layout: fleet,
    conf_variable: "SHMBENCH_TEST_SLURM_FLEET_CONF",
    shm_variable: "SHMBENCH_TEST_SLURM_FLEET_SHM",
    shm: FLEET_SHM,
};

impl Requirement for Cluster {
    fn name(&self) -> &'static str {
        self.name
    }

    fn skip_variable(&self) -> Option<&'static str> {
        Some("SHMBENCH_SKIP_SLURM")
    }

    fn env(&self) -> Vec<(String, String)> {
        let conf = (self.layout)().conf().display().to_string();
        vec![
            (self.conf_variable.into(), conf),
            (self.shm_variable.into(), self.shm.into()),
        ]
    }

    fn stop(&self) -> Option<String> {
        Some(cluster::stop(&(self.layout)()))
    }

    fn ensure(&self) -> anyhow::Result<String> {
        cluster::start(&(self.layout)())
    }
}
