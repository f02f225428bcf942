//! Streaming calls from the command line: a server stream prints one JSON object per line as the
//! replies arrive; client and bidi streams send one request per JSON line of standard input (or
//! of the request argument), and a bidi stream prints replies while it still sends.
//!
//! The messages travel as [`Raw`]: their polyglot fields are encoded and decoded from
//! descriptors by [`crate::dynamic`], so the runtime's typed stream calls carry them unchanged.

use bytes::{BufMut, Bytes};
use frpc::wire::DecodeError;
use frpc::wire::polyglot::{Decoder, Message};
use prost_reflect::{DynamicMessage, MessageDescriptor, MethodDescriptor};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

use crate::dynamic::{self, Decoded};
use crate::error::{CliError, other};
use crate::json::{parse_request, to_json};

/// A message's polyglot fields (after the `08 00` envelope), encoded and decoded elsewhere.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Raw {
    fields: Bytes,
}

/// The envelope that starts every encoded message value (`08 00`).
const ENVELOPE_LEN: usize = 2;

impl Raw {
    /// Encodes a dynamic message as generated code would.
    pub fn encode(message: &DynamicMessage) -> Result<Raw, CliError> {
        let whole = dynamic::encode(message).map_err(other)?;
        Ok(Raw {
            fields: whole.slice(ENVELOPE_LEN..),
        })
    }

    /// Decodes the fields as a message of type `desc`.
    pub fn decode(&self, desc: &MessageDescriptor) -> Result<DynamicMessage, CliError> {
        match dynamic::decode(desc, &self.to_polyglot()).map_err(other)? {
            Decoded::Message(message) => Ok(message),
            // `to_polyglot` always writes a message envelope.
            Decoded::Error(text) => Err(other(format!("a message decoded as the error `{text}`"))),
        }
    }
}

impl Message for Raw {
    fn fields_len(&self) -> usize {
        self.fields.len()
    }

    fn encode_fields(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.fields);
    }

    fn decode_fields(&mut self, dec: &mut Decoder<'_>) -> Result<(), DecodeError> {
        self.fields = dec.take_rest();
        Ok(())
    }
}

/// Where a stream's requests come from: the JSON values of a text, or those of standard input
/// as they are typed (each sent once complete: one per line, or spread over several).
#[derive(Debug)]
pub enum Requests {
    /// Parsed up front from the argument or a file, in order.
    Given(std::vec::IntoIter<DynamicMessage>),
    /// Read a line at a time.
    Stdin {
        /// The input's lines.
        lines: Lines<BufReader<Stdin>>,
        /// The method the values are requests of.
        method: MethodDescriptor,
        /// Input read but not yet a whole JSON value.
        pending: String,
        /// Values complete but not yet asked for.
        ready: std::collections::VecDeque<serde_json::Value>,
    },
}

impl Requests {
    /// Every JSON value of `text` (whitespace or newlines between them) as a request of `method`.
    pub fn from_text(method: &MethodDescriptor, text: &str) -> Result<Requests, CliError> {
        let values = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
        let mut messages = Vec::new();
        for value in values {
            let value = value.map_err(|e| other(format!("the requests are not JSON values: {e}")))?;
            messages.push(parse_request(method, &value.to_string())?);
        }
        Ok(Requests::Given(messages.into_iter()))
    }

    /// The JSON values of standard input, each one request of `method`.
    pub fn stdin(method: &MethodDescriptor) -> Requests {
        Requests::Stdin {
            lines: BufReader::new(tokio::io::stdin()).lines(),
            method: method.clone(),
            pending: String::new(),
            ready: std::collections::VecDeque::new(),
        }
    }

    /// The next request, or `None` at the end.
    pub async fn next(&mut self) -> Result<Option<DynamicMessage>, CliError> {
        match self {
            Requests::Given(messages) => Ok(messages.next()),
            Requests::Stdin {
                lines,
                method,
                pending,
                ready,
            } => loop {
                if let Some(value) = ready.pop_front() {
                    return parse_request(method, &value.to_string()).map(Some);
                }
                let Some(line) = lines.next_line().await.map_err(other)? else {
                    return match pending.trim().is_empty() {
                        true => Ok(None),
                        false => Err(other(format!("the input ends inside a JSON value: {pending}"))),
                    };
                };
                pending.push_str(&line);
                pending.push('\n');
                take_values(pending, ready)?;
            },
        }
    }
}

