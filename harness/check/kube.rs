//! Kubernetes objects: every pod spec a document holds (a Pod's `spec`, the `template.spec` of
//! a Deployment, Job, CronJob's `jobTemplate`, and those inside Kubeflow, KubeRay, JobSet,
//! LeaderWorkerSet and Volcano objects, found by walking to every mapping whose `containers`
//! are containers, through aliases within a bound), each container's /dev/shm judged against
//! the rules, sized for the ranks it runs (its launcher's, else one per accelerator).
//!
//! What the platforms do on their own (docs/CHECK.md has the sources): with nothing on
//! /dev/shm a container gets its runtime's 64 MiB; a memory-backed emptyDir's tmpfs is sized
//! by its `sizeLimit` (SizeMemoryBackedVolumes, on by default since 1.22) and its pages count
//! against the container's memory limit; KubeRay adds a memory-backed emptyDir on /dev/shm to
//! the Ray container of every pod it makes (sized to that container's memory limit).

use super::demand::{in_process_framework, is_accelerator, looks_ml, ranks_in, Loaders, Ranks};
pub use super::kube_objects::is_kubernetes;
use super::kube_objects::objects;
use super::rules::{self, Finding, Rule};
use super::runtime_class::{self, RuntimeClasses};
use super::yaml_tree::{Node, Value};
use model::kube_quantity::kube_quantity;
use model::size::ByteSize;
use plan::fixes::Target;

/// A pod spec found in a document, with where it is.
struct PodSpec<'a> {
    spec: &'a Node,
    /// `Deployment/train`, with the path inside for an embedded one.
    object: String,
    /// Whether KubeRay makes the pods (it mounts /dev/shm on the Ray container itself).
    kuberay: bool,
    /// Rules silenced by `shmbench.io/ignore` on the object or the pod template.
    ignored: Vec<&'static Rule>,
}

/// The annotation that silences rules on an object or pod template.
pub const IGNORE_ANNOTATION: &str = "shmbench.io/ignore";

fn ignored_in(meta: Option<&Node>) -> Vec<&'static Rule> {
    meta.and_then(|m| m.at(&["annotations", IGNORE_ANNOTATION]))
        .and_then(Node::text)
        .map(|list| rules::ignored(list).0)
        .unwrap_or_default()
}

/// Whether a mapping is a pod spec: its `containers` is a list of containers.
fn is_pod_spec(node: &Node) -> bool {
    node.get("containers").is_some_and(|c| {
        !c.items().is_empty()
            && c.items()
                .iter()
                .all(|i| i.get("image").is_some() || i.get("name").is_some())
    })
}

/// Nodes the walk may visit inside aliases in one document: what a deployment file's aliases
/// hold many times over, far fewer than aliases of aliases multiply to.
const ALIASED_VISITS: usize = 100_000;

/// A walk to every pod spec of an object, through its aliases (bounded).
struct Walk<'a> {
    path: Vec<String>,
    /// Each pod spec, its path from the object and its template's metadata.
    found: Vec<(&'a Node, String, Option<&'a Node>)>,
    aliased_left: usize,
}

impl<'a> Walk<'a> {
    /// Every pod spec under `node` (not inside another).
    fn visit(&mut self, node: &'a Node, meta: Option<&'a Node>, aliased: bool) {
        if aliased {
            if self.aliased_left == 0 {
                return;
            }
            self.aliased_left -= 1;
        }
        if is_pod_spec(node) {
            self.found.push((node, self.path.join("."), meta));
            return;
        }
        match &node.value {
            Value::Anchored(inner) => self.visit(inner, meta, aliased),
            Value::Alias(inner) => self.visit(inner, meta, true),
            Value::Map(entries) => {
                // A pod template's own metadata (annotations) sits beside its spec.
                let template_meta = node.get("metadata").or(meta);
                for (key, child) in entries {
                    self.path.push(key.clone());
                    self.visit(child, template_meta, aliased);
                    self.path.pop();
                }
            }
            Value::Seq(items) => {
                for (i, child) in items.iter().enumerate() {
                    self.path.push(i.to_string());
                    self.visit(child, meta, aliased);
                    self.path.pop();
                }
            }
            Value::Scalar(_) => {}
        }
    }
}

