//! A calibration as text.

use super::table;
use model::calibration::Calibration;
use model::size::ByteSize;

/// Text table of a calibration.
pub fn render(c: &Calibration) -> String {
    let mut out = format!(
        "memset {:.1} GB/s, memcpy {:.1} GB/s (one core)\nfresh segment per batch of {} ({} images): create, allocate, map, copy in, release\n",
        c.memset_gb_per_s,
        c.memcpy_gb_per_s,
        ByteSize(c.batch_bytes),
        c.images_per_batch
    );
    let headers = ["strategy", "torch", "threads", "batches/s", "img/s", "GB/s"];
    let rows: Vec<Vec<String>> = c
        .segments
        .iter()
        .map(|s| {
            vec![
                s.strategy.to_string(),
                s.torch.to_string(),
                s.threads.to_string(),
                format!("{:.1}", s.batches_per_s),
                format!("{:.0}", s.batches_per_s * c.images_per_batch as f64),
                format!("{:.2}", s.gb_per_s),
            ]
        })
        .collect();
    out.push_str(&table::markdown(&headers, &rows));
    out
}
