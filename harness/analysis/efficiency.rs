//! A cell's img/s against this machine's calibrated limit for its strategy and profile.

use crate::model::calibration::Calibration;
use crate::results::row::{round, Row};

/// Fills the row's `limit_img_per_s` and `efficiency` columns from a calibration of this machine
/// (left empty when the calibration did not measure the row's strategy and profile).
pub fn judge(row: &mut Row, calibration: &Calibration, image_bytes: u64) {
    let Some(bytes_per_s) = calibration.limit_bytes_per_s(row.strategy, row.torch) else {
        return;
    };
    let limit = bytes_per_s / image_bytes.max(1) as f64;
    row.limit_img_per_s = Some(round(limit, 1));
    row.efficiency = row.img_per_s.map(|r| round(r / limit, 4));
}
