//! The client side: opening a stream, and the call handles of client-streaming and bidi calls.

use std::fmt;
use std::sync::Arc;

use frpc_wire::polyglot::Message;

use crate::calls::ext;
use crate::calls::held::Hold;
use crate::status::Error;
use crate::transport::connection::Connection;

use super::common::*;
use super::guard::*;
use super::inbound::*;
use super::outbound::*;
use super::table::*;

/// Opens a stream from the client side: registers it, then sends the open message (behind
/// `header`, the extension header, when there is one). With open acknowledgement (`bits`) the
/// header asks for OPENED, and with flow control too it carries this side's window; the
/// stream then starts with one message of credit (the request of a server-streaming call goes
/// out without a round trip) and OPENED brings the rest of the server's window. The caller
/// waits for OPENED with [`Streaming::opened`].
pub(crate) async fn open<Req: Message, Resp: Message>(
    conn: &Arc<Connection>,
    table: &Arc<StreamTable>,
    method: u16,
    client: ClientSide,
    bits: u32,
    header: Option<ext::Header>,
) -> Result<(StreamSender<Req>, Streaming<Resp>), Error> {
    let ack = bits & ext::EXT_OPEN_ACK != 0;
    let window = match ack && bits & ext::EXT_FLOW != 0 {
        true => table.window(bits & ext::EXT_BYTES != 0),
        false => ext::Window::default(),
    };
    let flow = window.messages > 0;
    // The opener starts with one message, and one byte, of credit: its first message goes
    // out whatever its size, and the server's OPENED brings the rest of its window.
    let setup = StreamSetup {
        recv_window: window.messages,
        send_credit: flow.then_some(1),
        recv_bytes: window.bytes,
        send_bytes: window.bytes.map(|_| 1),
        awaiting_ack: ack,
        codes: bits & ext::EXT_STATUS != 0,
        hold: Hold::of_stream(bits),
    };
    let (id, inbound) = table.open_local(setup)?;
    let ext = StreamExt {
        bits,
        cancel: None,
        ack_window: None,
    };
    let guard = Arc::new(StreamGuard::new(conn, table, id, &inbound, client, ext));
    let sender = FrpcSender::new(guard.clone());
    let header = match ack {
        false => header,
        true => Some(ext::Header {
            open: Some(window),
            ..header.unwrap_or_default()
        }),
    };
    let open = open_message(method, bits & ext::EXT_PROTOBUF != 0);
    let open = match header {
        Some(header) => header.encode(&open),
        None => open,
    };
    sender.send_raw(open, false).await?;
    Ok((
        StreamSender(Sending::Frpc(sender)),
        Streaming::new(inbound, guard),
    ))
}

/// The sending half of a client-streaming or bidi call, from their `split()`: sends requests
/// from a task of its own while another reads the responses. Dropping it ends the request
/// stream (the server reads `EOF`), as [`close`](Self::close) does.
pub struct RequestSender<Req> {
    pub(super) sender: StreamSender<Req>,
    pub(super) closed: bool,
    /// Still part of an unsplit call, so it drops with the receiving half.
    joined: bool,
}

impl<Req> fmt::Debug for RequestSender<Req> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestSender")
            .field("id", &self.sender.id())
            .field("closed", &self.closed)
            .finish()
    }
}

impl<Req: Message> RequestSender<Req> {
    fn new(sender: StreamSender<Req>) -> Self {
        RequestSender {
            sender,
            closed: false,
            joined: true,
        }
    }

    /// The stream id.
    pub fn id(&self) -> u16 {
        self.sender.id()
    }

    /// Sends one request, waiting while the connection's write queue is full and, between frpc
    /// peers, for flow-control credit. Waiting here never holds up the receiving half.
    ///
    /// Not cancel-safe: a send dropped while it waits has not sent its request (one dropped
    /// after its last wait has).
    ///
    /// Fails with [`Error::RequestStreamClosed`] once the request stream is closed.
    pub async fn send(&self, request: Req) -> Result<(), Error> {
        if self.closed {
            return Err(Error::RequestStreamClosed);
        }
        self.sender.send(request).await
    }

    /// Ends the request stream (sends `EOF`); the responses go on. Later calls do nothing.
    pub async fn close(&mut self) -> Result<(), Error> {
        if !self.closed {
            self.closed = true;
            self.sender.close().await?;
        }
        Ok(())
    }
}

