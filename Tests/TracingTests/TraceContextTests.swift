import Testing

@testable import Tracing

@Suite("W3C trace context")
struct TraceContextTests {
    static let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let span = "00f067aa0ba902b7"

    // MARK: traceparent

    @Test("a version-00 traceparent gives its ids and sampled flag, and formats back the same")
    func parsesAndFormats() throws {
        let sampled = try #require(TraceContext(traceparent: "00-\(Self.trace)-\(Self.span)-01"))
        #expect(sampled.traceID == TraceID(high: 0x4bf9_2f35_77b3_4da6, low: 0xa3ce_929d_0e0e_4736))
        #expect(sampled.spanID == SpanID(0x00f0_67aa_0ba9_02b7))
        #expect(sampled.sampled)
        #expect(sampled.traceState == "")
        #expect(sampled.traceparent == "00-\(Self.trace)-\(Self.span)-01")

        let unsampled = try #require(TraceContext(traceparent: "00-\(Self.trace)-\(Self.span)-00"))
        #expect(!unsampled.sampled)
        #expect(unsampled.traceparent == "00-\(Self.trace)-\(Self.span)-00")

        // Only the sampled bit is read; other flags (random, unknown) are not passed on.
        let flagged = try #require(TraceContext(traceparent: "00-\(Self.trace)-\(Self.span)-03"))
        #expect(flagged.sampled)
        #expect(flagged.traceparent.hasSuffix("-01"))
        let unsampledFlagged = try #require(TraceContext(traceparent: "00-\(Self.trace)-\(Self.span)-fe"))
        #expect(!unsampledFlagged.sampled)
    }

    @Test("ids format as lower-case hex with their leading zeros, and OTLP's bytes are big-endian")
    func idsFormat() throws {
        let context = TraceContext(traceID: TraceID(high: 1, low: 0xab), spanID: SpanID(0x0c), sampled: true)
        #expect(context.traceparent == "00-000000000000000100000000000000ab-000000000000000c-01")
        #expect(TraceID(high: 1, low: 0xab).bytes == [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xab])
        #expect(SpanID(0x0102_0304_0506_0708).bytes == [1, 2, 3, 4, 5, 6, 7, 8])
        let random = TraceID.random()
        #expect(random.isValid)
        #expect(TraceID(hex: Array(random.hex.utf8)) == random)
        let randomSpan = SpanID.random()
        #expect(SpanID(hex: Array(randomSpan.hex.utf8)) == randomSpan)
        #expect(TraceID(hex: Array(String(repeating: "0", count: 32).utf8)) == nil)
        #expect(TraceID(hex: Array(String(repeating: "a", count: 31).utf8)) == nil)
        #expect(SpanID(hex: Array(String(repeating: "0", count: 16).utf8)) == nil)
        #expect(SpanID(hex: Array(String(repeating: "a", count: 17).utf8)) == nil)
    }

    @Test(
        "an invalid traceparent is none",
        arguments: [
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", // upper-case hex
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01", // upper-case span id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A", // upper-case flags
            "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // upper-case version
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // all-zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // all-zero span id
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version ff
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", // version 00 is exactly 55
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-010",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", // wrong separators
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7.01",
            "00 4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01", // a separator moved
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1", // short
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736",
            "",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // not hex
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01something", // later version, no dash
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.something",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01-something", // zero span id still refused
        ])
    func invalidTraceparent(value: String) {
        #expect(TraceContext(traceparent: value) == nil)
        #expect(TraceContext(traceparent: value, tracestate: "rojo=1") == nil)
    }

