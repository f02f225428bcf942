//! The SVG chart: every cell's RPC/s as a ratio to raw (the machine's limit) on one log axis
//! shared by all panels (so 0.03× and 1.2× are both readable), one panel per workload, calling
//! mode, message size and payload, one group of bars per client count. Error bars span the samples' min–max; each bar is labelled with its median
//! RPC/s and its ratio to tonic, each group with raw's RPC/s. Without raw rows the axis is the
//! ratio to tonic instead.

use std::fmt::Write as _;

use crate::report::{self, Row};

/// Bar colours, by framework position.
const COLOURS: [&str; 6] = ["#1f77b4", "#17becf", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728"];

/// Geometry, in pixels.
const BAR: f64 = 34.0;
const GAP: f64 = 26.0;
const AXIS: f64 = 40.0;
const PLOT_H: f64 = 230.0;
const PANEL_H: f64 = PLOT_H + 95.0;
const MAX_W: f64 = 1100.0;
/// Wide enough for the longest panel title ("A: 128KiB bytes, 1 in flight") right of the axis.
const MIN_W: f64 = 270.0;
const TOP: f64 = 92.0;

/// A panel: workload, in flight, callers, size, payload.
type Panel<'a> = (&'a str, usize, &'a str, usize, &'a str);

fn panel_of(row: &Row) -> Panel<'_> {
    (&row.workload, row.inflight, &row.callers, row.size, &row.payload)
}

/// What the bars are relative to, the frameworks drawn as bars, and the panels in order.
struct Layout<'a> {
    basis: &'static str,
    bars: Vec<&'a str>,
    panels: Vec<Panel<'a>>,
    /// The axis runs from `y_min` to `y_max` on a log scale.
    y_min: f64,
    y_max: f64,
}

/// The 1-2-5 steps of a log axis: 0.01, 0.02, 0.05, 0.1, ... 50.
fn steps() -> impl Iterator<Item = f64> {
    (-2..=1).flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
}

impl<'a> Layout<'a> {
    fn new(rows: &'a [Row]) -> Layout<'a> {
        let basis = if rows.iter().any(|r| r.framework == "raw") {
            "raw"
        } else {
            "tonic"
        };
        let (mut bars, mut panels) = (Vec::new(), Vec::new());
        for r in rows {
            if r.framework != basis && !bars.contains(&r.framework.as_str()) {
                bars.push(r.framework.as_str());
            }
            if !panels.contains(&panel_of(r)) {
                panels.push(panel_of(r));
            }
        }
        let ratios = || rows.iter().filter_map(|r| r.ratio(basis));
        let top = ratios().map(|s| s.max).fold(1.0, f64::max);
        let bottom = ratios().map(|s| s.min).filter(|&m| m > 0.0).fold(1.0, f64::min);
        Layout {
            basis,
            bars,
            panels,
            y_min: steps().filter(|&s| s <= bottom * 0.8).last().unwrap_or(0.01),
            y_max: steps().find(|&s| s >= top * 1.1).unwrap_or(50.0),
        }
    }

    fn groups(&self, rows: &'a [Row], panel: Panel<'a>) -> Vec<usize> {
        let mut clients: Vec<usize> = rows
            .iter()
            .filter(|r| panel_of(r) == panel)
            .map(|r| r.clients)
            .collect();
        clients.dedup();
        clients
    }

    fn panel_w(&self, groups: usize) -> f64 {
        (AXIS + groups as f64 * (BAR * self.bars.len() as f64 + GAP) + 12.0).max(MIN_W)
    }

    /// The height of `ratio` on the log axis of a plot whose top is at `top`.
    fn y(&self, top: f64, ratio: f64) -> f64 {
        let span = (self.y_max / self.y_min).log10();
        let up = (ratio.clamp(self.y_min, self.y_max) / self.y_min).log10() / span;
        top + PLOT_H - PLOT_H * up
    }
}

/// The chart of `rows` with `title`.
pub fn svg(rows: &[Row], title: &str) -> String {
    let layout = Layout::new(rows);
    let mut body = String::new();
    let (mut x, mut y, mut width) = (10.0, TOP, 0.0f64);
    for &panel in &layout.panels {
        let groups = layout.groups(rows, panel);
        let w = layout.panel_w(groups.len());
        if x + w > MAX_W && x > 10.0 {
            (x, y) = (10.0, y + PANEL_H);
        }
        draw_panel(&mut body, &layout, rows, panel, &groups, (x, y));
        x += w;
        width = width.max(x);
    }
    let height = y + PANEL_H;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{height:.0}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n\
         <style>.l{{paint-order:stroke;stroke:white;stroke-width:3px;stroke-linejoin:round}}</style>\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"12\" y=\"22\" font-size=\"15\">{}</text>\n",
        width + 10.0,
        escape(title)
    );
    legend(&mut out, &layout);
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}

