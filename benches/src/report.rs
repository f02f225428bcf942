//! Results: one [`Row`] per framework and cell with the median and spread of its samples, its
//! ratios to tonic and raw, and the table, JSON and CSV made of them (the chart is in
//! [`crate::chart`], the comparison with a baseline in [`crate::compare`]).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::stats::{self, Summary};
use crate::workload::{Cell, Outcome, Payload};

/// One framework in one cell, over all of its samples.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// `frpc-inline`, `frpc-per-rpc`, `tonic`, `raw`, or a probe (`raw→frpc-inline`).
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
    /// The field the message travels in: `string` or `bytes` (see
    /// [`Payload`]). Reports written before the field existed were
    /// all `string`, which is what reading them gives.
    #[serde(default = "string_payload")]
    pub payload: String,
    /// Calls per second of all clients together: the median of the samples.
    pub rps_total: f64,
    /// `rps_total` per client.
    pub rps_per_client: f64,
    /// Median and spread of the samples' RPC/s.
    pub rps: Summary,
    /// Each sample's RPC/s, in the order they ran.
    pub rps_samples: Vec<f64>,
    /// Median latency over all samples' calls.
    pub p50_us: u64,
    /// 99th-percentile latency over all samples' calls.
    pub p99_us: u64,
    /// RPC/s relative to tonic, sample by sample (`None` without a tonic row).
    pub x_tonic: Option<Summary>,
    /// RPC/s relative to raw, sample by sample (`None` without a raw row).
    pub x_raw: Option<Summary>,
    /// The server process's CPU time per call in µs (user + system, over the measured window):
    /// the median of the samples. `None` where the server is not this program's child, or in
    /// reports that predate the field.
    #[serde(default)]
    pub server_cpu_us: Option<f64>,
    /// The load generator's (the clients') CPU time per call in µs, likewise.
    #[serde(default)]
    pub client_cpu_us: Option<f64>,
    /// `server_cpu_us` relative to raw's in the same cell (`None` without a raw row).
    #[serde(default)]
    pub server_cpu_x_raw: Option<f64>,
    /// `client_cpu_us` relative to raw's in the same cell.
    #[serde(default)]
    pub client_cpu_x_raw: Option<f64>,
    /// The server process's CPU time over the measured window divided by the window (1.0: one
    /// core busy all along), the median of the samples. With the clients' figure it tells
    /// whether the machine was saturated (see [`SATURATED`]).
    #[serde(default)]
    pub server_cores: Option<f64>,
    /// The load generator's (the clients') cores busy, likewise.
    #[serde(default)]
    pub client_cores: Option<f64>,
    /// The calls per second offered to the cell when its clients were paced (`--rate`; `None`:
    /// closed loops, and in reports that predate the field).
    #[serde(default)]
    pub rate: Option<f64>,
}

/// The share of the machine's cores the server and the clients kept busy together at which a
/// row counts as saturated. Each process then spends the share of the cores it gets: its CPU
/// time per call is that share over the RPC/s, and moves with the pair's speed, not only with
/// its own cost (a server under a slower client finds fewer requests per wake-up than under a
/// faster one). The table marks such CPU figures with `^`.
pub const SATURATED: f64 = 0.9;

/// The identity of a cell: workload, clients, in flight, callers, size and payload.
pub type CellKey<'a> = (&'a str, usize, usize, &'a str, usize, &'a str);

/// The payload of rows from reports that predate the field.
fn string_payload() -> String {
    Payload::String.name().to_owned()
}

