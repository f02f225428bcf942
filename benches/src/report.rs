//! Results: the table with ratios against tonic and raw, and JSON, CSV and SVG output.

use std::fmt::Write as _;

use serde::Serialize;

/// One framework in one cell.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// `frpc-inline`, `frpc-per-rpc`, `tonic` or `raw`.
    pub framework: String,
    /// `A` (one call in flight per client) or `B` (ten).
    pub workload: String,
    /// Clients, each with its own connection.
    pub clients: usize,
    /// Calls each client keeps outstanding.
    pub inflight: usize,
    /// Message size in bytes.
    pub size: usize,
    /// Calls per second, all clients together.
    pub rps_total: f64,
    /// Calls per second per client.
    pub rps_per_client: f64,
    /// Median latency.
    pub p50_us: u64,
    /// 99th-percentile latency.
    pub p99_us: u64,
}

impl Row {
    fn cell(&self) -> (String, usize, usize) {
        (self.workload.clone(), self.clients, self.size)
    }
}

/// Human-readable size: `32B`, `128KiB`, `1MiB`.
pub fn size_label(size: usize) -> String {
    match size {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{}MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{}KiB", s >> 10),
        s => format!("{s}B"),
    }
}

fn rps_of<'a>(rows: &'a [Row], like: &Row, framework: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.cell() == like.cell() && r.framework == framework)
}

/// The table: one line per framework and cell, with ratios to tonic and raw.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<3} {:>7} {:>7} {:>8} {:<13} {:>11} {:>10} {:>8} {:>8} {:>8} {:>7}",
        "wl",
        "clients",
        "inflight",
        "size",
        "framework",
        "RPC/s",
        "RPC/s/cl",
        "p50 µs",
        "p99 µs",
        "×tonic",
        "×raw"
    );
    for row in rows {
        let ratio = |other: &str| {
            rps_of(rows, row, other)
                .filter(|o| o.rps_total > 0.0)
                .map_or("-".to_owned(), |o| format!("{:.2}", row.rps_total / o.rps_total))
        };
        let _ = writeln!(
            out,
            "{:<3} {:>7} {:>7} {:>8} {:<13} {:>11.0} {:>10.0} {:>8} {:>8} {:>8} {:>7}",
            row.workload,
            row.clients,
            row.inflight,
            size_label(row.size),
            row.framework,
            row.rps_total,
            row.rps_per_client,
            row.p50_us,
            row.p99_us,
            ratio("tonic"),
            ratio("raw"),
        );
    }
    out
}

/// CSV with the JSON's columns.
pub fn csv(rows: &[Row]) -> String {
    let mut out =
        "framework,workload,clients,inflight,size,rps_total,rps_per_client,p50_us,p99_us\n".to_owned();
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{:.1},{:.1},{},{}",
            r.framework,
            r.workload,
            r.clients,
            r.inflight,
            r.size,
            r.rps_total,
            r.rps_per_client,
            r.p50_us,
            r.p99_us
        );
    }
    out
}

/// A grouped bar chart of RPC/s per cell, one colour per framework (like fRPC's figures).
pub fn svg(rows: &[Row], title: &str) -> String {
    let mut cells: Vec<(String, usize, usize)> = Vec::new();
    let mut frameworks: Vec<String> = Vec::new();
    for r in rows {
        if !cells.contains(&r.cell()) {
            cells.push(r.cell());
        }
        if !frameworks.contains(&r.framework) {
            frameworks.push(r.framework.clone());
        }
    }
    let colours = ["#1f77b4", "#17becf", "#ff7f0e", "#7f7f7f", "#2ca02c"];
    let (bar, gap, left, top, height) = (14.0, 18.0, 70.0, 50.0, 260.0);
    let group = bar * frameworks.len() as f64 + gap;
    let width = left + group * cells.len() as f64 + 20.0;
    let max = rows.iter().map(|r| r.rps_total).fold(1.0, f64::max);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{:.0}\" font-family=\"sans-serif\" font-size=\"11\">\n",
        top + height + 90.0
    );
    let _ = writeln!(out, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    let _ = writeln!(out, "<text x=\"{left}\" y=\"20\" font-size=\"14\">{title}</text>");
    for (i, f) in frameworks.iter().enumerate() {
        let x = left + i as f64 * 110.0;
        let c = colours[i % colours.len()];
        let _ = writeln!(
            out,
            "<rect x=\"{x}\" y=\"28\" width=\"10\" height=\"10\" fill=\"{c}\"/>"
        );
        let _ = writeln!(out, "<text x=\"{}\" y=\"37\">{f}</text>", x + 14.0);
    }
    for step in 0..=4 {
        let v = max * step as f64 / 4.0;
        let y = top + height - height * step as f64 / 4.0;
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" x2=\"{width}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#ddd\"/>"
        );
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.0}k</text>",
            left - 4.0,
            y + 4.0,
            v / 1000.0
        );
    }
    for (ci, cell) in cells.iter().enumerate() {
        let x0 = left + ci as f64 * group + gap / 2.0;
        for (fi, f) in frameworks.iter().enumerate() {
            let Some(r) = rows.iter().find(|r| r.cell() == *cell && &r.framework == f) else {
                continue;
            };
            let h = height * r.rps_total / max;
            let c = colours[fi % colours.len()];
            let x = x0 + fi as f64 * bar;
            let _ = writeln!(
                out,
                "<rect x=\"{x}\" y=\"{}\" width=\"{}\" height=\"{h}\" fill=\"{c}\"><title>{f}: {:.0} RPC/s</title></rect>",
                top + height - h,
                bar - 2.0,
                r.rps_total
            );
        }
        let label = format!("{} {}c {}", cell.0, cell.1, size_label(cell.2));
        let (lx, ly) = (x0 + group / 2.0 - gap / 2.0, top + height + 12.0);
        let _ = writeln!(
            out,
            "<text x=\"{lx}\" y=\"{ly}\" transform=\"rotate(40 {lx} {ly})\">{label}</text>"
        );
    }
    out.push_str("</svg>\n");
    out
}
