//! A pod's `runtimeClassName`: a sandboxed runtime changes what a Memory emptyDir on /dev/shm
//! does. Kata mounts it as a tmpfs inside the pod's VM sized at half the VM's memory, whatever
//! its sizeLimit (kata-containers #2438 and #3765, open; #10897 was closed as intended).
//! gVisor keeps a sized tmpfs's limit as Linux does, but an OOM kill at the memory limit takes
//! the whole sandbox (both measured with runsc 20221219: docs/RUNTIMES.md).

use std::collections::HashMap;

use super::kube_objects::objects;
use super::rules::{self, Rule};
use super::yaml_tree::Node;
use model::size::ByteSize;

/// A sandboxed runtime, by the names clusters give its runtime classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sandbox {
    /// `kata`, `kata-qemu`, `kata-clh`, `kata-fc`, ...
    Kata,
    /// `gvisor` (GKE Sandbox's), `runsc`, `gvisor-kvm`, ...
    Gvisor,
}

impl Sandbox {
    pub fn of_class(name: &str) -> Option<Sandbox> {
        let name = name.to_ascii_lowercase();
        if name.contains("kata") {
            Some(Sandbox::Kata)
        } else if name.contains("gvisor") || name.contains("runsc") {
            Some(Sandbox::Gvisor)
        } else {
            None
        }
    }
}

/// The runtime classes the checked files define (`kind: RuntimeClass`, its name and its
/// handler): a pod's class is judged by the handler it stands for (`runtimeClassName:
/// sandboxed` whose handler is `runsc` is gVisor; a class named `kata` whose handler is `runc`
/// is not Kata). A class no file defines is judged by its name.
#[derive(Debug, Default)]
pub struct RuntimeClasses(HashMap<String, String>);

impl RuntimeClasses {
    /// Adds the RuntimeClass objects of a document.
    pub fn collect(&mut self, doc: &Node) {
        for object in objects(doc) {
            let api = object.get("apiVersion").and_then(Node::text);
            if object.get("kind").and_then(Node::text) != Some("RuntimeClass")
                || !api.is_some_and(|a| a.starts_with("node.k8s.io/"))
            {
                continue;
            }
            let name = object.at(&["metadata", "name"]).and_then(Node::text);
            // Kubernetes refuses an empty handler: such a class names no runtime.
            let handler = (object.get("handler").and_then(Node::text))
                .filter(|h| !h.trim().is_empty() && *h != "null" && *h != "~");
            if let (Some(name), Some(handler)) = (name, handler) {
                self.0.insert(name.to_string(), handler.to_string());
            }
        }
    }

    /// The sandbox a class stands for, and the class as a finding names it (with its handler
    /// where a file defines it).
    fn sandbox(&self, class: &str) -> Option<(Sandbox, String)> {
        match self.0.get(class) {
            Some(handler) => Some((
                Sandbox::of_class(handler)?,
                format!("{class} (handler {handler})"),
            )),
            None => Some((Sandbox::of_class(class)?, class.to_string())),
        }
    }
}

/// What a Memory emptyDir on /dev/shm of sizeLimit `size` (None: none) means in the pod `spec`
/// under its runtime class: the rule it meets, why, and what to do; nothing for runc-like
/// classes.
pub fn on_memory_emptydir(
    spec: &Node,
    size: Option<u64>,
    classes: &RuntimeClasses,
) -> Option<(&'static Rule, String, String)> {
    let class = spec.get("runtimeClassName").and_then(Node::text)?;
    let limit = match size {
        Some(s) => format!("sizeLimit {}", ByteSize(s)),
        None => "sizeLimit (it has none)".to_string(),
    };
    let (sandbox, class) = classes.sandbox(class)?;
    Some(match sandbox {
        Sandbox::Kata => (
            &rules::KATA_SIZE_LIMIT,
            format!("runtimeClassName {class} is Kata: this Memory emptyDir is a tmpfs inside the pod's VM sized at half the VM's memory, not by its {limit}"),
            "size the pod's VM so half of its memory covers /dev/shm: metadata.annotations: io.katacontainers.config.hypervisor.default_memory: \"MiB\" (where the runtime's enable_annotations allows it), or give the job a runc runtime class".to_string(),
        ),
        Sandbox::Gvisor => (
            &rules::GVISOR_OOM,
            format!("runtimeClassName {class} is gVisor: a sized /dev/shm holds as on Linux, but an OOM kill at the memory limit ends the whole sandbox, not one worker, and the pod dies with no DataLoader error to read"),
            "keep the container's memory limit above sizeLimit plus the job's own memory, so /dev/shm fills (a Bus error the job reports) before the limit (a sandbox that vanishes)".to_string(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_known_by_the_names_clusters_give_them() {
        for (name, sandbox) in [
            ("kata", Some(Sandbox::Kata)),
            ("kata-qemu", Some(Sandbox::Kata)),
            ("Kata-FC", Some(Sandbox::Kata)),
            ("gvisor", Some(Sandbox::Gvisor)),
            ("runsc-kvm", Some(Sandbox::Gvisor)),
            ("runc", None),
            ("nvidia", None),
        ] {
            assert_eq!(Sandbox::of_class(name), sandbox, "{name}");
        }
    }
}