fn legend(out: &mut String, layout: &Layout<'_>) {
    let mut x = 12.0;
    for (i, f) in layout.bars.iter().enumerate() {
        let _ = writeln!(
            out,
            "<rect x=\"{x}\" y=\"34\" width=\"11\" height=\"11\" fill=\"{}\"/>\
             <text x=\"{}\" y=\"44\">{}</text>",
            COLOURS[i % COLOURS.len()],
            x + 15.0,
            escape(f)
        );
        x += 30.0 + 7.0 * f.chars().count() as f64;
    }
    let _ = writeln!(
        out,
        "<text x=\"12\" y=\"62\" fill=\"#444\">Bars: RPC/s as a multiple of {basis}'s in the same \
         cell (log scale; dashed line: {basis} = 1); whiskers: min–max over the samples.</text>\n\
         <text x=\"12\" y=\"76\" fill=\"#444\">Above each bar: median RPC/s{tonic}; under each \
         group: {basis}'s median RPC/s. Red ticks: frpc's targets.</text>",
        basis = layout.basis,
        tonic = if layout.basis == "raw" {
            " and multiple of tonic's (×t)"
        } else {
            ""
        },
    );
}

fn draw_panel(
    out: &mut String,
    layout: &Layout<'_>,
    rows: &[Row],
    panel: Panel<'_>,
    groups: &[usize],
    at: (f64, f64),
) {
    let (x0, y0) = at;
    let (left, top) = (x0 + AXIS, y0 + 26.0);
    let right = x0 + layout.panel_w(groups.len()) - 12.0;
    let (workload, inflight, callers, size, payload) = panel;
    let issued = if inflight > 1 {
        format!(", {callers}")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "<text x=\"{left}\" y=\"{}\" font-size=\"13\" font-weight=\"bold\">{workload}: {}, \
         {inflight} in flight{issued}</text>",
        y0 + 14.0,
        escape(&report::size_payload_label(size, payload)),
    );
    axis(out, layout, (x0, left, right, top));
    for (gi, &clients) in groups.iter().enumerate() {
        let gx = left + GAP / 2.0 + gi as f64 * (BAR * layout.bars.len() as f64 + GAP);
        let in_group: Vec<&Row> = rows
            .iter()
            .filter(|r| panel_of(r) == panel && r.clients == clients)
            .collect();
        for (bi, name) in layout.bars.iter().enumerate() {
            if let Some(row) = in_group.iter().find(|r| r.framework == *name) {
                bar(out, layout, row, bi, (gx + bi as f64 * BAR, top));
            }
        }
        let basis = in_group.iter().find(|r| r.framework == layout.basis);
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{clients} client{}</text>\
             <text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">{} {}</text>",
            gx + BAR * layout.bars.len() as f64 / 2.0,
            top + PLOT_H + 15.0,
            if clients == 1 { "" } else { "s" },
            gx + BAR * layout.bars.len() as f64 / 2.0,
            top + PLOT_H + 29.0,
            layout.basis,
            basis.map_or("-".to_owned(), |r| report::rate_label(r.rps.median)),
        );
    }
}

/// Grid lines and labels of the shared ratio axis, and the dashed line at 1.
fn axis(out: &mut String, layout: &Layout<'_>, (x0, left, right, top): (f64, f64, f64, f64)) {
    for ratio in steps().filter(|&s| s >= layout.y_min && s <= layout.y_max) {
        let y = layout.y(top, ratio);
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" x2=\"{right}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{ratio}×</text>",
            left - 4.0,
            y + 4.0,
        );
    }
    let one = layout.y(top, 1.0);
    let _ = writeln!(
        out,
        "<line x1=\"{left}\" x2=\"{right}\" y1=\"{one:.1}\" y2=\"{one:.1}\" stroke=\"#333\" \
         stroke-dasharray=\"5,3\"/>\
         <line x1=\"{left}\" x2=\"{left}\" y1=\"{top}\" y2=\"{}\" stroke=\"#999\"/>\
         <line x1=\"{x0}\" x2=\"{x0}\" y1=\"{top}\" y2=\"{top}\"/>",
        top + PLOT_H
    );
}

