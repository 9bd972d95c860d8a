/// Why a `text/event-stream` could not be read within its memory bounds.
///
/// Both errors are final for the stream: the reader that threw keeps throwing the same
/// error until ``ServerSentEventReader/finish()`` resets it.
package enum ServerSentEventError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A line was longer than ``ServerSentEventReader/maximumLineLength``.
    case lineTooLong
    /// The `data:` lines of one event together were longer than
    /// ``ServerSentEventReader/maximumEventLength``.
    case eventTooLarge

    package var description: String {
        switch self {
        case .lineTooLong: "event-stream line too long"
        case .eventTooLarge: "event-stream event too large"
        }
    }
}
