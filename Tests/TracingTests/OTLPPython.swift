import Foundation
import TestSupport
import Testing

@testable import Tracing

/// The real `opentelemetry-proto` Python package (in the venv `scripts/phoenix.sh install`
/// makes), as the judge of the hand-written encoder: what it reads from our bytes is what a
/// collector reads.
enum OTLPPython {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads an `ExportTraceServiceRequest` from the file `argv[2]`, or writes an
    /// `ExportTraceServiceResponse` with `rejected_spans = argv[2]`; the result, as JSON, goes
    /// to the file `argv[3]` (a file, not standard output, which warnings may share).
    private static let script = #"""
        import base64, json, sys
        from google.protobuf import json_format
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as service

        mode, source, target = sys.argv[1:4]
        if mode == "request":
            data = open(source, "rb").read()
            message = service.ExportTraceServiceRequest()
            message.ParseFromString(data)
            tree = json_format.MessageToDict(message, preserving_proto_field_name=True, use_integers_for_enums=True)

            def hexify(node):
                if isinstance(node, dict):
                    for key, value in node.items():
                        if key in ("trace_id", "span_id", "parent_span_id"):
                            node[key] = base64.b64decode(value).hex()
                        else:
                            hexify(value)
                elif isinstance(node, list):
                    for item in node:
                        hexify(item)

