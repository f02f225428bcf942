//! Client-side retries: [`Idempotent`], a `tower::retry` policy that calls again the methods
//! the application marks idempotent when they fail with code `Unavailable`, within a retry
//! budget. Use it as a layer on a [`crate::Channel`] (see [`crate::Channel::with_layer`]).

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tower::BoxError;
use tower::retry::Policy;
use tower::retry::budget::{Budget, TpsBudget};

use crate::caller::{Reply, Request};
use crate::channel::Backoff;
use crate::status::{Code, Error};

/// Retries the calls of the operations given to [`Idempotent::new`] (the generated
/// `foo::METHOD` constants) that fail with code `Unavailable`: no connection up, the connection
/// closed under the call (the server may or may not have run it, hence idempotent methods
/// only), or an frpc server's error reply with that code (`Status::unavailable`). Other calls and other failures are never retried.
///
/// Retries are bounded three ways: at most `max_retries` per call (default 3), each after a
/// [`Backoff`] wait (default 10 ms doubling, at most 500 ms), and all together by a
/// `tower::retry::budget::TpsBudget` shared by the clones of the policy (default: 10 retries a
/// second plus 20 % of the calls, over 10 s), so that an outage does not multiply the load.
///
/// On a balanced channel a retry goes through the balancer again, so it usually lands on
/// another server.
///
/// ```
/// use frpc::retry::Idempotent;
///
/// // Operations 1 and 3 (`greeter::GET`, `greeter::LIST`, say) may be retried.
/// let policy = Idempotent::new([1, 3]).max_retries(5);
/// assert!(policy.is_idempotent(3));
/// assert!(!policy.is_idempotent(2));
/// ```
#[derive(Clone)]
pub struct Idempotent {
    ops: Arc<[u16]>,
    budget: Arc<TpsBudget>,
    backoff: Backoff,
    max_retries: u32,
    /// Retries made for the call this clone follows (tower clones the policy per call).
    retries: u32,
}

impl fmt::Debug for Idempotent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Idempotent")
            .field("ops", &self.ops)
            .field("backoff", &self.backoff)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

impl Idempotent {
    /// A policy retrying the operations `ops`.
    pub fn new(ops: impl IntoIterator<Item = u16>) -> Idempotent {
        Idempotent {
            ops: ops.into_iter().collect(),
            budget: Arc::new(TpsBudget::default()),
            backoff: Backoff::default()
                .initial(Duration::from_millis(10))
                .max(Duration::from_millis(500)),
            max_retries: 3,
            retries: 0,
        }
    }

    /// The budget all retries draw on (see `tower::retry::budget::TpsBudget::new`).
    pub fn budget(mut self, budget: TpsBudget) -> Idempotent {
        self.budget = Arc::new(budget);
        self
    }

    /// The wait before each retry.
    pub fn backoff(mut self, backoff: Backoff) -> Idempotent {
        self.backoff = backoff;
        self
    }

    /// At most this many retries per call (default 3).
    pub fn max_retries(mut self, max_retries: u32) -> Idempotent {
        self.max_retries = max_retries;
        self
    }

    /// Whether calls of operation `op` may be retried.
    pub fn is_idempotent(&self, op: u16) -> bool {
        self.ops.contains(&op)
    }

    /// `code`: the failure's, or a remote error reply's (an frpc server sends a status code
    /// with its error replies), `None` for a success.
    fn decide(&mut self, request: &Request, code: Option<Code>) -> Option<Pin<Box<tokio::time::Sleep>>> {
        let Some(code) = code else {
            self.budget.deposit();
            return None;
        };
        if code != Code::Unavailable
            || !self.is_idempotent(request.op)
            || self.retries >= self.max_retries
            || !self.budget.withdraw()
        {
            return None;
        }
        let delay = self.backoff.delay(self.retries);
        self.retries += 1;
        Some(Box::pin(tokio::time::sleep(delay)))
    }
}

impl Policy<Request, Reply, Error> for Idempotent {
    type Future = Pin<Box<tokio::time::Sleep>>;

    fn retry(&mut self, request: &mut Request, result: &mut Result<Reply, Error>) -> Option<Self::Future> {
        let code = match result {
            Ok(reply) => reply.code,
            Err(err) => Some(err.code()),
        };
        self.decide(request, code)
    }

    fn clone_request(&mut self, request: &Request) -> Option<Request> {
        self.is_idempotent(request.op).then(|| request.clone())
    }
}

/// For a retry layer above layers whose errors are boxed (a timeout): frpc's errors inside
/// are looked at, other errors are not retried.
impl Policy<Request, Reply, BoxError> for Idempotent {
    type Future = Pin<Box<tokio::time::Sleep>>;

    fn retry(&mut self, request: &mut Request, result: &mut Result<Reply, BoxError>) -> Option<Self::Future> {
        let code = match result {
            Ok(reply) => reply.code,
            Err(err) => Some(err.downcast_ref::<Error>().map_or(Code::Unknown, Error::code)),
        };
        self.decide(request, code)
    }

    fn clone_request(&mut self, request: &Request) -> Option<Request> {
        self.is_idempotent(request.op).then(|| request.clone())
    }
}
