//! A publish/subscribe broker on raw Frisbee operations, served beside ordinary RPCs on the
//! same connections.
//!
//! Protocol (all contents are `topic_len u8 | topic | payload`):
//! - [`SUBSCRIBE`] (client → broker, payload empty): the broker remembers the connection and
//!   answers with the same packet as an acknowledgement.
//! - [`PUBLISH`] (client → broker): forwarded to every subscriber of the topic as [`MESSAGE`],
//!   in the order the broker received them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::{BufMut, Bytes, BytesMut};
use frpc::{Builder, Context, PacketSender};
use frpc_wire::Packet;

/// Subscribe to a topic.
pub const SUBSCRIBE: u16 = 100;
/// Publish on a topic.
pub const PUBLISH: u16 = 101;
/// A published message delivered to a subscriber.
pub const MESSAGE: u16 = 102;

/// Encodes `topic_len u8 | topic | payload`.
pub fn frame(topic: &str, payload: &[u8]) -> Bytes {
    let topic = &topic.as_bytes()[..topic.len().min(255)];
    let mut buf = BytesMut::with_capacity(1 + topic.len() + payload.len());
    buf.put_u8(topic.len() as u8);
    buf.put_slice(topic);
    buf.put_slice(payload);
    buf.freeze()
}

/// Splits `topic_len u8 | topic | payload`; `None` if malformed.
pub fn unframe(content: &[u8]) -> Option<(&str, &[u8])> {
    let (&len, rest) = content.split_first()?;
    let topic = rest.get(..len as usize)?;
    Some((std::str::from_utf8(topic).ok()?, &rest[len as usize..]))
}

/// The subscribers of every topic.
#[derive(Debug, Clone, Default)]
pub struct Broker {
    topics: Arc<Mutex<HashMap<String, Vec<PacketSender>>>>,
}

impl Broker {
    /// Adds the broker's two routes to a server builder.
    pub fn routes(&self, builder: Builder) -> Builder {
        let subscribe = self.clone();
        let publish = self.clone();
        builder
            .route(SUBSCRIBE, move |ctx, packet| {
                let broker = subscribe.clone();
                async move { broker.subscribe(&ctx, packet) }
            })
            .route(PUBLISH, move |_ctx, packet| {
                let broker = publish.clone();
                async move {
                    broker.publish(packet).await;
                    None
                }
            })
    }

    fn subscribe(&self, ctx: &Context, packet: Packet) -> Option<Bytes> {
        let (topic, _) = unframe(&packet.content)?;
        let mut topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
        topics
            .entry(topic.to_owned())
            .or_default()
            .push(ctx.packet_sender());
        Some(packet.content)
    }

    async fn publish(&self, packet: Packet) {
        let Some((topic, _)) = unframe(&packet.content) else {
            return;
        };
        let subscribers = {
            let mut topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
            let Some(list) = topics.get_mut(topic) else { return };
            list.retain(|s| !s.is_closed());
            list.clone()
        };
        for subscriber in subscribers {
            // Waits while a subscriber's queue is full: slow subscribers slow the publisher
            // down instead of losing messages.
            let _ = subscriber.send(MESSAGE, packet.id, packet.content.clone()).await;
        }
    }

    /// Number of live subscriptions on `topic`.
    pub fn subscribers(&self, topic: &str) -> usize {
        let topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
        topics
            .get(topic)
            .map_or(0, |list| list.iter().filter(|s| !s.is_closed()).count())
    }
}