    @Test("a later version is read by its first four fields when what follows starts with a dash")
    func laterVersion() throws {
        let extended = try #require(
            TraceContext(traceparent: "cc-\(Self.trace)-\(Self.span)-01-something", tracestate: "rojo=1"))
        #expect(extended.traceID.hex == Self.trace)
        #expect(extended.spanID.hex == Self.span)
        #expect(extended.sampled)
        #expect(extended.traceState == "rojo=1")
        // What this process sends on is version 00.
        #expect(extended.traceparent == "00-\(Self.trace)-\(Self.span)-01")
        let bare = try #require(TraceContext(traceparent: "01-\(Self.trace)-\(Self.span)-00"))
        #expect(!bare.sampled)
    }

    // MARK: tracestate

    /// The context's `traceState` for `tracestate` on a valid traceparent.
    static func kept(_ tracestate: String?) -> String? {
        TraceContext(traceparent: "00-\(trace)-\(span)-01", tracestate: tracestate)?.traceState
    }

    @Test("a valid tracestate is kept as it came, spaces and tabs around members tolerated")
    func validTraceState() {
        #expect(Self.kept("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE") == "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        #expect(Self.kept("rojo=00f067aa0ba902b7 , congo=t61rcWkgMzE") == "rojo=00f067aa0ba902b7 , congo=t61rcWkgMzE")
        #expect(Self.kept(" rojo=1,\tcongo=2\t") == " rojo=1,\tcongo=2\t")
        #expect(Self.kept("rojo=1,,congo=2") == "rojo=1,,congo=2", "empty members are allowed")
        #expect(Self.kept("tenant@vendor=x") == "tenant@vendor=x", "a multi-tenant key")
        #expect(Self.kept("a_b-c*d/e=v a l!u~e") == "a_b-c*d/e=v a l!u~e", "key symbols; spaces inside a value")
        // The W3C test harness's longest keys and every allowed character.
        let tenantKey = String(repeating: "t", count: 241) + "@" + String(repeating: "v", count: 14)
        #expect(Self.kept("foo=1," + tenantKey + "=1") == "foo=1," + tenantKey + "=1")
        #expect(Self.kept(String(repeating: "z", count: 256) + "=1") == String(repeating: "z", count: 256) + "=1")
        let allKey = "abcdefghijklmnopqrstuvwxyz0123456789_-*/"
        let allValue = String(decoding: Array(0x20...0x2B) + Array(0x2D...0x3C) + Array(0x3E...0x7E), as: UTF8.self)
        #expect(Self.kept(allKey + "=" + allValue) == allKey + "=" + allValue)
        #expect(Self.kept(allKey + "@a-z0-9_-*/=" + allValue) == allKey + "@a-z0-9_-*/=" + allValue)
        #expect(Self.kept(nil) == "")
        #expect(Self.kept("") == "")
    }

    @Test("tracestate at its limits: 512 characters and 32 members are kept, one more drops it all")
    func traceStateLimits() {
        // "a=" + 254 x (256) + "," + "b=" + 253 x (255): 512 characters in all.
        let long = "a=" + String(repeating: "x", count: 254) + ",b=" + String(repeating: "x", count: 253)
        #expect(long.utf8.count == 512)
        #expect(Self.kept(long) == long)
        #expect(Self.kept(long + "x") == "", "513 characters")

        let members = (0..<32).map { "k\($0)=v" }
        #expect(Self.kept(members.joined(separator: ",")) == members.joined(separator: ","))
        #expect(Self.kept((members + ["k32=v"]).joined(separator: ",")) == "", "33 members")
    }

    @Test(
        "an invalid tracestate is dropped whole, the traceparent still read",
        arguments: [
            "Rojo=00f067aa0ba902b7", // upper case in a key
            "rojo=00f067aa0ba902b7,Congo=t61rcWkgMzE",
            "rojo=a=b", // "=" in a value
            "rojo=1,congo=a=b",
            "rojo", // no "="
            "=value", // no key
            "rojo=", // no value
            "rojo=1,congo",
            "rojo=caf\u{E9}", // outside printable ASCII
            "rojo=a\u{7F}",
            "ro jo=1", // a space in a key
            "rojo=" + String(repeating: "x", count: 257), // a value over 256
            String(repeating: "k", count: 257) + "=1", // a key over 256
            " , ,", // no member at all
        ])
    func invalidTraceState(value: String) throws {
        let context = try #require(TraceContext(traceparent: "00-\(Self.trace)-\(Self.span)-01", tracestate: value))
        #expect(context.traceState == "")
        #expect(context.traceID.hex == Self.trace)
    }

    @Test(
        "tracestates the W3C test harness expects dropped: duplicated keys, a malformed multi-tenant key",
        arguments: [
            "foo=1,foo=1", "foo=1,foo=2", // test_tracestate_duplicated_keys
            "foo@=1,bar=2", "@foo=1,bar=2", "foo@@bar=1,bar=2", "foo@bar@baz=1,bar=2", // ..._illegal_vendor_format
            String(repeating: "t", count: 242) + "@v=1", // a tenant id over 241
            "t@" + String(repeating: "v", count: 15) + "=1", // a system id over 14
        ])
    func harnessDropsTraceState(value: String) throws {
        let context = try #require(TraceContext(traceparent: "00-\(Self.trace)-\(Self.span)-01", tracestate: value))
        #expect(context.traceState == "")
    }
}
