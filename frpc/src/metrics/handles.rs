//! The metrics' handles, registered once per label set: asking the facade for `counter!(name,
//! labels)` on every call builds a key (labels copied, hashed) and looks it up in the
//! recorder's registry, which costs more than the rest of a small call. A layer keeps the
//! handles of each (method, code) it has seen instead, behind a read lock.
//!
//! Handles come from the recorder installed when a label set is first seen: install the
//! recorder before the first call (as exporters' examples do, first thing in `main`).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{OnceLock, RwLock};

use metrics::{Counter, Histogram, Label};

use crate::status::Code;

/// The names of one side's metrics.
#[derive(Debug)]
pub(super) struct Names {
    pub(super) requests: &'static str,
    pub(super) duration: &'static str,
    pub(super) requests_per_rpc: &'static str,
    pub(super) responses_per_rpc: &'static str,
}

/// The status code's number as text (`rpc.frpc.status_code`), without formatting it per call.
const CODES: [&str; 17] = [
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16",
];

/// A call's labels.
pub(super) fn labels(service: &str, method: &str, code: Code) -> Vec<Label> {
    let code = CODES.get(code as usize).copied().unwrap_or("2");
    vec![
        Label::from_static_parts("rpc.system", "frpc"),
        Label::new("rpc.service", service.to_owned()),
        Label::new("rpc.method", method.to_owned()),
        Label::from_static_parts("rpc.frpc.status_code", code),
    ]
}

/// The handles of one label set.
#[derive(Debug)]
pub(super) struct Handles {
    labels: Vec<Label>,
    requests: Counter,
    duration: Histogram,
    /// Streams only (unary calls have one message each way): registered with the first.
    per_rpc: OnceLock<[Histogram; 2]>,
}

impl Handles {
    fn new(names: &Names, labels: Vec<Label>) -> Handles {
        Handles {
            requests: metrics::counter!(names.requests, labels.iter()),
            duration: metrics::histogram!(names.duration, labels.iter()),
            labels,
            per_rpc: OnceLock::new(),
        }
    }

    /// Records one call that took `seconds`.
    pub(super) fn call(&self, seconds: f64) {
        self.requests.increment(1);
        self.duration.record(seconds);
    }

    /// Records a stream's messages: requests and responses.
    pub(super) fn messages(&self, names: &Names, counts: [u64; 2]) {
        let per_rpc = self.per_rpc.get_or_init(|| {
            [
                metrics::histogram!(names.requests_per_rpc, self.labels.iter()),
                metrics::histogram!(names.responses_per_rpc, self.labels.iter()),
            ]
        });
        for (histogram, count) in per_rpc.iter().zip(counts) {
            histogram.record(count as f64);
        }
    }
}

/// Handles by label set (`K`: what tells the sets apart, e.g. method and code).
#[derive(Debug)]
pub(super) struct Cache<K> {
    names: &'static Names,
    handles: RwLock<HashMap<K, Handles>>,
}

impl<K: Hash + Eq> Cache<K> {
    pub(super) fn new(names: &'static Names) -> Cache<K> {
        Cache {
            names,
            handles: RwLock::new(HashMap::new()),
        }
    }

    /// Runs `record` on the handles of `key`, registering them (with `labels()`) the first
    /// time.
    pub(super) fn with(
        &self,
        key: K,
        labels: impl FnOnce() -> Vec<Label>,
        record: impl FnOnce(&Handles, &Names),
    ) {
        if let Some(handles) = self.handles.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return record(handles, self.names);
        }
        let mut all = self.handles.write().unwrap_or_else(|e| e.into_inner());
        let handles = all
            .entry(key)
            .or_insert_with(|| Handles::new(self.names, labels()));
        record(handles, self.names);
    }
}
