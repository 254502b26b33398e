//! `report.json`: the report's rows and verdicts for programs.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::json;

use super::{Format, ReportContent};
use crate::labels::{claim_label, explanation, status_label};
use analysis::claims;

pub struct Json;

impl Format for Json {
    fn write(&self, report: &ReportContent, dir: &Path) -> Result<PathBuf> {
        let sources: Vec<_> = report
            .sources
            .iter()
            .map(|s| {
                let rows: Vec<_> = s
                    .rows
                    .iter()
                    .map(|r| {
                        json!({
                            "row": r,
                            "status_label": status_label(r),
                            "claim_label": claim_label(r),
                            "verdict": claims::verdict(r),
                            "explanation": explanation(r),
                        })
                    })
                    .collect();
                json!({ "path": s.path, "label": s.label, "cells": rows })
            })
            .collect();
        let plots: Vec<_> = report
            .plots
            .iter()
            .map(|p| json!({"name": p.name, "png": p.png, "svg": p.svg_file}))
            .collect();
        let doc = json!({ "sources": sources, "problems": report.problems, "plots": plots });
        let path = dir.join("report.json");
        std::fs::write(&path, serde_json::to_string_pretty(&doc)?)?;
        Ok(path)
    }
}
