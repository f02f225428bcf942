//! Results: the table with ratios against tonic and raw, and JSON, CSV and SVG output.

use std::fmt::Write as _;

use serde::Serialize;

use crate::workload::{Cell, Outcome};

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
    /// How a client issues them: `tasks` (one task per call) or `joined` (one task per client).
    pub callers: String,
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
    /// The row of `framework` in `cell` of `workload`.
    pub fn new(framework: &str, workload: &str, cell: &Cell, outcome: &Outcome) -> Row {
        let rps_total = outcome.calls as f64 / cell.duration.as_secs_f64();
        Row {
            framework: framework.to_owned(),
            workload: workload.to_owned(),
            clients: cell.clients,
            inflight: cell.inflight,
            callers: cell.callers.name().to_owned(),
            size: cell.size,
            rps_total,
            rps_per_client: rps_total / cell.clients as f64,
            p50_us: outcome.latency.value_at_quantile(0.5),
            p99_us: outcome.latency.value_at_quantile(0.99),
        }
    }

    fn cell(&self) -> (&str, usize, usize, &str, usize) {
        (
            &self.workload,
            self.clients,
            self.inflight,
            &self.callers,
            self.size,
        )
    }

    /// The chart panel the row belongs to: one per workload, callers and size.
    fn panel(&self) -> (&str, usize, &str, usize) {
        (&self.workload, self.inflight, &self.callers, self.size)
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
        "{:<3} {:>7} {:>8} {:<7} {:>7} {:<16} {:>11} {:>10} {:>8} {:>8} {:>7} {:>6}",
        "wl",
        "clients",
        "inflight",
        "callers",
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
            "{:<3} {:>7} {:>8} {:<7} {:>7} {:<16} {:>11.0} {:>10.0} {:>8} {:>8} {:>7} {:>6}",
            row.workload,
            row.clients,
            row.inflight,
            row.callers,
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

/// The rows as a JSON array.
pub fn json(rows: &[Row]) -> String {
    serde_json::to_string_pretty(rows).expect("rows serialize") + "\n"
}

/// CSV with the JSON's columns.
pub fn csv(rows: &[Row]) -> String {
    let mut out = "framework,workload,clients,inflight,callers,size,rps_total,rps_per_client,p50_us,p99_us\n"
        .to_owned();
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{:.1},{:.1},{},{}",
            r.framework,
            r.workload,
            r.clients,
            r.inflight,
            r.callers,
            r.size,
            r.rps_total,
            r.rps_per_client,
            r.p50_us,
            r.p99_us
        );
    }
    out
}

/// Bar colours, by framework position.
const COLOURS: [&str; 6] = ["#1f77b4", "#17becf", "#ff7f0e", "#7f7f7f", "#2ca02c", "#d62728"];

/// Grouped bars of RPC/s, like fRPC's published figures: one panel per workload and message size
/// (each with its own scale), one group of bars per client count, one bar per framework.
pub fn svg(rows: &[Row], title: &str) -> String {
    let mut frameworks: Vec<&str> = Vec::new();
    let mut panels: Vec<(&str, usize, &str, usize)> = Vec::new();
    for r in rows {
        if !frameworks.contains(&r.framework.as_str()) {
            frameworks.push(&r.framework);
        }
        if !panels.contains(&r.panel()) {
            panels.push(r.panel());
        }
    }
    let (bar, gap, axis, plot_h) = (16.0, 20.0, 56.0, 200.0);
    let group_w = bar * frameworks.len() as f64 + gap;
    let most_groups = panels
        .iter()
        .map(|p| {
            rows.iter()
                .filter(|r| r.panel() == *p && r.framework == frameworks[0])
                .count()
        })
        .max()
        .unwrap_or(1)
        .max(1);
    let panel_w = axis + group_w * most_groups as f64 + 20.0;
    let panel_h = plot_h + 80.0;
    let columns = panels.len().clamp(1, 3);
    let width = panel_w * columns as f64 + 20.0;
    let height = 70.0 + panel_h * panels.len().div_ceil(columns) as f64;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"20\" y=\"22\" font-size=\"15\">{}</text>\n",
        escape(title)
    );
    for (i, f) in frameworks.iter().enumerate() {
        let x = 20.0 + i as f64 * 120.0;
        let _ = writeln!(
            out,
            "<rect x=\"{x}\" y=\"34\" width=\"11\" height=\"11\" fill=\"{}\"/>\
             <text x=\"{}\" y=\"44\">{}</text>",
            COLOURS[i % COLOURS.len()],
            x + 15.0,
            escape(f)
        );
    }
    for (pi, panel) in panels.iter().enumerate() {
        let x0 = 10.0 + (pi % columns) as f64 * panel_w;
        let y0 = 60.0 + (pi / columns) as f64 * panel_h;
        let (left, top) = (x0 + axis, y0 + 30.0);
        let in_panel: Vec<&Row> = rows.iter().filter(|r| r.panel() == *panel).collect();
        let max = nice_max(in_panel.iter().map(|r| r.rps_total).fold(0.0, f64::max));
        let (workload, inflight, callers, size) = *panel;
        let issued = if inflight > 1 {
            format!(" ({callers})")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<text x=\"{left}\" y=\"{}\" font-size=\"13\">Workload {workload}: {}, \
             {inflight} in flight per client{issued}</text>",
            y0 + 18.0,
            size_label(size),
        );
        for step in 0..=4 {
            let y = top + plot_h - plot_h * step as f64 / 4.0;
            let _ = writeln!(
                out,
                "<line x1=\"{left}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#ddd\"/>\
                 <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                x0 + panel_w - 20.0,
                left - 4.0,
                y + 4.0,
                rate_label(max * step as f64 / 4.0)
            );
        }
        let mut clients: Vec<usize> = in_panel.iter().map(|r| r.clients).collect();
        clients.dedup();
        for (gi, &n) in clients.iter().enumerate() {
            let gx = left + gap / 2.0 + gi as f64 * group_w;
            for (fi, f) in frameworks.iter().enumerate() {
                let Some(r) = in_panel.iter().find(|r| r.clients == n && r.framework == *f) else {
                    continue;
                };
                let h = if max > 0.0 {
                    plot_h * r.rps_total / max
                } else {
                    0.0
                };
                let _ = writeln!(
                    out,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{}\" height=\"{h:.1}\" fill=\"{}\">\
                     <title>{}: {:.0} RPC/s, p50 {} µs, p99 {} µs</title></rect>",
                    gx + fi as f64 * bar,
                    top + plot_h - h,
                    bar - 2.0,
                    COLOURS[fi % COLOURS.len()],
                    escape(f),
                    r.rps_total,
                    r.p50_us,
                    r.p99_us
                );
            }
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{n} client{}</text>",
                gx + (group_w - gap) / 2.0,
                top + plot_h + 16.0,
                if n == 1 { "" } else { "s" }
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

/// The smallest 1, 2 or 5 × 10^k at or above `v`.
fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let base = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * base)
        .find(|&m| m >= v)
        .unwrap_or(10.0 * base)
}

fn rate_label(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e3 => format!("{:.0}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