impl Row {
    /// The row of `framework` in `cell` of `workload`, from its samples (ratios still empty:
    /// [`add_ratios`] fills them once every framework of the cell has run).
    pub fn new(framework: &str, workload: &str, cell: &Cell, samples: &[Outcome]) -> Row {
        let secs = cell.duration.as_secs_f64();
        let rps_samples: Vec<f64> = samples.iter().map(|o| o.calls as f64 / secs).collect();
        let rps = Summary::of(&rps_samples).unwrap_or(Summary {
            median: 0.0,
            min: 0.0,
            q1: 0.0,
            q3: 0.0,
            max: 0.0,
        });
        let merged = Outcome::merge(samples.iter().cloned());
        // The median over the samples of a figure some samples may not have.
        let median = |figure: &dyn Fn(&Outcome) -> Option<f64>| {
            let values: Vec<f64> = samples.iter().filter_map(figure).collect();
            Summary::of(&values).map(|s| s.median)
        };
        let per_call = |cpu: fn(&Outcome) -> Option<std::time::Duration>| {
            median(&|o| Some(cpu(o)?.as_secs_f64() * 1e6 / o.calls as f64).filter(|_| o.calls > 0))
        };
        let cores = |cpu: fn(&Outcome) -> Option<std::time::Duration>| {
            median(&|o| Some(cpu(o)?.as_secs_f64() / secs))
        };
        Row {
            framework: framework.to_owned(),
            workload: workload.to_owned(),
            clients: cell.clients,
            inflight: cell.inflight,
            callers: cell.callers.name().to_owned(),
            size: cell.size,
            payload: cell.payload.name().to_owned(),
            rps_total: rps.median,
            rps_per_client: rps.median / cell.clients as f64,
            rps,
            rps_samples,
            p50_us: merged.latency.value_at_quantile(0.5),
            p99_us: merged.latency.value_at_quantile(0.99),
            x_tonic: None,
            x_raw: None,
            server_cpu_us: per_call(|o| o.cpu.server),
            client_cpu_us: per_call(|o| o.cpu.client),
            server_cpu_x_raw: None,
            client_cpu_x_raw: None,
            server_cores: cores(|o| o.cpu.server),
            client_cores: cores(|o| o.cpu.client),
            rate: cell.pace().and(cell.rate),
        }
    }

    /// Whether the server and the clients together kept at least [`SATURATED`] of the
    /// machine's `cores` busy (`false` when either figure is unknown).
    pub fn saturated(&self, cores: usize) -> bool {
        match (self.server_cores, self.client_cores) {
            (Some(server), Some(client)) => server + client >= SATURATED * cores as f64,
            _ => false,
        }
    }

    /// The cell this row measured.
    pub fn cell(&self) -> CellKey<'_> {
        (
            &self.workload,
            self.clients,
            self.inflight,
            &self.callers,
            self.size,
            &self.payload,
        )
    }

    /// The ratio to `against` (`tonic` or `raw`).
    pub fn ratio(&self, against: &str) -> Option<&Summary> {
        match against {
            "tonic" => self.x_tonic.as_ref(),
            "raw" => self.x_raw.as_ref(),
            _ => None,
        }
    }

    /// Whether this row is one of the frpc servers with its own client.
    fn is_frpc(&self) -> bool {
        matches!(
            self.framework.as_str(),
            "frpc-inline" | "frpc-per-rpc" | "frpc-protobuf" | "frpc-plain" | "frpc-channel"
        )
    }
}

/// The results of one run, as `--json` writes them and `--baseline` reads them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Cores of the machine.
    pub cores: usize,
    /// Samples per framework and cell.
    pub reps: usize,
    /// Measured seconds per sample.
    pub secs: f64,
    /// The 1-minute load average at the start and the end of the run (Linux), to tell how much
    /// else the machine was running.
    #[serde(default)]
    pub load_average: Option<(f64, f64)>,
    /// One row per framework and cell.
    pub rows: Vec<Row>,
}

/// The 1-minute load average, from `/proc/loadavg` (`None` elsewhere).
pub fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Fills each row's ratios to tonic and raw: its samples divided by theirs, sample by sample;
/// and its CPU per call relative to raw's (the medians' ratio).
pub fn add_ratios(rows: &mut [Row]) {
    add_rps_ratios(rows);
    let cpu_ratios: Vec<(Option<f64>, Option<f64>)> = rows
        .iter()
        .map(|row| {
            let Some(raw) = rows
                .iter()
                .find(|o| o.cell() == row.cell() && o.framework == "raw")
            else {
                return (None, None);
            };
            let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?).filter(|r| r.is_finite());
            (
                ratio(row.server_cpu_us, raw.server_cpu_us),
                ratio(row.client_cpu_us, raw.client_cpu_us),
            )
        })
        .collect();
    for (row, (server, client)) in rows.iter_mut().zip(cpu_ratios) {
        (row.server_cpu_x_raw, row.client_cpu_x_raw) = (server, client);
    }
}

