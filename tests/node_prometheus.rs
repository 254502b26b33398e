//! `shmbench node --textfile` end to end with the real programs: Debian's node_exporter serves
//! the metrics file through its textfile collector and Prometheus scrapes it, both on loopback
//! ports of the test's own, with the shipped alert rules (their `for:` shortened to a second).
//! A dead leftover planted in a private tmpfs fires `ShmbenchDeadLeftovers`; the sweep resolves it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::common::*;

/// Kills and reaps the processes it holds, however the test ends.
struct Daemons(Vec<Child>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The body of an HTTP GET on loopback, or None while nothing answers.
fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
}

/// Waits up to a minute (a loaded 2-core machine; Prometheus scrapes and evaluates every
/// second here) for `done` to hold of the alerts Prometheus reports.
fn wait_for_alerts(port: u16, what: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let alerts = get(port, "/api/v1/alerts").unwrap_or_default();
        if done(&alerts) {
            return alerts;
        }
        assert!(
            Instant::now() < deadline,
            "{what}; the last answer: {alerts}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The private tmpfs, checked every half second into the textfile directory, swept when the
/// test creates `$OUT/sweep`, ended by `$OUT/stop`.
const CHECKS: &str = r#"
mount -t tmpfs -o size=64m tmpfs /dev/shm || exit 1
sleep 0 & gone=$!; wait $gone
head -c 8388608 /dev/zero > /dev/shm/torch_${gone}_1_0
check() { "$SHMBENCH" node --dead-older-than 0s --textfile "$OUT/textfile" > /dev/null; }
while [ ! -e "$OUT/sweep" ]; do check; sleep 0.5; done
"$SHMBENCH" shm --sweep-stale --older-than 0s > "$OUT/sweep.out" 2>&1
while [ ! -e "$OUT/stop" ]; do check; sleep 0.5; done
"#;

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_dead_leftover_fires_the_alert_through_node_exporter_and_prometheus_and_the_sweep_resolves_it()
{
    let Some(bin) = prometheus_or_skip() else {
        return;
    };
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("node-prometheus");
    let out = dir.as_ref();
    std::fs::create_dir(out.join("textfile")).unwrap();
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/integrations/prometheus/shmbench.rules.yml"
    ))
    .unwrap();
    let quick: String = shipped
        .lines()
        .map(|l| match l.trim_start().starts_with("for: ") {
            true => format!("{}for: 1s\n", &l[..l.len() - l.trim_start().len()]),
            false => format!("{l}\n"),
        })
        .collect();
    write(&out.join("rules.yml"), &quick);
    let (exporter_port, prometheus_port) = (free_port(), free_port());
    write(
        &out.join("prometheus.yml"),
        &format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n",
            out.join("rules.yml").display()
        ),
    );
    let quiet = |c: &mut Command| -> Child {
        c.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut daemons = Daemons(Vec::new());
    daemons.0.push(quiet(
        Command::new(bin.join("prometheus-node-exporter"))
            .arg(format!("--web.listen-address=127.0.0.1:{exporter_port}"))
            .arg("--collector.disable-defaults")
            .arg("--collector.textfile")
            .arg(format!(
                "--collector.textfile.directory={}",
                out.join("textfile").display()
            )),
    ));
    daemons.0.push(quiet(
        Command::new(bin.join("prometheus"))
            .arg(format!(
                "--config.file={}",
                out.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                out.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prometheus_port}")),
    ));
    daemons.0.push(
        Command::new("unshare")
            .args(["-m", "bash", "-c", CHECKS])
            .env("SHMBENCH", BIN)
            .env("OUT", out)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let firing = wait_for_alerts(prometheus_port, "the alert never fired", |a| {
        a.contains("\"alertname\":\"ShmbenchDeadLeftovers\"") && a.contains("\"state\":\"firing\"")
    });
    assert!(firing.contains("\"path\":\"/dev/shm\""), "{firing}");
    assert!(
        firing.contains("Dead leftovers hold 8MiB of /dev/shm"),
        "{firing}"
    );
    // The exporter serves what the check wrote.
    let served = get(exporter_port, "/metrics").unwrap_or_default();
    assert!(
        served.contains("shmbench_node_shm_dead_bytes{path=\"/dev/shm\"} 8.388608e+06"),
        "{served}"
    );
    write(&out.join("sweep"), "");
    wait_for_alerts(prometheus_port, "the alert never resolved", |a| {
        a.contains("\"status\":\"success\"") && !a.contains("ShmbenchDeadLeftovers")
    });
    let swept = std::fs::read_to_string(out.join("sweep.out")).unwrap_or_default();
    assert!(swept.contains("torch_"), "{swept}");
    write(&out.join("stop"), "");
    let mut checks = daemons.0.pop().unwrap();
    let ended = checks.wait().unwrap();
    assert!(ended.success(), "the checks' script: {ended}");
    drop(daemons);
    assert_clean(&before);
}