fn find_pods(doc: &Node) -> Vec<PodSpec<'_>> {
    let mut out = Vec::new();
    for object in objects(doc) {
        let kind = object.get("kind").and_then(Node::text).unwrap_or("object");
        let name = object
            .at(&["metadata", "name"])
            .and_then(Node::text)
            .unwrap_or("(unnamed)");
        let api = object
            .get("apiVersion")
            .and_then(Node::text)
            .unwrap_or_default();
        let kuberay = api.starts_with("ray.io/");
        let object_ignores = ignored_in(object.get("metadata"));
        let mut walk = Walk {
            path: vec!["spec".into()],
            found: Vec::new(),
            aliased_left: ALIASED_VISITS,
        };
        if let Some(spec) = object.get("spec") {
            walk.visit(spec, None, false);
        }
        for (spec, path, meta) in walk.found {
            let mut ignored = object_ignores.clone();
            ignored.extend(ignored_in(meta));
            let object = match kind {
                "Pod" => format!("Pod/{name}"),
                _ => format!("{kind}/{name} ({path})"),
            };
            out.push(PodSpec {
                spec,
                object,
                kuberay,
                ignored,
            });
        }
    }
    out
}

/// The command a container runs, as one text.
fn command_text(container: &Node) -> String {
    let mut words = Vec::new();
    for key in ["command", "args"] {
        if let Some(node) = container.get(key) {
            words.extend(
                node.items()
                    .iter()
                    .filter_map(Node::text)
                    .map(str::to_string),
            );
            words.extend(node.text().map(str::to_string));
        }
    }
    words.join(" ")
}

/// The findings of one document's pod specs.
pub fn check(
    doc: &Node,
    file: &str,
    loaders: &Loaders,
    classes: &RuntimeClasses,
    out: &mut Vec<Finding>,
) {
    for pod in find_pods(doc) {
        check_pod(&pod, file, loaders, classes, out);
    }
}

/// Where a finding is: the file, the pod spec and the container.
struct Place<'a> {
    file: &'a str,
    pod: &'a PodSpec<'a>,
    container: Option<String>,
    classes: &'a RuntimeClasses,
}

impl Place<'_> {
    fn at(
        &self,
        rule: &'static Rule,
        node: &Node,
        message: String,
        fix: Option<String>,
    ) -> Finding {
        Finding {
            rule,
            file: self.file.to_string(),
            line: node.line,
            object: self.pod.object.clone(),
            container: self.container.clone(),
            message,
            fix,
        }
    }
}

fn check_pod(
    pod: &PodSpec,
    file: &str,
    loaders: &Loaders,
    classes: &RuntimeClasses,
    out: &mut Vec<Finding>,
) {
    let spec = pod.spec;
    let mut found = Vec::new();
    let host_ipc = spec
        .get("hostIPC")
        .filter(|n| n.yaml11_bool() == Some(true));
    if let Some(n) = host_ipc {
        let place = Place {
            file,
            pod,
            container: None,
            classes,
        };
        found.push(place.at(&rules::HOST_IPC, n, "hostIPC: true: the pod uses the node's /dev/shm, shared with every pod on the node that does the same".into(), None));
    }
    let volumes = spec.get("volumes").map(Node::items).unwrap_or_default();
    let containers = spec.get("containers").map(Node::items).unwrap_or_default();
    for (index, container) in containers.iter().enumerate() {
        let place = Place {
            file,
            pod,
            container: container
                .get("name")
                .and_then(Node::text)
                .map(str::to_string),
            classes,
        };
        // KubeRay mounts /dev/shm on the Ray container (the first) of the pods it makes.
        let operator_mounts = pod.kuberay && index == 0;
        check_container(
            &place,
            container,
            volumes,
            host_ipc.is_some(),
            operator_mounts,
            loaders,
            &mut found,
        );
    }
    out.extend(
        found
            .into_iter()
            .filter(|f| !pod.ignored.iter().any(|r| r.id == f.rule.id)),
    );
}

/// What a container is: whether it looks like ML, its memory limit, its command, and the ranks
/// it runs (its launcher's, else one per accelerator it asks for).
struct Container {
    ml: bool,
    memory_limit: Option<u64>,
    command: String,
    ranks: Option<Ranks>,
}

fn read_container(container: &Node, loaders: &Loaders) -> Container {
    let image = container
        .get("image")
        .and_then(Node::text)
        .unwrap_or_default();
    let command = command_text(container);
    let resources = container.get("resources");
    // The accelerators asked for (the most any resource name says).
    let accelerators = ["limits", "requests"]
        .iter()
        .filter_map(|k| resources.and_then(|r| r.get(k)))
        .flat_map(|m| m.entries().iter())
        .filter(|(r, _)| is_accelerator(r))
        .map(|(r, v)| (v.text().and_then(|t| t.parse::<u64>().ok()).unwrap_or(1), r))
        .max_by_key(|(n, _)| *n);
    let gpus = accelerators.map_or(0, |(n, _)| n);
    let ranks = ranks_in(&command).or_else(|| {
        accelerators.and_then(|(n, r)| Ranks::new(n, format!("{r}: {n} in its resources")))
    });
    let words = format!("{image} {command}");
    // One accelerator and a framework whose input pipeline is threads: nothing in /dev/shm.
    let in_process = in_process_framework(&words) && gpus <= 1;
    Container {
        ml: (gpus > 0 || looks_ml(image) || looks_ml(&command) || loaders.given) && !in_process,
        memory_limit: resources
            .and_then(|r| r.at(&["limits", "memory"]))
            .and_then(Node::text)
            .and_then(kube_quantity),
        command,
        ranks,
    }
}

