//! What a workload in a deployment file is and needs: whether it looks like ML (a GPU asked
//! for, a torch/vLLM/SGLang/Triton/Ray image or command, or `--loaders` given), and the
//! /dev/shm its loaders need by the doctor's model (`plan::job`), from `--loaders`/`--ranks`,
//! else from a DataLoader's `num_workers`/`batch_size` written in its command, else the
//! doctor's default loader (then a size below it is not called wrong, only the fixes sized);
//! times the ranks on the node: `--ranks`, else what the workload says (its accelerators,
//! torchrun's `--nproc_per_node`, Slurm's `--gres=gpu:N`), else one.

use regex::Regex;
use std::sync::OnceLock;

use model::config::CellConfig;
use model::job::LoaderSpec;
use model::size::ByteSize;
use plan::fixes::{size_fixes, Target};
use plan::{advice, job};

/// Images and commands of ML training and inference.
fn ml_words() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)(pytorch|torch|vllm|sglang|tritonserver|triton|rayproject|\bray\b|deepspeed|megatron|nemo|huggingface|transformers|accelerate launch|lightning|tensorflow|jax|\bnccl\b|cuda|rocm|nvcr\.io)").expect("a valid pattern")
    })
}

/// Whether a text (an image, a command line) names ML.
pub fn looks_ml(text: &str) -> bool {
    ml_words().is_match(text)
}

/// Whether a text names only a framework whose input pipeline stays in one process
/// (TensorFlow's tf.data, JAX, Keras: threads, not worker processes), and nothing of torch's
/// world: such a workload on one accelerator puts no batches in /dev/shm (several accelerators
/// bring NCCL, which does).
pub fn in_process_framework(text: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?i)(tensorflow|tf_cnn|keras|\bjax\b)").expect("a valid pattern")
    });
    static TORCH: OnceLock<Regex> = OnceLock::new();
    let torch = TORCH.get_or_init(|| {
        Regex::new(r"(?i)(torch|vllm|sglang|\bray\b|rayproject|deepspeed|lightning)")
            .expect("a valid pattern")
    });
    re.is_match(text) && !torch.is_match(text)
}

/// Whether a resource name asks for an accelerator (`nvidia.com/gpu`, `amd.com/gpu`, ...).
pub fn is_accelerator(resource: &str) -> bool {
    let r = resource.to_ascii_lowercase();
    ["gpu", "neuron", "habana.ai", "tpu"]
        .iter()
        .any(|w| r.contains(w))
}

/// The /dev/shm a workload needs, and where the number comes from.
#[derive(Clone, Debug)]
pub struct Demand {
    /// The doctor's recommendation: the peak + 25% (or + the batches a refill can overlap),
    /// rounded up to 64 MiB.
    pub bytes: u64,
    pub peak: u64,
    /// How `bytes` follows from `peak`: `the peak 1.6 GiB + 25%`.
    pub sized: String,
    /// `--loaders train:8x2x128 x 8 ranks`, `num_workers=4, batch_size=64 in its command`.
    pub basis: String,
    /// Whether the loaders are the workload's own (given, or read from its command): only then
    /// is a smaller /dev/shm called too small.
    pub known: bool,
}

impl Demand {
    /// The doctor's first fix for `target`, sized for this need, as one snippet.
    pub fn fix(&self, target: Target, memory_limit: Option<u64>) -> Option<String> {
        size_fixes(target, self.bytes, &self.basis, memory_limit)
            .into_iter()
            .next()
            .and_then(|f| f.commands.into_iter().next())
    }

    /// Whether the loaders put nothing in /dev/shm (`num_workers=0`: the main loads every batch).
    pub fn nothing(&self) -> bool {
        self.known && self.peak == 0
    }
}

/// How many processes of a workload share a node's /dev/shm, each with its own loaders, and
/// what says so (`--ranks 8`, `torchrun --nproc_per_node=8 in its command`).
#[derive(Clone, Debug)]
pub struct Ranks {
    pub count: u32,
    pub source: String,
}

/// The most ranks a workload is taken to run on one node (as `--ranks` allows).
pub const MAX_RANKS: u32 = 1024;

impl Ranks {
    /// `count` ranks, said by `source`; none for 0, at most [`MAX_RANKS`].
    pub fn new(count: u64, source: String) -> Option<Ranks> {
        (count > 0).then(|| Ranks {
            count: count.min(u64::from(MAX_RANKS)) as u32,
            source,
        })
    }
}

/// The ranks a command starts on a node: torchrun's (and `torch.distributed.run`'s)
/// `--nproc_per_node=N` or `--nproc-per-node N`; `gpu`/`auto` say no number.
pub fn ranks_in(command: &str) -> Option<Ranks> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"--nproc[_-]per[_-]node(?:=|\s+)(\d+)\b").expect("a valid pattern")
    });
    let found = re.captures(command)?;
    let count = found.get(1)?.as_str().parse().ok()?;
    Ranks::new(count, format!("{} in its command", found.get(0)?.as_str()))
}