            hexify(tree)
            span_keys = [
                sorted(span.keys())
                for resource in tree.get("resource_spans", [])
                for scope in resource.get("scope_spans", [])
                for span in scope.get("spans", [])
            ]
            message.DiscardUnknownFields()
            result = {
                "request": tree,
                "span_keys": span_keys,
                "canonical": message.SerializeToString(deterministic=True) == data,
            }
        else:
            message = service.ExportTraceServiceResponse()
            message.partial_success.rejected_spans = int(source)
            message.partial_success.error_message = "some spans were refused"
            result = {"hex": message.SerializeToString().hex()}
        with open(target, "w") as out:
            json.dump(result, out)
        """#

    /// `OTLP_PYTHON` when set, else the venv of `scripts/phoenix.sh install` (root's or the user's).
    static func interpreter() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let chosen = environment["OTLP_PYTHON"], !chosen.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: chosen) else {
                throw Failure(
                    description: "OTLP_PYTHON=\(chosen) is not an executable python: run `scripts/phoenix.sh install`, "
                        + "and point OTLP_PYTHON at the python it prints")
            }
            return chosen
        }
        var candidates = ["/var/cache/textgateway/phoenix/venv/bin/python"]
        if let home = environment["HOME"] { candidates.append(home + "/.cache/textgateway/phoenix/venv/bin/python") }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Failure(
                description: "no python with opentelemetry-proto (looked at OTLP_PYTHON, \(candidates)): "
                    + "run `scripts/phoenix.sh install`, or set OTLP_PYTHON")
        }
        return found
    }

    /// Runs the script in `mode` on `source`, in a directory of its own, and answers its JSON.
    private static func run(_ mode: String, input: [UInt8]?, argument: String = "") throws -> Data {
        let python = try interpreter()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tracing-tests-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("body.bin")
        let target = directory.appendingPathComponent("result.json")
        if let input { try Data(input).write(to: source) }
        let (status, output) = try Subprocess.run(
            python, ["-c", script, mode, input == nil ? argument : source.path, target.path])
        guard status == 0 else {
            throw Failure(description: "the python decoder failed (status \(status)): \(output)")
        }
        return try Data(contentsOf: target)
    }

    /// What the package reads from `body`, an `ExportTraceServiceRequest`.
    static func decodeRequest(_ body: [UInt8]) throws -> Decoded {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(Decoded.self, from: run("request", input: body))
    }

    /// An `ExportTraceServiceResponse` the package writes, `rejected_spans` and an error message set.
    static func partialSuccessResponse(rejected: Int64) throws -> [UInt8] {
        struct Answer: Decodable { let hex: String }
        let hex = try JSONDecoder().decode(Answer.self, from: run("response", input: nil, argument: "\(rejected)"))
            .hex
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(Hex.value(digits[$0..<$0 + 2]) ?? 0) }
    }

    // MARK: The JSON of MessageToDict(preserving_proto_field_name=True, use_integers_for_enums=True)

    struct Decoded: Decodable {
        let request: Request
        /// Each span's fields present, sorted: none beyond those the test expects.
        let spanKeys: [[String]]
        /// Our bytes are what the package itself writes for the message (no unknown field, none
        /// out of order, no default written).
        let canonical: Bool
    }

    struct Request: Decodable {
        let resourceSpans: [ResourceSpans]

        /// Every span, in order.
        var spans: [Span] { resourceSpans.flatMap { $0.scopeSpans ?? [] }.flatMap { $0.spans ?? [] } }
    }

    struct ResourceSpans: Decodable {
        let resource: Resource?
        let scopeSpans: [ScopeSpans]?
    }

    struct Resource: Decodable {
        let attributes: [KeyValue]?
    }

    struct ScopeSpans: Decodable {
        let scope: Scope?
        let spans: [Span]?
    }

    struct Scope: Decodable {
        let name: String?
        let version: String?
    }

    struct Span: Decodable {
        let traceId: String
        let spanId: String
        let traceState: String?
        let parentSpanId: String?
        let flags: UInt32?
        let name: String?
        let kind: Int?
        /// 64-bit integers are strings in proto3 JSON.
        let startTimeUnixNano: String?
        let endTimeUnixNano: String?
        let attributes: [KeyValue]?
        let events: [Event]?
        let links: [Link]?
        let status: Status?
    }

    struct Event: Decodable {
        let timeUnixNano: String?
        let name: String?
        let attributes: [KeyValue]?
    }

    struct Link: Decodable {
        let traceId: String
        let spanId: String
        let traceState: String?
        let attributes: [KeyValue]?
        let flags: UInt32?
    }

    struct Status: Decodable {
        let message: String?
        let code: Int?
    }

    struct KeyValue: Decodable {
        let key: String
        let value: AnyValue
    }

    struct AnyValue: Decodable {
        let stringValue: String?
        let boolValue: Bool?
        let intValue: String?
        let doubleValue: Double?
        let arrayValue: ArrayValue?
    }

    struct ArrayValue: Decodable {
        let values: [AnyValue]?
    }
}

extension OTLPPython.KeyValue {
    /// The attribute as the tracing library writes it; nil when the value is none of its kinds,
    /// or more than one.
    var attribute: SpanAttribute? {
        let set = [
            value.stringValue != nil, value.boolValue != nil, value.intValue != nil, value.doubleValue != nil,
            value.arrayValue != nil,
        ]
        guard set.filter({ $0 }).count == 1 else { return nil }
        if let text = value.stringValue { return SpanAttribute(key, .string(text)) }
        if let flag = value.boolValue { return SpanAttribute(key, .bool(flag)) }
        if let number = value.intValue { return Int64(number).map { SpanAttribute(key, .int($0)) } }
        if let number = value.doubleValue { return SpanAttribute(key, .double(number)) }
        let texts = (value.arrayValue?.values ?? []).map(\.stringValue)
        guard texts.allSatisfy({ $0 != nil }) else { return nil }
        return SpanAttribute(key, .strings(texts.compactMap { $0 }))
    }
}

/// The attributes as the tracing library writes them (a value of no kind shows as nil).
func attributes(_ list: [OTLPPython.KeyValue]?) -> [SpanAttribute?] {
    (list ?? []).map(\.attribute)
}

/// The spans of an `ExportTraceServiceRequest`, read with the library's own protobuf reader:
/// enough for the exporter's tests to count a batch and name its spans without a subprocess
/// for each body.
func otlpSpanNames(_ body: [UInt8]) -> [String]? {
    func fields(_ bytes: [UInt8], number: Int) -> [[UInt8]]? {
        var reader = ProtobufReader(bytes)
        var found: [[UInt8]] = []
        while let (field, wire) = reader.nextTag() {
            if field == number, wire == 2 {
                guard let inner = reader.lengthDelimited() else { return nil }
                found.append(inner)
            } else if !reader.skip(wire) {
                return nil
            }
        }
        return found
    }
    // ExportTraceServiceRequest.resource_spans = 1 → ResourceSpans.scope_spans = 2 → ScopeSpans.spans = 2
    // → Span.name = 5.
    guard let resources = fields(body, number: 1) else { return nil }
    var names: [String] = []
    for resource in resources {
        guard let scopes = fields(resource, number: 2) else { return nil }
        for scope in scopes {
            guard let spans = fields(scope, number: 2) else { return nil }
            for span in spans {
                guard let name = fields(span, number: 5)?.first else { return nil }
                names.append(String(decoding: name, as: UTF8.self))
            }
        }
    }
    return names
}
