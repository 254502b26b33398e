//! Compose files: each service that looks like ML (a GPU reserved, `gpus`, the nvidia runtime,
//! or a torch/vLLM/... image or command) needs `shm_size`, `ipc: host` or a tmpfs on /dev/shm,
//! since Docker gives a container 64 MiB of /dev/shm otherwise (`ipc: private` and `shareable`
//! too; `ipc: none` mounts none at all); one that has a size is held to what its loaders need,
//! on as many ranks as it runs. A service silences rules with the label `shmbench.io/ignore`.

use super::demand::{in_process_framework, looks_ml, ranks_in, Loaders, Ranks};
use super::kube::IGNORE_ANNOTATION;
use super::rules::{self, Finding, Rule};
use super::yaml_tree::Node;
use model::kube_quantity::kube_quantity;
use model::size::ByteSize;
use plan::fixes::compose_snippet;

/// Whether a document is a compose file: `services` of mappings, and no Kubernetes `kind`.
pub fn is_compose(doc: &Node) -> bool {
    doc.get("kind").is_none()
        && doc.get("services").is_some_and(|s| {
            !s.entries().is_empty()
                && s.entries().iter().all(|(_, v)| {
                    v.get("image").is_some()
                        || v.get("build").is_some()
                        || v.get("command").is_some()
                })
        })
}

/// A compose size (`2gb`, `512m`, `1g`, bytes: Docker's binary units) in bytes, or a
/// Kubernetes-style quantity (`2Gi`) some files carry over.
fn compose_size(text: &str) -> Option<u64> {
    ByteSize::parse(text)
        .ok()
        .map(ByteSize::bytes)
        .or_else(|| kube_quantity(text))
}

/// A node's text, or its items joined (a command as a list).
fn words(node: Option<&Node>) -> String {
    node.map(|n| match n.text() {
        Some(t) => t.to_string(),
        None => n
            .items()
            .iter()
            .filter_map(Node::text)
            .collect::<Vec<_>>()
            .join(" "),
    })
    .unwrap_or_default()
}

/// Whether a service reserves a GPU.
fn wants_gpu(service: &Node) -> bool {
    let devices = service.at(&["deploy", "resources", "reservations", "devices"]);
    let reserved = devices.is_some_and(|d| {
        d.items().iter().any(|dev| {
            words(dev.get("capabilities")).contains("gpu")
                || words(dev.get("driver")).contains("nvidia")
        })
    });
    reserved
        || service.get("gpus").is_some()
        || service.get("runtime").and_then(Node::text) == Some("nvidia")
}

/// Whether a service mounts a tmpfs on /dev/shm (`volumes: [{type: tmpfs, target: /dev/shm}]`).
fn tmpfs_on_shm(service: &Node) -> Option<&Node> {
    let long = service
        .get("volumes")
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .find(|v| {
            v.get("target")
                .and_then(Node::text)
                .is_some_and(|t| t.trim_end_matches('/') == "/dev/shm")
        });
    long.or_else(|| {
        service
            .get("tmpfs")
            .filter(|t| words(Some(t)).contains("/dev/shm"))
    })
}

/// The ranks a service runs: its launcher's, else the GPUs its reservation counts.
fn service_ranks(service: &Node, command: &str) -> Option<Ranks> {
    ranks_in(command).or_else(|| {
        let devices = service.at(&["deploy", "resources", "reservations", "devices"]);
        devices?.items().iter().find_map(|d| {
            let count = d.get("count")?.text()?.parse::<u64>().ok()?;
            Ranks::new(count, format!("count: {count} GPUs reserved"))
        })
    })
}

/// What a service's `ipc` leaves on /dev/shm.
enum Ipc {
    /// Its own namespace (no `ipc`, `private`, `shareable`): `shm_size` or 64 MiB.
    Own,
    Host,
    /// `none`: no /dev/shm mounted at all.
    NoShm,
    /// `service:NAME`, `container:NAME`: another's, judged there.
    Shared,
}

fn ipc_of(service: &Node) -> Ipc {
    match service.get("ipc").and_then(Node::text) {
        Some("host") => Ipc::Host,
        Some("none") => Ipc::NoShm,
        Some(other) if other.contains(':') => Ipc::Shared,
        _ => Ipc::Own,
    }
}

pub fn check(doc: &Node, file: &str, loaders: &Loaders, out: &mut Vec<Finding>) {
    let Some(services) = doc.get("services") else {
        return;
    };
    for (name, service) in services.entries() {
        let ignored = service
            .at(&["labels", IGNORE_ANNOTATION])
            .and_then(Node::text)
            .map(|l| rules::ignored(l).0)
            .unwrap_or_default();
        let mut found = Vec::new();
        check_service(name, service, file, loaders, &mut found);
        out.extend(
            found
                .into_iter()
                .filter(|f| !ignored.iter().any(|r| r.id == f.rule.id)),
        );
    }
}

fn check_service(
    name: &str,
    service: &Node,
    file: &str,
    loaders: &Loaders,
    found: &mut Vec<Finding>,
) {
    let image = words(service.get("image"));
    let command = format!(
        "{} {}",
        words(service.get("command")),
        words(service.get("entrypoint"))
    );
    let words = format!("{image} {command}");
    let ml = (wants_gpu(service) || looks_ml(&image) || looks_ml(&command) || loaders.given)
        && !in_process_framework(&words);
    let need = loaders.demand(&command, service_ranks(service, &command));
    let fix = Some(compose_snippet(need.bytes, file, name));
    let shm = service.get("shm_size");
    let ipc_line = service.get("ipc").map_or(service.line, |n| n.line);
    let mut push = |rule: &'static Rule, line: usize, message: String, fix: Option<String>| {
        found.push(Finding {
            rule,
            file: file.into(),
            line,
            object: format!("service {name}"),
            container: None,
            message,
            fix,
        })
    };
    let wanting = ml && !need.nothing() && tmpfs_on_shm(service).is_none();
    match ipc_of(service) {
        Ipc::Host => push(&rules::HOST_IPC, ipc_line, format!("service {name} uses ipc: host: the host's /dev/shm, shared with every container that does the same; shm_size no longer applies"), None),
        Ipc::NoShm if wanting => push(&rules::COMPOSE_NO_SHM, ipc_line, format!("service {name} has ipc: none: no /dev/shm at all (shm_size does not apply); it needs {}", need.words()), fix.clone()),
        Ipc::Own if wanting && shm.is_none() => {
            let has = match service.get("ipc").and_then(Node::text) {
                Some(ipc) => format!("ipc: {ipc} and no shm_size"),
                None => "no shm_size or ipc".into(),
            };
            push(&rules::COMPOSE_NO_SHM, service.line, format!("service {name} has {has}: Docker's 64 MiB; it needs {}", need.words()), fix.clone())
        }
        _ => {}
    }
    if !matches!(ipc_of(service), Ipc::Own) {
        return;
    }
    if let Some(size) = shm
        .and_then(Node::text)
        .and_then(compose_size)
        .filter(|s| need.known && *s < need.peak)
    {
        let line = shm.map_or(service.line, |n| n.line);
        push(
            &rules::BELOW_NEED,
            line,
            format!(
                "shm_size {} is below the peak its loaders reach: it needs {}",
                ByteSize(size),
                need.words()
            ),
            fix,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_sizes_read_as_docker_reads_them() {
        assert_eq!(compose_size("2gb"), Some(2 << 30));
        assert_eq!(compose_size("512m"), Some(512 << 20));
        assert_eq!(compose_size("1G"), Some(1 << 30));
        assert_eq!(compose_size("67108864"), Some(64 << 20));
    }
}