/// The RPC/s ratios of [`add_ratios`].
fn add_rps_ratios(rows: &mut [Row]) {
    let ratios: Vec<(Option<Summary>, Option<Summary>)> = rows
        .iter()
        .map(|row| {
            let against = |name: &str| {
                let other = rows
                    .iter()
                    .find(|o| o.cell() == row.cell() && o.framework == name)?;
                Summary::of(&stats::paired_ratios(&row.rps_samples, &other.rps_samples))
            };
            (against("tonic"), against("raw"))
        })
        .collect();
    for (row, (tonic, raw)) in rows.iter_mut().zip(ratios) {
        (row.x_tonic, row.x_raw) = (tonic, raw);
    }
}

/// The target an frpc row's ratio to `against` should reach, from the benchmark issue:
/// workload A with 16 or 128 clients at 32 B or 512 B ≥ 2.5× tonic and ≥ 0.8× raw; A at 1 MiB
/// ≥ 1.5× tonic; B with 128 clients × 10 in flight ≥ 4× tonic and ≥ 0.85× raw.
/// frpc's gRPC face (`frpc-grpc`) has its own: within 5% of tonic (≥ 0.95×) in every cell.
pub fn target(row: &Row, against: &str) -> Option<f64> {
    if row.framework == "frpc-grpc" {
        return (against == "tonic").then_some(0.95);
    }
    if !row.is_frpc() {
        return None;
    }
    let small_a = row.workload == "A" && matches!(row.clients, 16 | 128) && matches!(row.size, 32 | 512);
    let big_a = row.workload == "A" && row.size == 1 << 20;
    let big_b = row.workload == "B" && row.clients == 128 && row.inflight == 10;
    match against {
        "tonic" if small_a => Some(2.5),
        "tonic" if big_a => Some(1.5),
        "tonic" if big_b => Some(4.0),
        "raw" if small_a => Some(0.8),
        "raw" if big_b => Some(0.85),
        _ => None,
    }
}

