//! Compose files: each service that looks like ML (a GPU reserved, `gpus`, the nvidia runtime,
//! or a torch/vLLM/... image or command) needs `shm_size`, `ipc: host` or a tmpfs on /dev/shm,
//! since Docker gives a container 64 MiB of /dev/shm otherwise; one that has a size is held to
//! what its loaders need. A service silences rules with the label `shmbench.io/ignore`.

use super::kube::IGNORE_ANNOTATION;
use super::need::{in_process_framework, looks_ml, Loaders};
use super::rules::{self, Finding};
use super::yaml::Node;
use crate::model::kube_quantity::kube_quantity;
use crate::model::size::ByteSize;
use crate::plan::fixes::compose_snippet;

/// Whether a document is a compose file: `services` of mappings, and no Kubernetes `kind`.
pub(crate) fn is_compose(doc: &Node) -> bool {
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

pub(crate) fn check(doc: &Node, file: &str, loaders: &Loaders, out: &mut Vec<Finding>) {
    let Some(services) = doc.get("services") else {
        return;
    };
    for (name, service) in services.entries() {
        let image = words(service.get("image"));
        let command = format!(
            "{} {}",
            words(service.get("command")),
            words(service.get("entrypoint"))
        );
        let words = format!("{image} {command}");
        let ml = (wants_gpu(service) || looks_ml(&image) || looks_ml(&command) || loaders.given)
            && !in_process_framework(&words);
        let ignored = service
            .at(&["labels", IGNORE_ANNOTATION])
            .and_then(Node::text)
            .map(|l| rules::ignored(l).0)
            .unwrap_or_default();
        let need = loaders.need(&command);
        let fix = Some(compose_snippet(need.bytes, file, name));
        let mut found = Vec::new();
        let ipc = service.get("ipc").and_then(Node::text);
        let shm = service.get("shm_size");
        let object = format!("service {name}");
        if ipc == Some("host") {
            found.push(Finding { rule: &rules::HOST_IPC, file: file.into(), line: service.get("ipc").map_or(service.line, |n| n.line), object: object.clone(), container: None, message: format!("service {name} uses ipc: host: the host's /dev/shm, shared with every container that does the same; shm_size no longer applies"), fix: None });
        } else if shm.is_none()
            && ipc.is_none()
            && tmpfs_on_shm(service).is_none()
            && ml
            && !need.nothing()
        {
            found.push(Finding {
                rule: &rules::COMPOSE_NO_SHM,
                file: file.into(),
                line: service.line,
                object: object.clone(),
                container: None,
                message: format!(
                    "service {name} has no shm_size or ipc: Docker's 64 MiB; it needs {}",
                    need.words()
                ),
                fix: fix.clone(),
            });
        }
        if let Some(size) = shm
            .and_then(Node::text)
            .and_then(compose_size)
            .filter(|s| need.known && *s < need.peak)
        {
            found.push(Finding {
                rule: &rules::BELOW_NEED,
                file: file.into(),
                line: shm.map_or(service.line, |n| n.line),
                object,
                container: None,
                message: format!(
                    "shm_size {} is below the peak its loaders reach: it needs {}",
                    ByteSize(size),
                    need.words()
                ),
                fix,
            });
        }
        out.extend(
            found
                .into_iter()
                .filter(|f| !ignored.iter().any(|r| r.id == f.rule.id)),
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
