//! A node check as Kubernetes Node Problem Detector's custom plugin monitor: the config file
//! NPD reads (`--config.custom-plugin-monitor=FILE`), whose one permanent rule runs
//! `shmbench node ... --format line` and sets the node condition [`CONDITION`] from its exit
//! status (0 False, 1 True, 2 Unknown) and first line (the condition's message). The fields are
//! NPD's (pkg/custompluginmonitor/types: `plugin`, `pluginConfig`, `source`, `conditions`,
//! `rules`, `metricsReporting`); the test checks them one by one against its documented rules.

use serde_json::{json, Value};

use super::text::FIRST_LINE_MAX;

/// The node condition the rule sets.
pub(crate) const CONDITION: &str = "DevShmProblem";
/// How often NPD runs the check. An audit reads every process's fds and mappings once: on a
/// node of thousands of processes that is a second or two of one core, so not more often.
pub(crate) const INVOKE_INTERVAL: &str = "60s";
/// The rule's timeout and NPD's global one (a rule's may not exceed it).
const RULE_TIMEOUT: &str = "50s";
const GLOBAL_TIMEOUT: &str = "55s";

/// The plugin monitor config that runs `path` with `args` (`node`, the policy flags, `--format
/// line`).
pub fn plugin_config(path: &str, args: &[String]) -> Value {
    json!({
        "plugin": "custom",
        "pluginConfig": {
            "invoke_interval": INVOKE_INTERVAL,
            "timeout": GLOBAL_TIMEOUT,
            "max_output_length": FIRST_LINE_MAX,
            // One check at a time: two audits side by side only double the cost.
            "concurrency": 1,
            // The message is the reason (which problem, how many bytes): a new one is news.
            "enable_message_change_based_condition_update": true
        },
        "source": "shmbench-node",
        "metricsReporting": true,
        "conditions": [{
            "type": CONDITION,
            "reason": "DevShmFit",
            "message": "shmbench: /dev/shm fits its jobs"
        }],
        "rules": [{
            "type": "permanent",
            "condition": CONDITION,
            "reason": "DevShmUnfit",
            "path": path,
            "args": args,
            "timeout": RULE_TIMEOUT
        }]
    })
}
