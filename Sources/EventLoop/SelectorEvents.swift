#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// Readiness interest for a registered file descriptor.
public struct SelectorInterest: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Wake when bytes can be read (or the peer closed).
    public static let read = SelectorInterest(rawValue: CEventLoop_EPOLLIN)
    /// Wake when bytes can be written.
    public static let write = SelectorInterest(rawValue: CEventLoop_EPOLLOUT)
    /// Wake when the peer shut down its sending side, even while not reading.
    public static let readHangup = SelectorInterest(rawValue: CEventLoop_EPOLLRDHUP)
    /// Wake only one of the loops watching a shared descriptor (a listener). Registration only:
    /// an exclusive registration cannot be modified, only removed.
    public static let exclusive = SelectorInterest(rawValue: CEventLoop_EPOLLEXCLUSIVE)
}

/// What the selector reported for a file descriptor.
public struct SelectorEvents: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let readable = SelectorEvents(rawValue: CEventLoop_EPOLLIN)
    public static let writable = SelectorEvents(rawValue: CEventLoop_EPOLLOUT)
    public static let readHangup = SelectorEvents(rawValue: CEventLoop_EPOLLRDHUP)
    public static let hangup = SelectorEvents(rawValue: CEventLoop_EPOLLHUP)
    public static let error = SelectorEvents(rawValue: CEventLoop_EPOLLERR)
}

/// An object that owns a registered file descriptor and reacts to its readiness.
/// Called only on the loop the descriptor is registered with.
public protocol Selectable: AnyObject {
    func selectorEvents(_ events: SelectorEvents)
}
