//! The load generator behind `frpc-bench` and `frpc bench`: a client keeps a number of calls
//! outstanding ([`drive`]), each starting as the one before it completes (a closed loop) or on
//! a schedule ([`Limit::paced`], [`Pacer`]: an offered rate); calls that complete inside a
//! measured [`Window`] count, their latency goes into an HDR histogram and their failures are
//! counted by code ([`Outcome`]); [`cpu`] reads the CPU time processes spent meanwhile.
//!
//! ```
//! use std::time::Duration;
//! use frpc_load::{Callers, Caller, Failure, Limit, Window};
//!
//! /// A "call" that fails every third time.
//! #[derive(Clone, Default)]
//! struct Flaky(u64);
//!
//! impl Caller<u64> for Flaky {
//!     async fn call(&mut self, request: &mut u64) -> Result<(), Failure> {
//!         self.0 += *request;
//!         if self.0 % 3 == 0 { Err("UNAVAILABLE".into()) } else { Ok(()) }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limit = Limit::total(Window::new(Duration::ZERO, Duration::from_secs(60)), 30);
//! let outcome = frpc_load::drive(&Flaky::default(), &1, 4, Callers::Joined, limit).await;
//! assert_eq!(outcome.calls + outcome.failed(), 30);
//! assert_eq!(outcome.errors["UNAVAILABLE"], outcome.failed());
//! # }
//! ```
#![deny(missing_docs)]

pub mod cpu;
mod drive;
mod outcome;
mod pace;

pub use drive::{Caller, Callers, drive};
pub use outcome::{Failure, Limit, Outcome, Window};
pub use pace::{MAX_INTERVAL, MAX_LAG, Pacer};