/// Moves the complete JSON values at the front of `pending` to `ready`, leaving a value not
/// yet complete (one that spans lines) in `pending`.
fn take_values(
    pending: &mut String,
    ready: &mut std::collections::VecDeque<serde_json::Value>,
) -> Result<(), CliError> {
    let mut values = serde_json::Deserializer::from_str(pending).into_iter::<serde_json::Value>();
    let mut taken = 0;
    loop {
        match values.next() {
            Some(Ok(value)) => {
                ready.push_back(value);
                taken = values.byte_offset();
            }
            Some(Err(err)) if err.is_eof() => break,
            Some(Err(err)) => return Err(other(format!("the requests are not JSON values: {err}"))),
            None => {
                taken = pending.len();
                break;
            }
        }
    }
    pending.drain(..taken);
    Ok(())
}

/// Makes a streaming call of `method`: `request` is the first (server streaming: the only)
/// request's source; every reply goes to `print` as one line of JSON as it arrives.
///
/// A call ends when its replies end or its deadline passes, whether or not standard input is
/// still open: the requests are read beside the replies, never instead of them.
pub async fn call(
    client: &frpc::Client,
    (method, op): (&MethodDescriptor, u16),
    mut requests: Requests,
    mut print: impl FnMut(&str),
) -> Result<(), CliError> {
    let output = method.output();
    let show = |reply: Raw| -> Result<(), CliError> {
        print(&to_json(&reply.decode(&output)?)?);
        Ok(())
    };
    match (method.is_client_streaming(), method.is_server_streaming()) {
        (false, true) => {
            let request = match requests.next().await? {
                Some(request) => request,
                None => DynamicMessage::new(method.input()),
            };
            let request = Raw::encode(&request)?;
            let mut replies = frpc::codegen::call_server_streaming::<Raw, Raw>(client, op, &request).await?;
            let mut show = show;
            while let Some(reply) = replies.message().await? {
                show(reply)?;
            }
            Ok(())
        }
        (true, false) => client_stream(client, op, requests, show).await,
        (true, true) => bidi(client, op, requests, show).await,
        (false, false) => Err(other(format!("`{}` is unary", method.full_name()))),
    }
}

/// Sends every request, then closes the request stream.
async fn send_all(mut requests: Requests, mut sender: frpc::RequestSender<Raw>) -> Result<(), CliError> {
    while let Some(request) = requests.next().await? {
        sender.send(Raw::encode(&request)?).await?;
    }
    sender.close().await?;
    Ok(())
}

/// A client stream, through the bidi handle of the same stream (the wire does not tell them
/// apart): its `message` is cancel-safe, so the response, or the deadline's error, is watched
/// while the next request is awaited, and the call ends then even while the input stays open.
/// A request that cannot be sent (bad input) fails the call at once: the unsplit handle,
/// dropped, cancels the stream rather than end it as the input's end would (the server would
/// answer a partial upload as a whole one).
async fn client_stream(
    client: &frpc::Client,
    op: u16,
    mut requests: Requests,
    mut show: impl FnMut(Raw) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let mut call = frpc::codegen::call_bidi::<Raw, Raw>(client, op).await?;
    let response = loop {
        tokio::select! {
            biased;
            response = call.message() => break response?,
            request = requests.next() => match request? {
                Some(request) => call.send(Raw::encode(&request)?).await?,
                None => {
                    call.close_send().await?;
                    break call.message().await?;
                }
            },
        }
    };
    let Some(response) = response else {
        return Err(frpc::Error::ConnectionClosed {
            reason: Some("the server ended the stream without a response".into()),
        }
        .into());
    };
    // The server's end after its response: an error status there fails the call.
    while call.message().await?.is_some() {}
    show(response)
}

/// A bidi stream: replies are printed while the requests are still sent.
async fn bidi(
    client: &frpc::Client,
    op: u16,
    requests: Requests,
    mut show: impl FnMut(Raw) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let call = frpc::codegen::call_bidi::<Raw, Raw>(client, op).await?;
    let (sender, mut replies) = call.split();
    // Dropping the sender (at the end of `send_all`, or with it) ends the request stream.
    let send = send_all(requests, sender);
    let receive = async {
        while let Some(reply) = replies.message().await? {
            show(reply)?;
        }
        Ok::<(), CliError>(())
    };
    tokio::pin!(send, receive);
    // The server may end the stream before the requests run out: then it is over. A
    // request that cannot be sent (bad input) ends the request stream as the input's
    // end would: the replies to those sent before it are printed, then its error.
    tokio::select! {
        received = &mut receive => received,
        sent = &mut send => {
            let received = receive.await;
            sent.and(received)
        }
    }
}
