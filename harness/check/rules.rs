//! The rules `shmbench check` applies, each with a stable id, a name, a severity and what it
//! means; and a finding, one rule met at one place of one file. docs/CHECK.md documents each
//! rule with an example, the platform facts behind it (and their sources) and how to silence it.

use serde::Serialize;

model::choice! {
    /// How much a finding matters; `--fail-on` compares against it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Severity {
        Note = "note",
        Warning = "warning",
        Error = "error",
    }
}

impl Severity {
    pub fn word(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A rule: what it finds, once.
#[derive(Debug, Serialize)]
pub struct Rule {
    pub id: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    /// One sentence: what is wrong when it fires.
    pub summary: &'static str,
}

pub const NO_DEV_SHM: Rule = Rule {
    id: "SHM001",
    name: "no-dev-shm",
    severity: Severity::Error,
    summary: "An ML container has nothing on /dev/shm, so the container runtime's 64 MiB applies: a DataLoader with workers dies with \"Bus error\"",
};
pub const NO_SIZE_LIMIT: Rule = Rule {
    id: "SHM002",
    name: "memory-emptydir-without-size-limit",
    severity: Severity::Warning,
    summary: "A memory-backed emptyDir on /dev/shm without sizeLimit is bounded only by the node's memory (and df inside shows the node's size, kubernetes#108291)",
};
pub const OVER_MEMORY_LIMIT: Rule = Rule {
    id: "SHM003",
    name: "size-limit-over-memory-limit",
    severity: Severity::Warning,
    summary: "The /dev/shm pages count against the container's memory limit: a sizeLimit above it (or no limit at all) means an OOM kill before the tmpfs is full",
};
pub const BELOW_NEED: Rule = Rule {
    id: "SHM004",
    name: "dev-shm-below-need",
    severity: Severity::Error,
    summary: "The /dev/shm given is smaller than what the loaders put there by the doctor's model",
};
pub const HOST_IPC: Rule = Rule {
    id: "SHM005",
    name: "host-ipc",
    severity: Severity::Note,
    summary: "Host IPC works, but shares the node's /dev/shm with every pod or container on the node, and the size flags no longer apply",
};
pub const ON_DISK: Rule = Rule {
    id: "SHM006",
    name: "dev-shm-on-disk",
    severity: Severity::Warning,
    summary: "The emptyDir on /dev/shm is not medium Memory: it is the node's disk, not a tmpfs, and every batch goes through it",
};
pub const KATA_SIZE_LIMIT: Rule = Rule {
    id: "SHM007",
    name: "kata-ignores-size-limit",
    severity: Severity::Warning,
    summary: "Under Kata Containers a Memory emptyDir is a tmpfs inside the pod's VM sized at half the VM's memory whatever its sizeLimit (kata-containers #2438, #3765): the /dev/shm the pod gets is not the one written",
};
pub const GVISOR_OOM: Rule = Rule {
    id: "SHM008",
    name: "gvisor-oom-ends-the-sandbox",
    severity: Severity::Note,
    summary: "Under gVisor (runsc) a sized /dev/shm holds as on Linux, but an OOM kill at the memory limit ends the whole sandbox, not one DataLoader worker: the pod dies with no \"Bus error\" to read",
};
pub const COMPOSE_NO_SHM: Rule = Rule {
    id: "SHM010",
    name: "compose-without-shm-size",
    severity: Severity::Error,
    summary: "An ML service has neither shm_size nor ipc: Docker gives it 64 MiB of /dev/shm",
};
pub const DOCKER_RUN_NO_SHM: Rule = Rule {
    id: "SHM020",
    name: "docker-run-without-shm-size",
    severity: Severity::Error,
    summary: "A docker or podman run of an ML image has neither --shm-size nor --ipc: the engine gives it 64 MiB of /dev/shm",
};
pub const SLURM_MEM: Rule = Rule {
    id: "SHM030",
    name: "slurm-mem-below-dev-shm",
    severity: Severity::Warning,
    summary: "The job's --mem is below the /dev/shm its loaders need: where the cluster charges tmpfs pages to the job (task/cgroup with ConstrainRAMSpace, a cluster setting), it ends OUT_OF_MEMORY",
};

/// Every rule, in id order.
pub const RULES: [&Rule; 11] = [
    &NO_DEV_SHM,
    &NO_SIZE_LIMIT,
    &OVER_MEMORY_LIMIT,
    &BELOW_NEED,
    &HOST_IPC,
    &ON_DISK,
    &KATA_SIZE_LIMIT,
    &GVISOR_OOM,
    &COMPOSE_NO_SHM,
    &DOCKER_RUN_NO_SHM,
    &SLURM_MEM,
];

/// One rule met at one place.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub rule: &'static Rule,
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// `Deployment/train`, `service trainer`, `docker run`, `#SBATCH`.
    pub object: String,
    pub container: Option<String>,
    /// Why, in one sentence, with the numbers.
    pub message: String,
    /// What to write instead, sized.
    pub fix: Option<String>,
}

/// The rule an id or a name names (`SHM001`, `no-dev-shm`, any case).
pub fn named(word: &str) -> Option<&'static Rule> {
    let word = word.trim();
    RULES
        .iter()
        .copied()
        .find(|r| r.id.eq_ignore_ascii_case(word) || r.name.eq_ignore_ascii_case(word))
}

/// The rules an ignore list names (`SHM001,host-ipc`; `all`); unknown words are returned apart.
pub fn ignored(list: &str) -> (Vec<&'static Rule>, Vec<String>) {
    let mut rules = Vec::new();
    let mut unknown = Vec::new();
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if word.eq_ignore_ascii_case("all") {
            rules.extend(RULES);
        } else {
            match named(word) {
                Some(rule) => rules.push(rule),
                None => unknown.push(word.to_string()),
            }
        }
    }
    (rules, unknown)
}
