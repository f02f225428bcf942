//! `--baseline PATH.json`: a run compared with an earlier one, cell by cell. For each framework
//! the change of its median RPC/s and of its ratios to raw and tonic, flagged where the change
//! is larger than both runs' spreads (see [`Change`]).

use std::fmt::Write as _;

use serde::Serialize;

use crate::report::{self, Row};
use crate::stats::{Change, Summary};

/// One framework in one cell of both runs.
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    /// The framework.
    pub framework: String,
    /// The cell, as `A 16cl×1 tasks 32B` (`… 1MiB bytes` for the bytes payload).
    pub cell: String,
    /// Median RPC/s, before and after.
    pub rps: Change,
    /// Ratio to raw, before and after (when both runs have raw).
    pub x_raw: Option<Change>,
    /// Ratio to tonic, before and after (when both runs have tonic).
    pub x_tonic: Option<Change>,
}

impl Compared {
    /// Whether any of the changes is flagged.
    pub fn flagged(&self) -> bool {
        self.rps.flagged || self.ratio_flagged()
    }

    /// Whether a ratio's change is flagged.
    pub fn ratio_flagged(&self) -> bool {
        [self.x_raw, self.x_tonic].iter().flatten().any(|c| c.flagged)
    }
}

/// The cell of `row` in a few words.
pub fn cell_label(row: &Row) -> String {
    format!(
        "{} {}cl×{} {} {}",
        row.workload,
        row.clients,
        row.inflight,
        row.callers,
        report::size_payload_label(row.size, &row.payload)
    )
}

fn change(before: Option<&Summary>, after: Option<&Summary>) -> Option<Change> {
    Some(Change::between(before?, after?))
}

/// Compares every row of `after` with the row of the same framework and cell in `before`;
/// rows in only one of the runs are left out (see [`unmatched`]), and so are the ratios of raw
/// and tonic to themselves.
pub fn compare(before: &[Row], after: &[Row]) -> Vec<Compared> {
    after
        .iter()
        .filter_map(|new| {
            let old = before
                .iter()
                .find(|o| o.cell() == new.cell() && o.framework == new.framework)?;
            Some(Compared {
                framework: new.framework.clone(),
                cell: cell_label(new),
                rps: Change::between(&old.rps, &new.rps),
                x_raw: change(old.x_raw.as_ref(), new.x_raw.as_ref()).filter(|_| new.framework != "raw"),
                x_tonic: change(old.x_tonic.as_ref(), new.x_tonic.as_ref())
                    .filter(|_| new.framework != "tonic"),
            })
        })
        .collect()
}

/// How many rows of `after` have no counterpart in `before`, and the other way round.
pub fn unmatched(before: &[Row], after: &[Row]) -> (usize, usize) {
    let missing = |from: &[Row], to: &[Row]| {
        from.iter()
            .filter(|r| {
                !to.iter()
                    .any(|o| o.cell() == r.cell() && o.framework == r.framework)
            })
            .count()
    };
    (missing(after, before), missing(before, after))
}

fn ratio_cell(change: Option<Change>) -> String {
    change.map_or("-".to_owned(), |c| {
        format!(
            "{:.2}→{:.2} {:+.2}{}",
            c.before,
            c.after,
            c.delta,
            if c.flagged { " *" } else { "" }
        )
    })
}

/// The comparison table, one line per framework and cell, `*` marking flagged changes, and a
/// summary line.
pub fn table(compared: &[Compared]) -> String {
    let mut out = format!(
        "{:<24} {:<15} {:>8} {:>8} {:>9}  {:<18} {}\n",
        "cell", "framework", "RPC/s was", "now", "change", "×raw was→now", "×tonic was→now"
    );
    for c in compared {
        let line = format!(
            "{:<24} {:<15} {:>9} {:>8} {:>+8.1}%{}  {:<18} {}",
            c.cell,
            c.framework,
            report::rate_label(c.rps.before),
            report::rate_label(c.rps.after),
            c.rps.percent(),
            if c.rps.flagged { "*" } else { " " },
            ratio_cell(c.x_raw),
            ratio_cell(c.x_tonic),
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let flagged = compared.iter().filter(|c| c.rps.flagged).count();
    let ratios = compared.iter().filter(|c| c.ratio_flagged()).count();
    let all: Vec<Change> = compared
        .iter()
        .flat_map(|c| [c.x_raw, c.x_tonic])
        .flatten()
        .collect();
    let apart = all.iter().filter(|c| !c.overlaps).count();
    let _ = writeln!(
        out,
        "* = change larger than both runs' spreads (min–max): {flagged} of {} RPC/s medians, \
         ratios in {ratios} of {} rows\nratios whose min–max spreads do not overlap: {apart} of {}",
        compared.len(),
        compared.len(),
        all.len()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{add_ratios, tests::row};

    fn run(frpc: &[f64], raw: &[f64]) -> Vec<Row> {
        let mut rows = vec![row("frpc-inline", 16, frpc), row("raw", 16, raw)];
        add_ratios(&mut rows);
        rows
    }

    #[test]
    fn same_noise_is_not_flagged() {
        let before = run(&[90.0, 100.0, 110.0], &[120.0, 125.0, 130.0]);
        let after = run(&[95.0, 105.0, 112.0], &[118.0, 126.0, 131.0]);
        let compared = compare(&before, &after);
        assert_eq!(compared.len(), 2);
        assert_eq!(compared[0].rps.delta, 5.0);
        assert!(!compared.iter().any(Compared::flagged));
    }

    #[test]
    fn a_shift_beyond_both_spreads_is_flagged_for_rps_and_ratio() {
        let before = run(&[99.0, 100.0, 101.0], &[125.0, 125.0, 125.0]);
        let after = run(&[119.0, 120.0, 121.0], &[125.0, 125.0, 125.0]);
        let compared = compare(&before, &after);
        let frpc = &compared[0];
        assert!(frpc.rps.flagged);
        assert_eq!(frpc.rps.percent(), 20.0);
        let raw = frpc.x_raw.unwrap();
        assert_eq!((raw.before, raw.after), (0.8, 0.96));
        assert!(raw.flagged);
        assert!(frpc.x_tonic.is_none());
        // raw itself did not move, and its ratio to itself is not compared.
        assert!(!compared[1].flagged());
        assert!(compared[1].x_raw.is_none());
        let table = table(&compared);
        assert!(table.contains("1 of 2 RPC/s medians, ratios in 1 of 2 rows"));
        assert!(table.contains("do not overlap: 1 of 1"), "{table}");
    }

    #[test]
    fn rows_of_one_run_only_are_counted() {
        let before = run(&[1.0], &[1.0]);
        let mut after = before.clone();
        after[1].clients = 128;
        assert_eq!(compare(&before, &after).len(), 1);
        assert_eq!(unmatched(&before, &after), (1, 1));
    }

    #[test]
    fn payloads_are_different_cells() {
        let before = run(&[1.0], &[1.0]);
        let mut after = before.clone();
        after[0].payload = "bytes".into();
        let compared = compare(&before, &after);
        assert_eq!(compared.len(), 1, "only raw (string) is in both runs");
        assert_eq!(unmatched(&before, &after), (1, 1));
        assert_eq!(cell_label(&after[0]), "A 16cl×1 tasks 32B bytes");
    }
}
