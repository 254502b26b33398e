//! The doctor's diagnosis as text or Markdown.

use model::size::ByteSize;
use plan::advice::Diagnosis;

/// Plain text (`md = true`: Markdown with headings and code blocks).
pub fn render(d: &Diagnosis, md: bool) -> String {
    let mut out = String::new();
    let head = |t: &str| {
        if md {
            format!("## {t}\n\n")
        } else {
            format!("{t}\n")
        }
    };
    out.push_str(&if md {
        "# shmbench doctor\n\n".to_string()
    } else {
        String::new()
    });
    out.push_str(&head("Loader"));
    out.push_str(&format!("{}\n\n", d.loader));
    let env = &d.environment;
    out.push_str(&head("Environment"));
    out.push_str(&format!(
        "{:?} ({}); /dev/shm {} ({} free); memory cgroup limit: {}; RLIMIT_NOFILE {}; kernel {}\n\n",
        env.place,
        env.evidence,
        ByteSize(env.shm_total_bytes),
        ByteSize(env.shm_free_bytes),
        env.cgroup_memory_limit.map(|l| ByteSize(l).to_string()).unwrap_or_else(|| "none".into()),
        env.nofile_soft,
        env.kernel
    ));
    out.push_str(&head("Prediction"));
    out.push_str(&format!(
        "peak /dev/shm {} = {} batches ({}).\n{}\n\n",
        ByteSize(d.peak_bytes),
        d.peak_batches,
        d.peak_reason,
        d.verdict
    ));
    out.push_str(&head("Limits"));
    for l in &d.limits {
        out.push_str(&format!("{}{l}\n", if md { "- " } else { "* " }));
    }
    out.push('\n');
    let target = serde_json::to_value(d.target)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    out.push_str(&head(&if d.fits {
        format!("If you need more (e.g. a bigger loader), on {target}")
    } else {
        format!("Fixes that fit, on {target}")
    }));
    for fix in &d.fixes {
        out.push_str(&format!("{}{}\n", if md { "- " } else { "* " }, fix.title));
        for c in &fix.commands {
            if md {
                out.push_str(&format!("\n```\n{c}\n```\n"));
            } else {
                for line in c.lines() {
                    out.push_str(&format!("    {line}\n"));
                }
            }
        }
        out.push('\n');
    }
    out.push_str(&head("Notes"));
    for w in &d.warnings {
        out.push_str(&format!("{}{w}\n", if md { "- " } else { "* " }));
    }
    out
}