/// What the user said of the loaders, for every workload checked.
pub struct Loaders {
    /// The base loader (shape, dtype, strategy: the loader flags, else the doctor's default).
    pub base: CellConfig,
    pub specs: Vec<LoaderSpec>,
    /// `--ranks`; without it each workload's own (its accelerators, its launcher), else 1.
    pub ranks: Option<u32>,
    /// Whether --loaders or --ranks was given.
    pub given: bool,
    /// Whether the base loader's workers, prefetch, batch or shape came from the user's flags
    /// (else they are the doctor's defaults).
    pub base_from_flags: bool,
}

impl Loaders {
    fn demand_of(&self, specs: &[LoaderSpec], basis: String, known: bool, ranks: u32) -> Demand {
        let job = job::predict(&self.base, ranks, specs, &[]);
        let (bytes, sized) = advice::recommend_job(&job, self.base.knobs.pin_memory);
        Demand {
            bytes,
            peak: job.node_bytes,
            sized,
            basis,
            known,
        }
    }

    /// The ranks a workload is sized for, and the words that say where they come from
    /// (nothing when it is one rank because nothing says otherwise).
    fn ranks(&self, workload: Option<Ranks>) -> (u32, String) {
        let ranks = match self.ranks {
            Some(n) => Ranks::new(n.into(), format!("--ranks {n}")),
            None => workload,
        };
        match ranks {
            Some(r) => {
                let plural = if r.count == 1 { "" } else { "s" };
                (
                    r.count,
                    format!(" x {} rank{plural} ({})", r.count, r.source),
                )
            }
            None => (1, String::new()),
        }
    }

    /// The need of a workload whose command is `command`, run as `workload` ranks per node
    /// (when it says so) unless `--ranks` was given.
    pub fn demand(&self, command: &str, workload: Option<Ranks>) -> Demand {
        let (ranks, rank_words) = self.ranks(workload);
        if self.given {
            let names: Vec<String> = self
                .specs
                .iter()
                .map(|s| format!("{}:{}x{}x{}", s.name, s.workers, s.prefetch, s.batch))
                .collect();
            let loaders = match names.is_empty() {
                true => "the loader flags".to_string(),
                false => names.join(","),
            };
            let basis = format!("{loaders} as given{rank_words}");
            return self.demand_of(&self.specs, basis, true, ranks);
        }
        if let Some(spec) = loader_in(command, &self.base) {
            if spec.workers == 0 {
                return Demand {
                    bytes: 0,
                    peak: 0,
                    sized: "none".into(),
                    basis: "0 workers in its command: the main loads every batch, nothing goes through /dev/shm".into(),
                    known: true,
                };
            }
            let basis = format!(
                "num_workers={}, batch_size={} in its command, {} samples{rank_words}",
                spec.workers, spec.batch, self.base.knobs.shape
            );
            return self.demand_of(&[spec], basis, true, ranks);
        }
        let k = &self.base.knobs;
        let whose = match self.base_from_flags {
            true => "the loader of your flags",
            false => "the doctor's default loader",
        };
        let basis = format!(
            "{whose} ({} workers, prefetch {}, batch {} of {}){rank_words}: pass --loaders for each of yours",
            k.workers, k.prefetch, k.batch, k.shape
        );
        self.demand_of(&[], basis, false, ranks)
    }
}

/// A DataLoader's workers and batch written in a command (`--num-workers 8`, `num_workers=8`,
/// `--batch-size 64`, `batch_size: 64`), with the base loader's prefetch.
fn loader_in(command: &str, base: &CellConfig) -> Option<LoaderSpec> {
    static RE: OnceLock<(Regex, Regex)> = OnceLock::new();
    let (workers, batch) = RE.get_or_init(|| {
        (
            Regex::new(r#"(?i)(?:^|[\s'"-])(?:num[_-]workers|dataloader[_-]num[_-]workers|workers)[\s=:]+(\d+)"#)
                .expect("valid"),
            Regex::new(r"(?i)-?-?(?:per[_-]device[_-]train[_-])?batch[_-]size[\s=:]+(\d+)")
                .expect("valid"),
        )
    });
    let number =
        |re: &Regex| -> Option<u32> { re.captures(command)?.get(1)?.as_str().parse().ok() };
    let workers = number(workers)?;
    let batch = number(batch).unwrap_or(base.knobs.batch);
    Some(LoaderSpec {
        name: "command".into(),
        workers,
        prefetch: base.knobs.prefetch,
        batch,
        dataset_bytes: None,
    })
}

impl Demand {
    /// `2 GiB (the peak 1.6 GiB + 25%, for ...)`.
    pub fn words(&self) -> String {
        format!(
            "{} ({}, for {})",
            ByteSize(self.bytes),
            self.sized,
            self.basis
        )
    }
}
