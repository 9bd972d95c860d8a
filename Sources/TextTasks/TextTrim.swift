/// Takes whitespace `Character`s (grapheme clusters) off both ends of a text, as
/// `firstIndex(where:)` and `lastIndex(where:)` over `Character.isWhitespace` would, scalar
/// by scalar from its UTF-8 bytes: the work is a few steps a byte looked at, where the
/// standard library's walk costs tens of nanoseconds a scalar and a single `Character` may
/// hold a request body's worth of combining marks.
///
/// A `Character` is whitespace when its first scalar is. Whitespace scalars (Unicode's
/// White_Space) have the grapheme break classes Control and Other (UAX #29), so a whitespace
/// `Character` is:
/// - a control alone, or CR LF (GB3, GB4, GB5);
/// - any other whitespace scalar followed by the scalars that join whatever precedes them
///   but a control: Extend, ZWJ and SpacingMark (GB9, GB9a).
/// No other rule reaches into such a cluster from after it (the Hangul, emoji, conjunct and
/// regional indicator rules need a jamo, a pictograph, a consonant or an indicator first),
/// and from before it only a Prepend does (GB9b), taking the whitespace into a cluster that
/// is not whitespace.
package enum TextTrim {
    /// `text` without whitespace `Character`s at either end.
    package static func trimmed(_ text: String) -> String {
        if startsAndEndsVisibly(text) { return text } // the usual case, decided from two bytes
        let bytes = text.utf8.span
        let start = firstNonWhitespace(bytes)
        let end = endOfLastNonWhitespace(bytes, after: start)
        if start == 0, end == text.utf8.count { return text }
        let utf8 = text.utf8
        return String(
            Substring(utf8[utf8.index(utf8.startIndex, offsetBy: start)..<utf8.index(utf8.startIndex, offsetBy: end)]))
    }

    /// True when neither end of `text` can be a whitespace `Character`, judged from its
    /// bytes; false means "look closer", not "has whitespace".
    ///
    /// The first `Character` starts with the first scalar, so a visible ASCII byte (0x21–
    /// 0x7E) or a lead byte of U+0100–U+07FF (0xC4–0xDF: Latin to Arabic and Thaana, no
    /// whitespace there) settles the start. The last `Character` ends with the last scalar;
    /// when that is visible ASCII, nothing before it can join its cluster but a Prepend
    /// scalar, and no Prepend is whitespace.
    static func startsAndEndsVisibly(_ text: String) -> Bool {
        let bytes = text.utf8.span
        guard !bytes.isEmpty else { return false }
        let first = bytes[0]
        let last = bytes[bytes.count - 1]
        return (0x21...0x7E ~= first || 0xC4...0xDF ~= first) && 0x21...0x7E ~= last
    }

    /// Where the first `Character` that is not whitespace starts; `bytes.count` when there is none.
    private static func firstNonWhitespace(_ bytes: Span<UInt8>) -> Int {
        var index = 0
        while index < bytes.count {
            let (value, length) = scalar(in: bytes, at: index)
            guard isWhitespace(value) else { break }
            index += length // CR LF goes as two controls: the same bytes
            guard !isControl(value) else { continue }
            while index < bytes.count {
                let (joiner, length) = scalar(in: bytes, at: index)
                guard joinsPreceding(joiner) else { break }
                index += length
            }
        }
        return index
    }

    /// Where the last `Character` that is not whitespace ends, looking no further back than
    /// `start` (where one starts, or the end); `start` when there is none after it.
    private static func endOfLastNonWhitespace(_ bytes: Span<UInt8>, after start: Int) -> Int {
        var end = bytes.count
        while end > start {
            // The last cluster's first scalar: back over the scalars that join what precedes
            // them. Only those reach `start`: the cluster there is not whitespace.
            var first = end
            var joined = false
            while first > start {
                let (value, scalarStart) = scalar(in: bytes, before: first)
                guard joinsPreceding(value) else { break }
                first = scalarStart
                joined = true
            }
            guard first > start else { break }
            let (value, scalarStart) = scalar(in: bytes, before: first)
            // Marks after a control start a cluster of their own, which is not whitespace.
            guard isWhitespace(value), !(joined && isControl(value)) else { break }
            if scalarStart > start {
                // A Prepend takes the whitespace into its own cluster; whitespace (CR before
                // LF included) and joiners never do, so the standard library is asked only at
                // the edge of the run.
                let previous = scalar(in: bytes, before: scalarStart).0
                if !isWhitespace(previous), !joinsPreceding(previous), shareCluster(previous, value) { break }
            }
            end = scalarStart
        }
        return end
    }

    /// Unicode's White_Space, the scalars `Character.isWhitespace` tests the first of.
    static func isWhitespace(_ value: UInt32) -> Bool {
        switch value {
        case 0x09...0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000: return true
        default: return false
        }
    }

    /// The whitespace scalars of grapheme break class Control (the rest are Other).
    private static func isControl(_ value: UInt32) -> Bool {
        value <= 0x0D || value == 0x85 || value == 0x2028 || value == 0x2029
    }

    /// Whether a scalar joins the cluster of any scalar before it but a control: grapheme
    /// break classes Extend (Grapheme_Extend, and the emoji modifiers), ZWJ and SpacingMark
    /// (Spacing_Mark but for UAX #29's exceptions, and two vowel signs that are letters).
    /// A table answers for the Basic Multilingual Plane, the scalar's properties beyond it.
    static func joinsPreceding(_ value: UInt32) -> Bool {
        if value < 0x300 { return false } // Latin-1 and the spacing modifiers: no joiner below the combining marks
        if value < 0x10000 { return basicPlaneJoiners[Int(value >> 6)] & (1 << UInt64(value & 63)) != 0 }
        return joinsByProperties(value)
    }

    /// ``joinsPreceding(_:)`` for U+0000–U+FFFF, a bit a scalar (8 KiB), worked out on first use.
    private static let basicPlaneJoiners: [UInt64] = {
        var words = [UInt64](repeating: 0, count: 0x10000 / 64)
        for value in UInt32(0x300)..<0x10000 where joinsByProperties(value) {
            words[Int(value >> 6)] |= 1 << UInt64(value & 63)
        }
        return words
    }()

    /// ``joinsPreceding(_:)`` for a scalar from U+0300 on, from its properties.
    private static func joinsByProperties(_ value: UInt32) -> Bool {
        switch value {
        case 0x200D, 0x0E33, 0x0EB3, 0x1F3FB...0x1F3FF: return true // ZWJ, SARA AM, LAO AM, emoji modifiers
        case 0x102B, 0x102C, 0x1038, 0x1062...0x1064, 0x1067...0x106D, 0x1083, 0x1087...0x108C, 0x108F, 0x109A...0x109C,
            0x1A61, 0x1A63, 0x1A64, 0xAA7B, 0xAA7D, 0x11720, 0x11721:
            return false // Spacing_Mark, but not SpacingMark
        default:
            guard let scalar = Unicode.Scalar(value) else { return false }
            let properties = scalar.properties
            return properties.isGraphemeExtend || properties.generalCategory == .spacingMark
        }
    }

    /// Whether two scalars form one `Character`, asked of the standard library.
    private static func shareCluster(_ first: UInt32, _ second: UInt32) -> Bool {
        guard let first = Unicode.Scalar(first), let second = Unicode.Scalar(second) else { return false }
        var pair = String.UnicodeScalarView()
        pair.append(first)
        pair.append(second)
        return String(pair).count == 1
    }

    /// The scalar starting at `index` of valid UTF-8 `bytes`, and its length.
    @inline(__always)
    private static func scalar(in bytes: Span<UInt8>, at index: Int) -> (UInt32, Int) {
        let lead = bytes[index]
        switch lead {
        case ..<0x80: return (UInt32(lead), 1)
        case ..<0xE0: return (UInt32(lead & 0x1F) << 6 | UInt32(bytes[index + 1] & 0x3F), 2)
        case ..<0xF0:
            return (
                UInt32(lead & 0x0F) << 12 | UInt32(bytes[index + 1] & 0x3F) << 6 | UInt32(bytes[index + 2] & 0x3F), 3
            )
        default:
            return (
                UInt32(lead & 0x07) << 18 | UInt32(bytes[index + 1] & 0x3F) << 12 | UInt32(bytes[index + 2] & 0x3F) << 6
                    | UInt32(bytes[index + 3] & 0x3F), 4
            )
        }
    }

    /// The scalar ending at `end` of valid UTF-8 `bytes` (`end` > 0), and where it starts.
    @inline(__always)
    private static func scalar(in bytes: Span<UInt8>, before end: Int) -> (UInt32, Int) {
        var start = end - 1
        while bytes[start] & 0xC0 == 0x80 { start -= 1 }
        return (scalar(in: bytes, at: start).0, start)
    }
}
