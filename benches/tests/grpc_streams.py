"""Python grpcio against the gRPC face's streaming methods (driven by benches/tests/grpc_clients.rs).

Usage: grpc_streams.py ADDR PROTO_DIR. Generates the stubs of streams.proto with grpcio-tools,
then checks server-streaming, client-streaming and bidi calls, errors mid-stream, metadata both
ways, a deadline and a cancel on a stream, grpc.health.v1.Health/Watch and an oversize message.
Talks to the Rust side by lines: it prints a line when it waits, the Rust side answers "go".
Prints "OK" at the end; any failure raises (non-zero exit).
"""
import os
import queue
import sys
import tempfile

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_tools import protoc

addr, proto_dir = sys.argv[1], sys.argv[2]
out = tempfile.mkdtemp()
assert protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}",
                    os.path.join(proto_dir, "streams.proto")]) == 0
sys.path.insert(0, out)
import streams_pb2 as pb  # noqa: E402
import streams_pb2_grpc  # noqa: E402

channel = grpc.insecure_channel(addr)
stub = streams_pb2_grpc.StreamsStub(channel)


def wait_for_rust(line):
    print(line, flush=True)
    assert sys.stdin.readline().strip() == "go"


def expect_error(code, fn, details=None):
    try:
        fn()
    except grpc.RpcError as err:
        assert err.code() == code, (err.code(), err.details())
        assert details is None or err.details() == details, err.details()
        return err
    raise AssertionError(f"expected {code}")


# Server streaming: every item, then OK.
assert [item.n for item in stub.Count(pb.CountRequest(n=5))] == [0, 1, 2, 3, 4]

# An error after the items: they arrive, then the status.
got = []
def count_fail():
    for item in stub.Count(pb.CountRequest(n=3, mode="fail")):
        got.append(item.n)
expect_error(grpc.StatusCode.ABORTED, count_fail, "failed after 3")
assert got == [0, 1, 2], got

# Client streaming.
total = stub.Sum(iter([pb.Item(n=n) for n in range(1, 11)]))
assert (total.sum, total.count) == (55, 10), total
expect_error(grpc.StatusCode.INVALID_ARGUMENT,
             lambda: stub.Sum(iter([pb.Item(n=1), pb.Item(text="fail")])), "bad item")

# Bidi, one request at a time: each echo comes back before the next request goes.
requests = queue.Queue()
def from_queue():
    while (item := requests.get()) is not None:
        yield item
replies = stub.Chat(from_queue(), metadata=[("x-user", "ada")])
for n in range(10):
    requests.put(pb.Item(text=f"m{n}", n=n))
    reply = next(replies)
    assert (reply.text, reply.n) == (f"echo:m{n}", n), reply
requests.put(None)
assert list(replies) == []
assert dict(replies.initial_metadata())["x-echo-user"] == "ada"

# Bidi failing mid-stream.
replies = stub.Chat(iter([pb.Item(text="a"), pb.Item(text="fail")]))
assert next(replies).text == "echo:a"
expect_error(grpc.StatusCode.FAILED_PRECONDITION, lambda: next(replies), "chat failed")

# Metadata both ways on a server stream: headers before the items, trailers after.
replies = stub.Count(pb.CountRequest(n=2, mode="meta"),
                     metadata=[("x-user", "grace")])
assert dict(replies.initial_metadata())["x-echo-user"] == "grace"
assert [item.n for item in replies] == [0, 1]
assert dict(replies.trailing_metadata())["x-done"] == "yes"

# A deadline on a stream: the items sent, then DEADLINE_EXCEEDED; the Rust side sees the
# handler cancelled.
got = []
def count_hang():
    for item in stub.Count(pb.CountRequest(n=2, mode="hang"), timeout=0.3):
        got.append(item.n)
expect_error(grpc.StatusCode.DEADLINE_EXCEEDED, count_hang)
assert got == [0, 1], got
wait_for_rust("DEADLINE")

# A cancel on a bidi stream whose handler waits.
requests = queue.Queue()
requests.put(pb.Item(text="hang"))
replies = stub.Chat(from_queue())
wait_for_rust("CANCEL")  # the handler runs
replies.cancel()
wait_for_rust("CANCELLED")  # the handler saw the cancel
requests.put(None)

# An oversize request message: RESOURCE_EXHAUSTED, as gRPC servers answer.
expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED,
             lambda: stub.Sum(iter([pb.Item(n=1), pb.Item(data=b"x" * 100_000)])))
replies = stub.Chat(iter([pb.Item(text="small"), pb.Item(data=b"x" * 100_000)]))
assert next(replies).text == "echo:small"
expect_error(grpc.StatusCode.RESOURCE_EXHAUSTED, lambda: next(replies))

# grpc.health.v1.Health/Watch: the status now, then each change.
health = health_pb2_grpc.HealthStub(channel)
watch = health.Watch(health_pb2.HealthCheckRequest(service="streams.Streams"))
assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
wait_for_rust("WATCHING")  # the Rust side reports NOT_SERVING
assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
watch.cancel()
print("OK", flush=True)
