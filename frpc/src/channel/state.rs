//! [`ChannelState`]: where a [`super::Channel`] stands, as tools and tests observe it.

/// Where a [`super::Channel`] stands (gRPC's connectivity states). A balanced channel is
/// `Ready` while any endpoint is, else `Connecting` while any attempt is under way, else
/// `TransientFailure`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChannelState {
    /// Lazy, not yet asked to connect.
    Idle,
    /// A connection attempt is under way (calls wait for it).
    Connecting,
    /// Connected: calls go through.
    Ready,
    /// Connected, but the server reports `NOT_SERVING` through `frpc::health` (balanced
    /// channels with [`super::Endpoint::health_check`]): no new calls go there.
    NotServing,
    /// The last attempt failed, or the connection closed before the server answered: calls
    /// fail at once with `Error::Unavailable` until the next attempt after the backoff. The
    /// text says why.
    TransientFailure(String),
    /// Every handle is gone: the channel stopped.
    Shutdown,
}