/// One bar: the median ratio, a whisker for the spread, the target tick and the labels.
fn bar(out: &mut String, layout: &Layout<'_>, row: &Row, index: usize, (x, top): (f64, f64)) {
    let Some(ratio) = row.ratio(layout.basis) else {
        return;
    };
    let (y, base) = (layout.y(top, ratio.median), top + PLOT_H);
    let mid = x + BAR / 2.0 - 1.0;
    let (hi, lo) = (layout.y(top, ratio.max), layout.y(top, ratio.min));
    let _ = writeln!(
        out,
        "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{}\" height=\"{:.1}\" fill=\"{}\">\
         <title>{}: {:.0} RPC/s ({:.0}–{:.0}), {:.2}× {} ({:.2}–{:.2}), p50 {} µs, p99 {} µs</title></rect>\n\
         <path d=\"M{mid:.1} {hi:.1}V{lo:.1}M{:.1} {hi:.1}h8M{:.1} {lo:.1}h8\" stroke=\"#222\" stroke-width=\"1.2\"/>",
        x + 1.0,
        BAR - 4.0,
        base - y,
        COLOURS[index % COLOURS.len()],
        escape(&row.framework),
        row.rps.median,
        row.rps.min,
        row.rps.max,
        ratio.median,
        layout.basis,
        ratio.min,
        ratio.max,
        row.p50_us,
        row.p99_us,
        mid - 4.0,
        mid - 4.0,
    );
    if let Some(t) = report::target(row, layout.basis) {
        let ty = layout.y(top, t);
        let _ = writeln!(
            out,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{ty:.1}\" y2=\"{ty:.1}\" stroke=\"#d62728\" stroke-width=\"2\"/>",
            x,
            x + BAR - 2.0
        );
    }
    let tonic = match (layout.basis, row.x_tonic) {
        ("raw", Some(t)) if row.framework != "tonic" => format!("{:.1}×t", t.median),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "<text class=\"l\" x=\"{mid:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"10\">{}</text>\
         <text class=\"l\" x=\"{mid:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"9\" fill=\"#555\">{tonic}</text>",
        hi.min(y) - 4.0,
        report::rate_label(row.rps.median),
        hi.min(y) - 15.0,
    );
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{add_ratios, tests::row};

    #[test]
    fn bars_are_ratios_to_raw_with_whiskers_and_labels() {
        let mut rows = vec![
            row("frpc-inline", 16, &[90.0, 80.0, 100.0]),
            row("tonic", 16, &[30.0, 40.0, 25.0]),
            row("raw", 16, &[100.0, 100.0, 125.0]),
        ];
        add_ratios(&mut rows);
        let svg = svg(&rows, "t");
        // frpc and tonic are bars, raw is the dashed line and the group's label.
        assert_eq!(svg.matches("<rect x=").count(), 2 + 2);
        assert!(svg.contains("0.80× raw (0.80–0.90)"));
        assert!(svg.contains(">3.0×t<"));
        assert!(svg.contains(">raw 100<"));
        assert!(svg.contains("stroke-dasharray"));
        assert!(svg.contains("#d62728"), "target tick of a 16-client A cell");
        assert!(svg.contains(">A: 32B, 1 in flight<"));
    }

    #[test]
    fn payloads_get_their_own_panels() {
        let mut rows = Vec::new();
        for payload in ["string", "bytes"] {
            for (framework, rps) in [("frpc-inline", 80.0), ("raw", 100.0)] {
                let mut r = row(framework, 16, &[rps]);
                (r.size, r.payload) = (1 << 20, payload.into());
                rows.push(r);
            }
        }
        add_ratios(&mut rows);
        let svg = svg(&rows, "t");
        assert!(svg.contains(">A: 1MiB, 1 in flight<"), "{svg}");
        assert!(svg.contains(">A: 1MiB bytes, 1 in flight<"));
        // One legend entry, one frpc bar per panel.
        assert_eq!(svg.matches("<rect x=").count(), 1 + 2);
    }
}
