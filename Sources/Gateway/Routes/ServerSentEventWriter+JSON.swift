import ChatAPI
import JSON

extension ServerSentEventWriter {
    /// One event named `name` whose data is the JSON object `body` writes: the shape of every
    /// event of the gateway's own streams (`/api/process`, a job's events).
    static func jsonEvent(_ name: String, _ body: (inout JSONWriter) -> Void) -> [UInt8] {
        var writer = JSONWriter()
        writer.object(body)
        return event(name: name, data: String(decoding: writer.bytes, as: UTF8.self))
    }
}
