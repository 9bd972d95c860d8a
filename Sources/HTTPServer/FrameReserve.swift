/// Room for a request's async frames, taken from its task's allocator in one piece as the
/// request's task starts, before the handler runs.
///
/// Each await's frame comes from the task's allocator, a stack of slabs of about a kilobyte:
/// a frame that does not fit the slab in use takes the next one if it is large enough, or a
/// new one. The pipeline's frames on the way to the upstream are a few hundred bytes to two
/// kilobytes each, about 16 KB in all, so a request would take a dozen slabs or more, each a
/// `malloc` and a `free`, with part of each left unused at its end. A frame this
/// wide, taken and given back first, leaves one slab behind that the frames after it fill
/// (the allocator keeps a freed slab for the next frame that fits). Taken first thing: the
/// allocator looks only at the slab right after the one in use, so the room must come right
/// after the task's own first slab, or the frames after the handler returns would free it.
enum FrameReserve {
    /// The gateway's deepest stack of frames on a plain `/api/process`, with room to spare
    /// (`make bench-frames`); a deeper one (a stream, `/v1`) continues in slabs of its own
    /// past it.
    static let bytes = 18_432

    /// Takes ``bytes`` of the task's allocator and gives them back at once.
    @inline(never)
    static func reserve() async {
        // Kept across an await, so it lives in this function's frame, not on the thread's stack.
        var room = InlineArray<18_432, UInt8>(repeating: 0)
        await settle()
        hold(&room)
    }

    @inline(never)
    private static func settle() async {}

    @inline(never)
    private static func hold(_ room: inout InlineArray<18_432, UInt8>) {}
}
