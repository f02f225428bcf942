//! CPU time of processes, read from procfs: the figure to trust on a shared 2-core machine,
//! where RPC/s swing with what else runs but the CPU a call costs does not.
//!
//! A process's CPU time is the sum of its threads' on-CPU time from
//! `/proc/<pid>/task/*/schedstat` (nanoseconds; user and system time together), or, where the
//! kernel keeps no schedstat, `utime + stime` of `/proc/<pid>/stat` (clock ticks of 10 ms).
//! [`Meter`] takes it at the start and the end of a sample's measured window, for the server
//! process and for this one (the load generator: the clients).

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Linux's `USER_HZ`, the unit of `/proc/<pid>/stat`'s times (fixed by the kernel's ABI).
const TICKS_PER_SECOND: u64 = 100;

/// CPU time spent by the processes of one sample, over its measured window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuUse {
    /// The server process (`None`: not known, e.g. a server outside this program).
    pub server: Option<Duration>,
    /// This process: the load generator's clients.
    pub client: Option<Duration>,
}

impl CpuUse {
    /// Both sums (a part known in either counts).
    pub fn plus(self, other: CpuUse) -> CpuUse {
        let sum = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        CpuUse {
            server: sum(self.server, other.server),
            client: sum(self.client, other.client),
        }
    }
}

/// The CPU time of process `pid` (`"self"` for this one) so far, or `None` off Linux.
pub fn process_cpu(pid: &str) -> Option<Duration> {
    schedstat_total(pid).or_else(|| stat_total(pid))
}

/// The sum of every thread's on-CPU nanoseconds (the first field of each `schedstat`).
fn schedstat_total(pid: &str) -> Option<Duration> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0u64;
    for task in tasks.flatten() {
        // A thread that exited since the listing no longer counts; its time is lost either way.
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// `utime + stime` of `/proc/<pid>/stat` (fields 14 and 15, counted after the command name,
/// which may hold spaces and parentheses).
fn stat_total(pid: &str) -> Option<Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &text[text.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 1000 / TICKS_PER_SECOND))
}

/// Takes both processes' CPU time at a window's start and end, from a task of its own.
#[derive(Debug)]
pub struct Meter(JoinHandle<CpuUse>);

impl Meter {
    /// Starts measuring from `start` to `end` (a sample's measured window) for the server
    /// `server_pid` (if known) and this process.
    pub fn start(start: Instant, end: Instant, server_pid: Option<u32>) -> Meter {
        Meter(tokio::spawn(async move {
            let server = server_pid.map(|pid| pid.to_string());
            let read = || {
                let server = server.as_deref().and_then(process_cpu);
                (server, process_cpu("self"))
            };
            tokio::time::sleep_until(start).await;
            let (server_before, client_before) = read();
            tokio::time::sleep_until(end).await;
            let (server_after, client_after) = read();
            let spent =
                |before: Option<Duration>, after: Option<Duration>| Some(after?.saturating_sub(before?));
            CpuUse {
                server: spent(server_before, server_after),
                client: spent(client_before, client_after),
            }
        }))
    }

    /// What the window cost (nothing known if the meter failed).
    pub async fn finish(self) -> CpuUse {
        self.0.await.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_time_grows_with_work() {
        let before = process_cpu("self").expect("procfs");
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        std::hint::black_box(x);
        let after = process_cpu("self").expect("procfs");
        assert!(after > before, "{before:?} → {after:?}");
        assert!(stat_total("self").is_some());
    }

    #[test]
    fn sums_keep_what_is_known() {
        let ms = Duration::from_millis;
        let a = CpuUse {
            server: Some(ms(2)),
            client: None,
        };
        let b = CpuUse {
            server: Some(ms(3)),
            client: Some(ms(1)),
        };
        assert_eq!(
            a.plus(b),
            CpuUse {
                server: Some(ms(5)),
                client: Some(ms(1))
            }
        );
    }
}