fn check_container(
    place: &Place,
    container: &Node,
    volumes: &[Node],
    host_ipc: bool,
    operator_mounts: bool,
    loaders: &Loaders,
    found: &mut Vec<Finding>,
) {
    let c = read_container(container, loaders);
    let need = loaders.demand(&c.command, c.ranks.clone());
    let fix = || need.fix(Target::Kubernetes, c.memory_limit);
    let mount = container
        .get("volumeMounts")
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .find(|m| {
            m.get("mountPath")
                .and_then(Node::text)
                .is_some_and(|p| p.trim_end_matches('/') == "/dev/shm")
        });
    let Some(mount) = mount else {
        let name = place.container.as_deref().unwrap_or("?");
        if c.ml && !need.nothing() && !host_ipc && !operator_mounts {
            found.push(place.at(
                &rules::NO_DEV_SHM,
                container,
                format!(
                    "container {name} has nothing on /dev/shm: its runtime's 64 MiB; it needs {}",
                    need.words()
                ),
                fix(),
            ));
        }
        if operator_mounts && c.memory_limit.is_none() && c.ml {
            found.push(place.at(&rules::OVER_MEMORY_LIMIT, container, "KubeRay mounts a memory-backed emptyDir on this Ray container's /dev/shm sized to its memory limit, and it has none: /dev/shm is bounded only by the node".into(), None));
        }
        return;
    };
    let volume_name = mount.get("name").and_then(Node::text).unwrap_or_default();
    let Some(volume) = volumes
        .iter()
        .find(|v| v.get("name").and_then(Node::text) == Some(volume_name))
    else {
        return;
    };
    if volume.at(&["hostPath", "path"]).is_some() {
        found.push(place.at(&rules::HOST_IPC, volume, format!("volume {volume_name} mounts the node's /dev/shm (hostPath): shared with every pod on the node"), None));
        return;
    }
    let Some(empty_dir) = volume.get("emptyDir") else {
        return;
    };
    if empty_dir.get("medium").and_then(Node::text) != Some("Memory") {
        found.push(place.at(&rules::ON_DISK, empty_dir, format!("volume {volume_name} on /dev/shm is an emptyDir on the node's disk (no medium: Memory)"), fix()));
        return;
    }
    let size = empty_dir
        .get("sizeLimit")
        .and_then(Node::text)
        .and_then(kube_quantity);
    if let Some((rule, message, fix)) =
        runtime_class::on_memory_emptydir(place.pod.spec, size, place.classes)
    {
        found.push(place.at(rule, empty_dir, message, Some(fix)));
    }
    let limit_words = c
        .memory_limit
        .map(|l| format!(" and the container's limit {}", ByteSize(l)))
        .unwrap_or_default();
    match (size, c.memory_limit) {
        (None, _) => found.push(place.at(&rules::NO_SIZE_LIMIT, empty_dir, format!("volume {volume_name} has no sizeLimit: /dev/shm is bounded by the node's memory{limit_words}"), fix())),
        (Some(s), Some(l)) if s > l => found.push(place.at(&rules::OVER_MEMORY_LIMIT, empty_dir, format!("sizeLimit {} is above the container's memory limit {}: the pages count against the limit, so it is OOMKilled before /dev/shm is full", ByteSize(s), ByteSize(l)), None)),
        (Some(s), None) if c.ml => found.push(place.at(&rules::OVER_MEMORY_LIMIT, empty_dir, format!("sizeLimit {} but no memory limit: the pages count against the node's memory, and the kubelet evicts the pod under pressure", ByteSize(s)), None)),
        _ => {}
    }
    if let Some(s) = size.filter(|s| need.known && *s < need.peak) {
        found.push(place.at(
            &rules::BELOW_NEED,
            empty_dir,
            format!(
                "sizeLimit {} is below the peak its loaders reach: it needs {}",
                ByteSize(s),
                need.words()
            ),
            fix(),
        ));
    }
}
