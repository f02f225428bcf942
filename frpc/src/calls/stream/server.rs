//! [`ServerStream`]: the server's view of a stream a client opened, handed to the generated
//! dispatcher.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use frpc_wire::polyglot::{EOF_MESSAGE, Message};
use frpc_wire::{Packet, op};

use crate::calls::ext;
use crate::status::{Error, Status};
use crate::transport::connection::Connection;

use super::bridge::{self, Bridge};
use super::common::*;
use super::guard::*;
use super::inbound::*;
use super::outbound::*;
use super::table::*;

/// The server's view of a stream a client opened, handed to the generated dispatcher.
#[derive(Debug)]
pub struct ServerStream(Opened);

/// An fRPC stream, or a bridged one (a gRPC call's, see [`Bridge`]).
#[derive(Debug)]
enum Opened {
    Frpc {
        inbound: Inbound,
        guard: Arc<StreamGuard>,
    },
    #[cfg_attr(not(feature = "grpc"), allow(dead_code))]
    Bridged(Bridge),
}

/// What the server's dispatcher keeps of a stream it hands to a handler: enough to end the
/// stream for a handler that returned without ending it (generated handlers always do; a
/// hand-written service, or a layer refusing the call, may not), so the client always sees an
/// end (and, with open acknowledgement, its open never waits in vain).
#[derive(Debug)]
pub(crate) struct StreamEnd {
    pub(super) guard: Option<Arc<StreamGuard>>,
}

impl StreamEnd {
    /// Ends the stream with the handler's outcome unless the handler ended it. Sent past the
    /// stream's cancellation: a handler dropped at its deadline has its token cancelled, and
    /// the client still gets DEADLINE_EXCEEDED (errors and `EOF` take no credit).
    pub(crate) async fn ensure(self, result: &Result<(), Status>) {
        let Some(guard) = &self.guard else { return };
        if guard.ended.swap(true, Ordering::Relaxed)
            || guard.conn.is_closed()
            || guard.failed_here().is_some()
        {
            return;
        }
        if let Err(status) = result {
            let _ = guard
                .conn
                .send(Packet::new(guard.id, op::STREAM, guard.error(status)))
                .await;
        }
        let _ = guard
            .conn
            .send(Packet::new(guard.id, op::STREAM, guard.eof()))
            .await;
    }
}

impl ServerStream {
    /// What the stream carries, counted as it goes (read by `crate::metrics` after its end);
    /// `None` for a bridged stream (a gRPC call's), which is not counted.
    #[cfg(feature = "metrics")]
    pub(crate) fn message_counts(&self) -> Option<Arc<super::counts::MessageCounts>> {
        match &self.0 {
            Opened::Frpc { guard, .. } => Some(guard.counts.clone()),
            Opened::Bridged(_) => None,
        }
    }

    /// A handle that ends the stream if its handler does not (see [`StreamEnd`]).
    pub(crate) fn end_handle(&self) -> StreamEnd {
        let guard = match &self.0 {
            Opened::Frpc { guard, .. } => Some(guard.clone()),
            Opened::Bridged(_) => None,
        };
        StreamEnd { guard }
    }

    /// A stream another protocol carries (the gRPC face's): the handler reads `bridge`'s
    /// source and sends into its channel; its outcome is the call's result.
    #[cfg(feature = "grpc")]
    pub(crate) fn bridged(bridge: Bridge) -> ServerStream {
        ServerStream(Opened::Bridged(bridge))
    }

    /// Registers a stream the peer opened; its handler's task keeps the returned place (see
    /// [`StreamPlace`]).
    pub(crate) fn accept(
        conn: &Arc<Connection>,
        table: &Arc<StreamTable>,
        id: u16,
        ext: StreamExt,
        setup: StreamSetup,
    ) -> Result<(ServerStream, StreamPlace), Error> {
        let (inbound, place) = table.accept(id, ext.cancel.clone(), setup)?;
        let guard = Arc::new(StreamGuard::new(
            conn,
            table,
            id,
            &inbound,
            ClientSide::default(),
            ext,
        ));
        Ok((ServerStream(Opened::Frpc { inbound, guard }), place))
    }

    pub(crate) fn split<Req: Message, Resp: Message>(self) -> (Streaming<Req>, StreamSender<Resp>) {
        match self.0 {
            Opened::Frpc { inbound, guard } => (
                Streaming::for_server(inbound, guard.clone()),
                StreamSender::new(guard),
            ),
            Opened::Bridged(bridge) => {
                let (inbound, sender) = bridge::split(bridge);
                (
                    Streaming(Receiving::Bridged(inbound)),
                    StreamSender(Sending::Bridged(sender)),
                )
            }
        }
    }

    /// Sends the handler's outcome: its error (if any) and then `EOF`.
    pub(crate) async fn finish<Resp: Message>(sender: &StreamSender<Resp>, result: Result<(), Status>) {
        if let Err(status) = &result {
            let _ = sender.send_error(status).await;
        }
        let _ = sender.send_eof().await;
    }

    /// Refuses a stream before any handler ran (unknown method, bad request, too many
    /// streams): its error (with its code when the connection has status codes) and `EOF`.
    pub(crate) async fn refuse(conn: &Connection, id: u16, status: Status, bits: u32) {
        let content = error_content(&status, bits & ext::EXT_STATUS != 0, None);
        let _ = conn.send(Packet::new(id, op::STREAM, content)).await;
        let _ = conn
            .send(Packet::new(id, op::STREAM, Bytes::from_static(EOF_MESSAGE)))
            .await;
    }
}