impl<Req> Drop for RequestSender<Req> {
    /// Ends the request stream, unless the whole call goes and cancels the stream: an `EOF`
    /// ahead of the `CANCEL` would let the server's handler finish as if the call were done.
    fn drop(&mut self) {
        let cancelled_instead = self.joined && self.sender.cancels_on_drop();
        if !self.closed && !cancelled_instead {
            self.sender.eof_detached();
        }
    }
}

/// A client-streaming call: send requests, then [`close_and_recv`](Self::close_and_recv); or
/// [`split`](Self::split) it to send from one task and await the response in another.
pub struct ClientStreamingCall<Req, Resp> {
    pub(super) sender: RequestSender<Req>,
    pub(super) inbound: Streaming<Resp>,
}

impl<Req, Resp> fmt::Debug for ClientStreamingCall<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientStreamingCall")
            .field("id", &self.sender.sender.id())
            .finish()
    }
}

impl<Req: Message, Resp: Message> ClientStreamingCall<Req, Resp> {
    pub(crate) fn new(sender: StreamSender<Req>, inbound: Streaming<Resp>) -> Self {
        ClientStreamingCall {
            sender: RequestSender::new(sender),
            inbound,
        }
    }

    /// Sends one request (see [`RequestSender::send`]).
    pub async fn send(&mut self, request: Req) -> Result<(), Error> {
        self.sender.send(request).await
    }

    /// Ends the request stream and waits for the response.
    pub async fn close_and_recv(self) -> Result<Resp, Error> {
        let (mut sender, response) = self.split();
        sender.close().await?;
        response.recv().await
    }

    /// Splits the call into its sending half and its response, which can live in different
    /// tasks. The response comes once the request stream ends: [`RequestSender::close`], or
    /// the sender dropped.
    pub fn split(mut self) -> (RequestSender<Req>, ClientStreamingResponse<Resp>) {
        self.sender.joined = false;
        (
            self.sender,
            ClientStreamingResponse {
                inbound: self.inbound,
            },
        )
    }
}

/// The response of a split [`ClientStreamingCall`].
pub struct ClientStreamingResponse<Resp> {
    inbound: Streaming<Resp>,
}

impl<Resp> fmt::Debug for ClientStreamingResponse<Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientStreamingResponse")
            .field("id", &self.inbound.id())
            .finish()
    }
}

impl<Resp: Message> ClientStreamingResponse<Resp> {
    /// Waits for the server's response (or its error).
    pub async fn recv(mut self) -> Result<Resp, Error> {
        match self.inbound.message().await? {
            Some(response) => {
                self.inbound.end_of_reply().await?;
                Ok(response)
            }
            None => Err(Error::closed("the server ended the stream without a response")),
        }
    }
}

/// A bidirectional call: [`send`](Self::send) and [`message`](Self::message) in any order,
/// [`close_send`](Self::close_send) when done sending; or [`split`](Self::split) it to send
/// from one task and receive in another.
///
/// [`message`](Self::message) is cancel-safe: in a `tokio::select!` loop, a branch that wins
/// while it waits loses no response. A [`send`](Self::send) waiting for credit in such a loop
/// keeps the loop from receiving, though: to send and receive at once, split the call.
pub struct BidiCall<Req, Resp> {
    pub(super) sender: RequestSender<Req>,
    pub(super) inbound: Streaming<Resp>,
}

impl<Req, Resp> fmt::Debug for BidiCall<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BidiCall")
            .field("id", &self.sender.sender.id())
            .finish()
    }
}

impl<Req: Message, Resp: Message> BidiCall<Req, Resp> {
    pub(crate) fn new(sender: StreamSender<Req>, inbound: Streaming<Resp>) -> Self {
        BidiCall {
            sender: RequestSender::new(sender),
            inbound,
        }
    }

    /// Sends one request (see [`RequestSender::send`]).
    pub async fn send(&mut self, request: Req) -> Result<(), Error> {
        self.sender.send(request).await
    }

    /// Ends the request stream (sends `EOF`); responses can still be read.
    pub async fn close_send(&mut self) -> Result<(), Error> {
        self.sender.close().await
    }

    /// The next response; `Ok(None)` once the server has ended the stream. Cancel-safe.
    pub async fn message(&mut self) -> Result<Option<Resp>, Error> {
        self.inbound.message().await
    }

    /// Splits the call into its sending and its receiving half, which can live in different
    /// tasks (tonic's habit: a task sends, the caller receives). Dropping the sender ends the
    /// request stream; dropping both ends the call.
    pub fn split(mut self) -> (RequestSender<Req>, Streaming<Resp>) {
        self.sender.joined = false;
        (self.sender, self.inbound)
    }
}
