import Access
import Testing

@testable import Gateway

@Suite("Request tracer: caller kinds")
struct RequestTracerTests {
    @Test("a caller kind's index is its place among all kinds, the order its answered blocks are made in")
    func callerKindIndex() {
        for (offset, kind) in RequestTracer.CallerKind.allCases.enumerated() {
            #expect(kind.index == offset)
        }
    }

    @Test("the kind of a guest, a device session, a sign-in JWT's subject and a gateway token")
    func callerKinds() {
        typealias Kind = RequestTracer.CallerKind
        #expect(Kind(nil) == .guest)
        #expect(Kind(Caller(userID: DeviceSessions.userID(deviceID: "d1"), plan: "default")) == .device)
        #expect(Kind(Caller(userID: Caller.userID(jwtSubject: "alice"), plan: "default")) == .jwt)
        #expect(Kind(Caller(userID: "alice", plan: "default")) == .token)
    }
}