/// The table's mark for a ratio: `~` when its spread has 1.0 inside (faster or slower is not
/// settled), `?` when it has the target inside, `!` when all of it is below the target.
pub fn mark(ratio: &Summary, target: Option<f64>) -> &'static str {
    match target {
        Some(t) if ratio.straddles(t) => "?",
        Some(t) if ratio.max < t => "!",
        _ if ratio.straddles(1.0) => "~",
        _ => "",
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

/// A size with its payload, where it is not the default string: `1MiB`, `1MiB bytes`.
pub fn size_payload_label(size: usize, payload: &str) -> String {
    if payload == Payload::String.name() {
        size_label(size)
    } else {
        format!("{} {payload}", size_label(size))
    }
}

/// `paced at 80k calls/s per cell` for a paced run's summary (`None` for closed loops).
pub fn paced_label(rate: Option<f64>) -> Option<String> {
    rate.map(|rate| format!("paced at {} calls/s per cell", rate_label(rate)))
}

/// A rate in few characters: `950`, `15.2k`, `159k`, `1.2M`.
pub fn rate_label(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e5 => format!("{:.0}k", v / 1e3),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

/// A ratio with its spread and mark: `3.05 2.90–3.21?`, or `-` when there is none.
fn ratio_cell(row: &Row, against: &str) -> String {
    row.ratio(against).map_or("-".to_owned(), |r| {
        format!(
            "{:.2} {:.2}–{:.2}{}",
            r.median,
            r.min,
            r.max,
            mark(r, target(row, against))
        )
    })
}

/// A CPU-per-call cell: `8.1 1.05` (µs per call, then ×raw), or `-` when unknown.
fn cpu_cell(us: Option<f64>, x_raw: Option<f64>, saturated: bool) -> String {
    let mark = if saturated { "^" } else { "" };
    match (us, x_raw) {
        (Some(us), Some(x)) => format!("{us:.1} {x:.2}{mark}"),
        (Some(us), None) => format!("{us:.1}{mark}"),
        (None, _) => "-".to_owned(),
    }
}

/// The legend printed under the table.
pub const LEGEND: &str = "\
RPC/s: median of the samples, then min–max; ×tonic, ×raw: median and min–max of the paired
per-sample ratios. srv/cli CPU ×raw: the server's and the clients' processes' CPU time per call
in µs (user + system over the measured window, median of the samples), then ×raw (for probes
the raw server's or raw client's figure is the one to compare); ^ the two processes kept 90% of
the cores busy: each one's CPU per call is then its share of the cores over the RPC/s, and
moves with the pair's speed. Marks: ~ spread includes 1.0; ? spread includes the target;
! spread all below the target (targets for frpc: A 16/128 cl 32 B/512 B ≥2.5× tonic and ≥0.8×
raw, A 1 MiB ≥1.5× tonic, B 128 cl ≥4× tonic and ≥0.85× raw; for frpc-grpc, frpc's gRPC face
called by the tonic client: ≥0.95× tonic everywhere).";

/// The table: one line per framework and cell, measured on a machine of `cores` cores.
pub fn table(rows: &[Row], cores: usize) -> String {
    let mut out = format!(
        "{:<2} {:>4} {:>3} {:<6} {:>6} {:<6} {:<15} {:>8} {:>13} {:>8} {:>6} {:>6}  {:<17} {:<17} {:<10} {}\n",
        "wl",
        "cl",
        "inf",
        "callrs",
        "size",
        "payld",
        "framework",
        "RPC/s",
        "min–max",
        "RPC/s/cl",
        "p50µs",
        "p99µs",
        "×tonic min–max",
        "×raw min–max",
        "srv CPU ×raw",
        "cli CPU ×raw"
    );
    for row in rows {
        let saturated = row.saturated(cores);
        let line = format!(
            "{:<2} {:>4} {:>3} {:<6} {:>6} {:<6} {:<15} {:>8.0} {:>13} {:>8.0} {:>6} {:>6}  {:<17} {:<17} {:<10} {}",
            row.workload,
            row.clients,
            row.inflight,
            row.callers,
            size_label(row.size),
            row.payload,
            row.framework,
            row.rps.median,
            format!("{}–{}", rate_label(row.rps.min), rate_label(row.rps.max)),
            row.rps_per_client,
            row.p50_us,
            row.p99_us,
            ratio_cell(row, "tonic"),
            ratio_cell(row, "raw"),
            cpu_cell(row.server_cpu_us, row.server_cpu_x_raw, saturated),
            cpu_cell(row.client_cpu_us, row.client_cpu_x_raw, saturated),
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// The report as pretty JSON.
pub fn json(report: &Report) -> String {
    serde_json::to_string_pretty(report).expect("report serializes") + "\n"
}

/// Reads a report `--json` wrote.
pub fn read_json(text: &str) -> Result<Report, String> {
    serde_json::from_str(text).map_err(|e| format!("not a frpc-bench report: {e}"))
}

/// CSV, one line per row: the cell, then RPC/s and both ratios as median, min, max.
pub fn csv(rows: &[Row]) -> String {
    let mut out = "framework,workload,clients,inflight,callers,size,payload,rps_median,rps_min,rps_max,\
                   rps_per_client,p50_us,p99_us,x_tonic_median,x_tonic_min,x_tonic_max,\
                   x_raw_median,x_raw_min,x_raw_max,server_cpu_us,client_cpu_us,server_cpu_x_raw,\
                   client_cpu_x_raw,server_cores,client_cores,rate\n"
        .to_owned();
    let triple = |s: Option<&Summary>| {
        s.map_or(",,".to_owned(), |s| {
            format!("{:.4},{:.4},{:.4}", s.median, s.min, s.max)
        })
    };
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.4}"));
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{:.1},{:.1},{:.1},{:.1},{},{},{},{},{},{},{},{},{},{},{}",
            r.framework,
            r.workload,
            r.clients,
            r.inflight,
            r.callers,
            r.size,
            r.payload,
            r.rps.median,
            r.rps.min,
            r.rps.max,
            r.rps_per_client,
            r.p50_us,
            r.p99_us,
            triple(r.x_tonic.as_ref()),
            triple(r.x_raw.as_ref()),
            opt(r.server_cpu_us),
            opt(r.client_cpu_us),
            opt(r.server_cpu_x_raw),
            opt(r.client_cpu_x_raw),
            opt(r.server_cores),
            opt(r.client_cores),
            r.rate.map_or(String::new(), |rate| format!("{rate:.0}")),
        );
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A row of `framework` in cell A × `clients` × 32 B with the given RPC/s samples.
    pub(crate) fn row(framework: &str, clients: usize, samples: &[f64]) -> Row {
        let rps = Summary::of(samples).unwrap();
        Row {
            framework: framework.into(),
            workload: "A".into(),
            clients,
            inflight: 1,
            callers: "tasks".into(),
            size: 32,
            payload: "string".into(),
            rps_total: rps.median,
            rps_per_client: rps.median / clients as f64,
            rps,
            rps_samples: samples.to_vec(),
            p50_us: 100,
            p99_us: 200,
            x_tonic: None,
            x_raw: None,
            server_cpu_us: None,
            client_cpu_us: None,
            server_cpu_x_raw: None,
            client_cpu_x_raw: None,
            server_cores: None,
            client_cores: None,
            rate: None,
        }
    }

    #[test]
    fn cpu_per_call_is_the_samples_median_and_compares_with_raw() {
        use crate::cpu::CpuUse;
        use crate::workload::{Callers, Cell, Payload};
        use std::time::Duration;
        let cell = Cell {
            clients: 16,
            inflight: 1,
            callers: Callers::Tasks,
            size: 32,
            payload: Payload::String,
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            settle: Duration::ZERO,
            rate: None,
        };
        let sample = |calls: u64, server_us: u64, client_us: Option<u64>| {
            let mut outcome = Outcome::new();
            outcome.calls = calls;
            outcome.cpu = CpuUse {
                server: Some(Duration::from_micros(server_us)),
                client: client_us.map(Duration::from_micros),
            };
            outcome
        };
        // 10, 20 and 12 µs of server CPU per call: the median is 12.
        let frpc = [
            sample(100, 1_000, Some(500)),
            sample(100, 2_000, Some(500)),
            sample(50, 600, None),
        ];
        let raw = [sample(100, 1_000, Some(250)), sample(100, 1_000, Some(250))];
        let mut rows = vec![
            Row::new("frpc-inline", "A", &cell, &frpc),
            Row::new("raw", "A", &cell, &raw),
        ];
        add_ratios(&mut rows);
        assert_eq!(rows[0].server_cpu_us, Some(12.0));
        assert_eq!(rows[0].client_cpu_us, Some(5.0));
        assert_eq!(rows[0].server_cpu_x_raw, Some(1.2));
        assert_eq!(rows[0].client_cpu_x_raw, Some(2.0));
        assert_eq!(rows[1].server_cpu_x_raw, Some(1.0));
        // 1 ms of the server's CPU in a second-long sample: a thousandth of a core.
        assert_eq!(rows[0].server_cores, Some(0.001));
        assert_eq!(rows[0].client_cores, Some(0.0005));
        assert!(table(&rows, 2).contains("12.0 1.20 "));
        assert!(
            csv(&rows)
                .lines()
                .nth(1)
                .unwrap()
                .ends_with(",12.0000,5.0000,1.2000,2.0000,0.0010,0.0005,")
        );
        // Paced at 8,000 calls/s, 16 slots: each starts a call every 2 ms; the rows say so.
        let paced = Cell {
            rate: Some(8000.0),
            ..cell
        };
        assert_eq!(paced.pace(), Some(Duration::from_millis(2)));
        let row = Row::new("raw", "A", &paced, &raw);
        assert_eq!(row.rate, Some(8000.0));
        assert!(csv(&[row]).lines().nth(1).unwrap().ends_with(",8000"));
        for closed in [None, Some(0.0), Some(-1.0), Some(f64::NAN)] {
            let cell = Cell { rate: closed, ..cell };
            assert_eq!(
                (cell.pace(), Row::new("raw", "A", &cell, &raw).rate),
                (None, None)
            );
        }
    }

    #[test]
    fn cpu_figures_of_a_saturated_machine_are_marked() {
        let busy = |server: f64, client: f64| Row {
            server_cpu_us: Some(5.0),
            client_cpu_us: Some(6.0),
            server_cores: Some(server),
            client_cores: Some(client),
            ..row("frpc-inline", 16, &[1.0])
        };
        // Two cores: 1.85 busy is saturated (≥ 1.8), 1.7 is not; one unknown figure never is.
        assert!(busy(0.95, 0.9).saturated(2));
        assert!(!busy(0.9, 0.8).saturated(2));
        assert!(busy(0.9, 0.8).saturated(1));
        let unknown = Row {
            client_cores: None,
            ..busy(2.0, 2.0)
        };
        assert!(!unknown.saturated(2));
        let text = table(&[busy(0.95, 0.9), busy(0.5, 0.5)], 2);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert!(lines[0].ends_with("5.0^       6.0^"), "{}", lines[0]);
        assert!(lines[1].ends_with("5.0        6.0"), "{}", lines[1]);
    }

    #[test]
    fn ratios_pair_samples_within_a_cell() {
        let mut rows = vec![
            row("frpc-inline", 16, &[90.0, 80.0, 100.0]),
            row("tonic", 16, &[30.0, 40.0, 25.0]),
            row("raw", 16, &[100.0, 100.0, 125.0]),
            row("raw", 1, &[1.0, 1.0, 1.0]),
        ];
        add_ratios(&mut rows);
        let tonic = rows[0].x_tonic.unwrap();
        assert_eq!((tonic.min, tonic.median, tonic.max), (2.0, 3.0, 4.0));
        let raw = rows[0].x_raw.unwrap();
        assert_eq!((raw.min, raw.median, raw.max), (0.8, 0.8, 0.9));
        assert_eq!(rows[2].x_raw.unwrap().median, 1.0);
        assert!(rows[3].x_tonic.is_none());
    }

    #[test]
    fn marks_for_one_and_targets() {
        let s = |v: &[f64]| Summary::of(v).unwrap();
        assert_eq!(mark(&s(&[0.9, 1.1]), None), "~");
        assert_eq!(mark(&s(&[0.75, 0.85]), Some(0.8)), "?");
        assert_eq!(mark(&s(&[0.6, 0.7]), Some(0.8)), "!");
        assert_eq!(mark(&s(&[0.85, 0.9]), Some(0.8)), "");
        assert_eq!(mark(&s(&[1.2, 1.3]), None), "");
    }

    #[test]
    fn targets_apply_to_frpc_rows_of_the_issue_cells() {
        let frpc = row("frpc-inline", 16, &[1.0]);
        assert_eq!(
            (target(&frpc, "tonic"), target(&frpc, "raw")),
            (Some(2.5), Some(0.8))
        );
        assert_eq!(target(&row("frpc-inline", 1, &[1.0]), "tonic"), None);
        assert_eq!(target(&row("tonic", 16, &[1.0]), "raw"), None);
        assert_eq!(target(&row("frpc-grpc", 1, &[1.0]), "tonic"), Some(0.95));
        assert_eq!(target(&row("frpc-grpc", 128, &[1.0]), "raw"), None);
    }

    #[test]
    fn json_round_trips() {
        let mut rows = vec![row("frpc-inline", 16, &[2.0, 3.0]), row("raw", 16, &[4.0, 4.0])];
        add_ratios(&mut rows);
        let report = Report {
            cores: 2,
            reps: 2,
            secs: 0.5,
            load_average: Some((1.5, 2.0)),
            rows,
        };
        let back = read_json(&json(&report)).unwrap();
        assert_eq!(back.rows[0].x_raw, report.rows[0].x_raw);
        assert_eq!(back.rows[1].rps_samples, vec![4.0, 4.0]);
        assert_eq!(back.load_average, Some((1.5, 2.0)));
        assert_eq!(back.rows[0].payload, "string");
    }

    #[test]
    fn rows_without_a_payload_read_as_string() {
        let mut report = Report {
            cores: 2,
            reps: 1,
            secs: 0.2,
            load_average: None,
            rows: vec![row("raw", 16, &[1.0])],
        };
        let mut value: serde_json::Value = serde_json::from_str(&json(&report)).unwrap();
        value["rows"][0].as_object_mut().unwrap().remove("payload");
        let old = read_json(&value.to_string()).unwrap();
        assert_eq!(old.rows[0].payload, "string");
        // The committed report (the performance chapter's run) loads.
        let committed = read_json(include_str!("../../docs/bench.json")).unwrap();
        assert!(committed.rows.iter().any(|r| r.payload == "string"));
        // A bytes row is its own cell, labelled as such everywhere.
        report.rows[0].payload = "bytes".into();
        report.rows[0].size = 1 << 20;
        assert_ne!(report.rows[0].cell(), row("raw", 16, &[1.0]).cell());
        assert!(table(&report.rows, report.cores).contains("1MiB bytes  raw"));
        assert!(
            csv(&report.rows)
                .lines()
                .nth(1)
                .unwrap()
                .starts_with("raw,A,16,1,tasks,1048576,bytes,")
        );
        assert_eq!(size_payload_label(1 << 20, "bytes"), "1MiB bytes");
        assert_eq!(size_payload_label(128 << 10, "string"), "128KiB");
    }
}
