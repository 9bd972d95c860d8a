/// One event of a `text/event-stream`, as dispatched by ``ServerSentEventReader``.
package struct ServerSentEvent: Hashable, Sendable {
    /// The event type from the `event:` field; `nil` when none was given (the default type,
    /// `message`). A type given explicitly is kept as written, even `message`.
    package var event: String?
    /// The `data:` lines of the event joined with `"\n"`.
    package var data: String
    /// The stream's last event id: the value of the latest `id:` field, which per the
    /// WHATWG rules carries over to later events until another `id:` replaces it; `nil`
    /// when no id was set or it was reset with an empty `id:`.
    package var id: String?
    /// The reconnection time in milliseconds from a `retry:` field of this event's block.
    package var retry: Int?

    /// Creates an event.
    package init(event: String? = nil, data: String, id: String? = nil, retry: Int? = nil) {
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry
    }
}
