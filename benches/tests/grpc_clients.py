"""Python grpcio against the gRPC face of frpc (driven by benches/tests/grpc_clients.rs).

Usage: grpc_clients.py ADDR PROTO_DIR. Generates the stubs of benchmark.proto with
grpcio-tools, then checks a reply, every status code, metadata both ways, a deadline, a cancel
and grpc.health.v1. Prints "OK" at the end; any failure raises (non-zero exit).
"""
import os
import sys
import tempfile

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_tools import protoc

addr, proto_dir = sys.argv[1], sys.argv[2]
out = tempfile.mkdtemp()
assert protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}",
                    os.path.join(proto_dir, "benchmark.proto")]) == 0
sys.path.insert(0, out)
import benchmark_pb2  # noqa: E402
import benchmark_pb2_grpc  # noqa: E402

channel = grpc.insecure_channel(addr)
stub = benchmark_pb2_grpc.BenchmarkServiceStub(channel)

reply = stub.Benchmark(benchmark_pb2.Request(Message="echo:héllo"))
assert reply.Message == "echo:héllo", reply

for n in range(1, 17):
    try:
        stub.Benchmark(benchmark_pb2.Request(Message=f"status:{n}"))
        raise AssertionError(f"status {n} succeeded")
    except grpc.RpcError as err:
        assert err.code().value[0] == n, (n, err.code())
        assert err.details() == f"failed with {err.code().name}", (n, err.details())

reply, call = stub.Benchmark.with_call(
    benchmark_pb2.Request(Message="meta"),
    metadata=[("x-user", "ada"), ("x-trace-bin", b"\x00\x01\xff")])
assert reply.Message == "ada", reply
headers = dict(call.initial_metadata())
assert headers["x-echo-user"] == "ada", headers
assert headers["x-echo-bin"] == b"\x00\x01\xff", headers

try:
    stub.Benchmark(benchmark_pb2.Request(Message="deadline"), timeout=0.2)
    raise AssertionError("the deadline call succeeded")
except grpc.RpcError as err:
    assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED, err.code()

# A cancel: the Rust side waits for the handler to start, then for its ctx.cancelled().
future = stub.Benchmark.future(benchmark_pb2.Request(Message="hang"))
print("STARTED", flush=True)
sys.stdin.readline()  # the handler runs
future.cancel()
sys.stdin.readline()  # the handler saw the cancel

health = health_pb2_grpc.HealthStub(channel)
status = health.Check(health_pb2.HealthCheckRequest(service="")).status
assert status == health_pb2.HealthCheckResponse.SERVING, status
status = health.Check(health_pb2.HealthCheckRequest(service="benchmark.BenchmarkService")).status
assert status == health_pb2.HealthCheckResponse.NOT_SERVING, status
try:
    health.Check(health_pb2.HealthCheckRequest(service="nobody"))
    raise AssertionError("an unknown service was found")
except grpc.RpcError as err:
    assert err.code() == grpc.StatusCode.NOT_FOUND, err.code()
print("OK", flush=True)
