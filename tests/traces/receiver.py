"""A real OTLP/HTTP trace receiver for tests/traces: decodes what an exporter sends with the
official schema (opentelemetry-proto, pinned in tests/e2e/requirements.txt), both encodings:
application/x-protobuf and application/json (OTLP/JSON: ids in hex, not protobuf-JSON's base64).

    receiver.py PORT OUT.jsonl

Each span becomes one JSON line in OUT: name, trace_id, span_id, parent_id (hex, "" for none),
trace_state,
kind and status (the enum names), start and end (ns since the epoch), attributes (plain values),
links, dropped_attributes_count and dropped_links_count, the resource's service.name, the instrumentation scope and the encoding it came in.
Each histogram or sum data point becomes one JSON line in OUT.metrics.jsonl: the metric's name,
kind, unit, attributes, the resource's service.name, the point's time, and count and sum (a
histogram) or value and monotonic (a sum: a counter or an UpDownCounter). Logs (Deno exports those
too) and other metric kinds (gauges) are accepted and dropped. Anything else: 404 or 415.
"""

import base64
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

PORT, OUT = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()


def hex_ids_to_base64(node):
    """OTLP/JSON writes trace and span ids as hex; the protobuf JSON mapping reads bytes as base64."""
    if isinstance(node, list):
        for item in node:
            hex_ids_to_base64(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                node[key] = base64.b64encode(bytes.fromhex(value)).decode()
            else:
                hex_ids_to_base64(value)


def plain(value):
    """An AnyValue as a JSON value."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [plain(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: plain(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind) if kind else None


def metric_points(request):
    """Histogram points (count, sum) and sum points (value: a counter's or an UpDownCounter's)."""
    for resource_metrics in request.resource_metrics:
        resource = {a.key: plain(a.value) for a in resource_metrics.resource.attributes}
        for scope_metrics in resource_metrics.scope_metrics:
            for m in scope_metrics.metrics:
                kind = m.WhichOneof("data")
                if kind not in ("histogram", "sum"):
                    continue
                for p in getattr(m, kind).data_points:
                    point = {
                        "name": m.name,
                        "kind": kind,
                        "unit": m.unit,
                        "attributes": {a.key: plain(a.value) for a in p.attributes},
                        "service": resource.get("service.name"),
                        "time": p.time_unix_nano,
                    }
                    if kind == "histogram":
                        point.update(count=p.count, sum=p.sum)
                    else:
                        point.update(value=getattr(p, p.WhichOneof("value")), monotonic=m.sum.is_monotonic)
                    yield point


def rows(request, encoding, transport):
    for resource_spans in request.resource_spans:
        resource = {a.key: plain(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for s in scope_spans.spans:
                yield {
                    "name": s.name,
                    "trace_id": s.trace_id.hex(),
                    "span_id": s.span_id.hex(),
                    "parent_id": s.parent_span_id.hex(),
                    "trace_state": s.trace_state,
                    "kind": Span.SpanKind.Name(s.kind),
                    "status": Status.StatusCode.Name(s.status.code),
                    "status_message": s.status.message,
                    "start": s.start_time_unix_nano,
                    "end": s.end_time_unix_nano,
                    "attributes": {a.key: plain(a.value) for a in s.attributes},
                    "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex()} for l in s.links],
                    "dropped_attributes_count": s.dropped_attributes_count,
                    "dropped_links_count": s.dropped_links_count,
                    "service": resource.get("service.name"),
                    "scope": scope_spans.scope.name,
                    "encoding": encoding,
                    **transport,
                }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body=b"", content_type="application/x-protobuf"):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        """The request's body as OTLP/HTTP allows it to come: with a length or chunked (the
        OpenTelemetry JS exporters stream theirs), and gzip-compressed when so marked."""
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailer fields
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            body = b"".join(parts)
        else:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if (self.headers.get("content-encoding") or "").lower() == "gzip":
            body = gzip.decompress(body)
        return body

    def do_POST(self):
        body = self.body()
        content_type = (self.headers.get("content-type") or "").split(";")[0].strip()
        if self.path == "/v1/logs":
            return self.answer(200, b"{}" if content_type == "application/json" else b"", content_type)
        if self.path not in ("/v1/traces", "/v1/metrics"):
            return self.answer(404)
        if content_type not in ("application/x-protobuf", "application/json"):
            return self.answer(415)
        if self.path == "/v1/metrics":
            return self.metrics(body, content_type)
        request = ExportTraceServiceRequest()
        try:
            if content_type == "application/x-protobuf":
                request.ParseFromString(body)
                encoding = "protobuf"
            else:
                doc = json.loads(body)
                hex_ids_to_base64(doc)
                ParseDict(doc, request)
                encoding = "json"
        except Exception as e:  # not OTLP: the test fails on the spans it then misses
            print(f"receiver: undecodable {content_type} export: {e}", file=sys.stderr, flush=True)
            return self.answer(400)
        # How the export came: compressed or not, and the test header OTEL_EXPORTER_OTLP_HEADERS set.
        transport = {
            "content_encoding": self.headers.get("content-encoding") or "",
            "test_header": self.headers.get("x-chumbo-test") or "",
        }
        lines = "".join(json.dumps(r) + "\n" for r in rows(request, encoding, transport))
        with lock, open(OUT, "a", encoding="utf-8") as f:
            f.write(lines)
        if content_type == "application/json":
            return self.answer(200, b"{}", "application/json")
        return self.answer(200, ExportTraceServiceResponse().SerializeToString())

    def metrics(self, body, content_type):
        request = ExportMetricsServiceRequest()
        try:
            if content_type == "application/x-protobuf":
                request.ParseFromString(body)
            else:
                ParseDict(json.loads(body), request)
        except Exception as e:
            print(f"receiver: undecodable {content_type} metrics export: {e}", file=sys.stderr, flush=True)
            return self.answer(400)
        lines = "".join(json.dumps(p) + "\n" for p in metric_points(request))
        with lock, open(OUT + ".metrics.jsonl", "a", encoding="utf-8") as f:
            f.write(lines)
        if content_type == "application/json":
            return self.answer(200, b"{}", "application/json")
        return self.answer(200, ExportMetricsServiceResponse().SerializeToString())

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
