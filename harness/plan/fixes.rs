//! How to give a job N bytes of /dev/shm, as ready-to-paste snippets for where it runs: Docker,
//! Compose, Kubernetes, AWS Batch, Kubeflow Pipelines, Slurm, another container engine, a bare
//! host. Each snippet carries the number it was made for; nothing here is run.

use serde::Serialize;

use model::size::ByteSize;
use sys::detect::Place;

model::choice! {
    /// Where the job runs, as `doctor --platform` names it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Target {
        Docker = "docker",
        Compose = "compose",
        Kubernetes = "kubernetes",
        AwsBatch = "aws-batch",
        Kubeflow = "kubeflow",
        Slurm = "slurm",
        Podman = "podman": "Podman or another engine with Docker's flags.",
        Host = "host": "A machine without a container: its own /dev/shm.",
    }
}

impl From<Place> for Target {
    fn from(place: Place) -> Target {
        match place {
            Place::Docker => Target::Docker,
            Place::Kubernetes => Target::Kubernetes,
            Place::OtherContainer => Target::Podman,
            Place::Host => Target::Host,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Fix {
    pub title: String,
    pub commands: Vec<String>,
}

fn docker_size(bytes: u64) -> String {
    format!("{}m", bytes.div_ceil(1 << 20))
}

/// The compose snippet that gives service `service` of compose file `file` `bytes` of /dev/shm
/// (the doctor names a placeholder; `check` the service and file it read).
pub fn compose_snippet(bytes: u64, file: &str, service: &str) -> String {
    format!(
        "# {file}\nservices:\n  {service}:\n    shm_size: \"{}\"",
        docker_size(bytes)
    )
}

fn k8s_size(bytes: u64) -> String {
    format!("{}Mi", bytes.div_ceil(1 << 20))
}

/// The ways to give a job `recommended` bytes of /dev/shm on `target`; `basis` says where the
/// number comes from ("the peak 60 MiB + 25%"), `cgroup_limit` is the memory limit the tmpfs
/// pages count against, when one is known.
pub fn size_fixes(
    target: Target,
    recommended: u64,
    basis: &str,
    cgroup_limit: Option<u64>,
) -> Vec<Fix> {
    let size = docker_size(recommended);
    let mib = recommended.div_ceil(1 << 20);
    let shown = ByteSize(recommended);
    let memory_too = match cgroup_limit {
        Some(l) => format!(
            " The memory limit ({}) must also cover it: tmpfs pages count against it.",
            ByteSize(l)
        ),
        None => " The memory limit must also cover it: tmpfs pages count against it.".into(),
    };
    let fix = |title: String, commands: Vec<String>| Fix { title, commands };
    match target {
        Target::Docker => vec![
            fix(
                format!("Give the container {shown} of /dev/shm ({basis})"),
                vec![
                    format!("docker run --shm-size={size} ..."),
                    format!("# docker-compose.yml, under the service:\nshm_size: \"{size}\""),
                ],
            ),
            fix(
                "Or share the host's /dev/shm (single-tenant hosts only)".into(),
                vec![
                    "docker run --ipc=host ...".into(),
                    "# docker-compose.yml: ipc: host".into(),
                ],
            ),
        ],
        Target::Compose => vec![fix(
            format!("Give the service {shown} of /dev/shm ({basis})"),
            vec![compose_snippet(recommended, "docker-compose.yml", "train")],
        )],
        Target::Kubernetes => vec![fix(
            format!("Mount a memory-backed emptyDir of {shown} on /dev/shm ({basis}).{memory_too}"),
            vec![format!(
                "volumes:\n- name: dshm\n  emptyDir:\n    medium: Memory\n    sizeLimit: {}\n# in the container:\nvolumeMounts:\n- name: dshm\n  mountPath: /dev/shm\n# and resources.limits.memory of at least your usual use + {}",
                k8s_size(recommended),
                k8s_size(recommended)
            )],
        )],
        Target::AwsBatch => vec![fix(
            format!("Set the job definition's shared memory to {shown} ({basis}); sharedMemorySize is in MiB.{memory_too}"),
            vec![format!(
                "\"containerProperties\": {{\n  \"linuxParameters\": {{ \"sharedMemorySize\": {mib} }}\n}}"
            )],
        )],
        Target::Kubeflow => vec![fix(
            format!("Mount a memory-backed emptyDir of {shown} on the task's /dev/shm ({basis}), with kfp-kubernetes.{memory_too}"),
            vec![format!(
                "from kfp import kubernetes\nkubernetes.empty_dir_mount(task, volume_name=\"dshm\", mount_path=\"/dev/shm\",\n                           medium=\"Memory\", size_limit=\"{}\")",
                k8s_size(recommended)
            )],
        )],
        Target::Slurm => vec![
            fix(
                format!("A node's /dev/shm is one tmpfs shared by every job on it: make it {shown} ({basis}) times the jobs a node runs at once, or give each job its own with job_container/tmpfs. Measured (scenarios/slurm.toml): two jobs that each passed alone in a 512 MiB node /dev/shm both died of SIGBUS side by side"),
                vec![format!("# by the cluster's admins, on each node (and in its /etc/fstab):\nmount -o remount,size=<{size} x jobs per node> /dev/shm")],
            ),
            fix(
                "Ask for memory that covers the pages: with ConstrainRAMSpace they count against the job's --mem, and a job short of it ends OUT_OF_MEMORY, not with a Bus error. Where the OOM killer picks slurmstepd instead (a job whose memory is mostly /dev/shm pages, on a node that does not protect slurmstepd), the job stays RUNNING until its time limit and ends TIMEOUT (both measured on Slurm 22.05.8)".to_string(),
                vec![format!("#SBATCH --mem=<your usual use + {size}>")],
            ),
        ],
        Target::Podman => vec![fix(
            format!("Give the container {shown} of /dev/shm ({basis})"),
            vec![format!("podman run --shm-size={size} ...")],
        )],
        Target::Host => vec![fix(
            format!("Resize this host's /dev/shm to {shown} ({basis}; now, and at every boot)"),
            vec![
                format!("sudo mount -o remount,size={size} /dev/shm"),
                format!("echo \"tmpfs /dev/shm tmpfs defaults,size={size} 0 0\" | sudo tee -a /etc/fstab"),
            ],
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command of every fix for `target`, as one text.
    fn text(target: Target, bytes: u64, limit: Option<u64>) -> String {
        size_fixes(target, bytes, "the peak + 25%", limit)
            .iter()
            .flat_map(|f| f.commands.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn each_platform_gets_the_size_in_its_own_units_rounded_up() {
        let bytes = (1536 << 20) + 1; // just over 1.5 GiB: never rounded down
        assert!(text(Target::Docker, bytes, None).contains("--shm-size=1537m"));
        let k8s = text(Target::Kubernetes, bytes, None);
        assert!(
            k8s.contains("medium: Memory") && k8s.contains("sizeLimit: 1537Mi"),
            "{k8s}"
        );
        assert!(text(Target::Compose, bytes, None).contains("shm_size"));
        assert!(text(Target::Host, bytes, None).contains("remount,size=1537m"));
    }

    #[test]
    fn places_map_to_their_platforms() {
        assert_eq!(Target::from(Place::Kubernetes), Target::Kubernetes);
        assert_eq!(Target::from(Place::OtherContainer), Target::Podman);
        assert_eq!(docker_size(1), "1m");
        assert_eq!(k8s_size(64 << 20), "64Mi");
    }
}
