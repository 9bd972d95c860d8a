/// Counts characters (extended grapheme clusters) exactly as `String.count` does, without
/// running the full segmentation algorithm for the text the gateway mostly sees: Latin,
/// Persian and Arabic letters, their combining marks, ZWNJ, punctuation and line breaks.
///
/// Each scalar is sorted into a class whose place in the grapheme break rules (UAX #29) is
/// fixed: `plain` (Grapheme_Cluster_Break=Other), `extend` (Extend, never a conjunct linker),
/// `control`, CR and LF. For those the rules reduce to: CR × LF (GB3), a break around every
/// control (GB4, GB5), Extend joins what precedes it (GB9), a break everywhere else (GB999).
/// A scalar outside these classes (Hangul, emoji joiners, regional indicators, Prepend and
/// SpacingMark characters, other scripts) sends the whole text to `String.count`.
///
/// The count stops once it passes `limit`: a caller that only needs to know whether a text is
/// too long spends no more than that many characters on one, however long the text.
package enum CharacterCount {
    /// The characters of `text` when there are at most `limit`; otherwise `limit + 1`.
    package static func of(_ text: String, limit: Int = .max - 1) -> Int {
        precondition(limit >= 0 && limit < .max, "the limit must leave room for limit + 1")
        // Straight from the UTF-8 bytes (a Swift string's are always valid): decoding through
        // `unicodeScalars` costs several times more per scalar.
        let counted = count(text.utf8.span, classes: smallClasses.span, limit: limit)
        if let counted { return min(counted, limit + 1) }
        var characters = 0
        for _ in text {
            characters += 1
            if characters > limit { break }
        }
        return characters
    }

    /// The count of valid UTF-8 `bytes`, or nil at the first scalar outside the classes
    /// handled here. `classes` is ``smallClasses``. Stops with a count above `limit` once the
    /// count passes it: the cluster that passed it is complete or the last one is still open,
    /// and either way there are more than `limit`.
    private static func count(_ bytes: Span<UInt8>, classes: Span<Class>, limit: Int) -> Int? {
        var count = 0
        var previous = Previous.start
        var index = 0
        while index < bytes.count, count <= limit {
            // The common case first, in a loop of its own: a visible ASCII character, or a
            // two-byte letter (Latin, Arabic, Persian) of the plain class, is a cluster of its
            // own. (The counts cannot overflow: each is at most the number of bytes.)
            let runStart = count
            // Each step of the run adds one character and takes at least one byte, so a run
            // that ends within `limit - count + 1` bytes ends at most one character past the
            // limit, and checks no count on the way.
            let runEnd = limit - count < bytes.count - index ? index + (limit - count) + 1 : bytes.count
            // Unchecked reads: `index + 1 < runEnd <= bytes.count`, and a two-byte value is
            // under U+0800, the size of `classes`.
            while index &+ 1 < runEnd {
                let lead = bytes[unchecked: index]
                if lead &- 0x20 < 0x5F {
                    count &+= 1
                    index &+= 1
                } else if lead & 0xE0 == 0xC0,
                    classes[unchecked: Int(twoByteValue(lead, bytes[unchecked: index &+ 1]))] == .plain
                {
                    count &+= 1
                    index &+= 2
                } else {
                    break
                }
            }
            if count != runStart { previous = .cluster }
            guard index < bytes.count else { break }
            let lead = bytes[index]
            let value: UInt32
            switch lead {
            case ..<0x80:
                value = UInt32(lead)
                index += 1
            case ..<0xE0:
                value = twoByteValue(lead, bytes[index + 1])
                index += 2
            case ..<0xF0:
                value =
                    UInt32(lead & 0x0F) << 12 | UInt32(bytes[index + 1] & 0x3F) << 6 | UInt32(bytes[index + 2] & 0x3F)
                index += 3
            default:
                return nil // beyond U+FFFF: emoji and other planes, never one of our classes
            }
            switch value < 0x800 ? classes[Int(value)] : classify(value) {
            case .plain:
                count += 1
                previous = .cluster
            case .extend:
                if previous != .cluster { // at the start or after a control: a cluster of its own
                    count += 1
                    previous = .cluster
                }
            case .carriageReturn:
                count += 1
                previous = .carriageReturn
            case .lineFeed:
                if previous != .carriageReturn { count += 1 }
                previous = .control
            case .control:
                count += 1
                previous = .control
            case .other:
                return nil
            }
        }
        return count
    }

    /// The scalar of a two-byte UTF-8 sequence.
    @inline(__always)
    private static func twoByteValue(_ lead: UInt8, _ continuation: UInt8) -> UInt32 {
        UInt32(lead & 0x1F) << 6 | UInt32(continuation & 0x3F)
    }

    private enum Previous { case start, cluster, carriageReturn, control }
    private enum Class: UInt8 { case plain, extend, carriageReturn, lineFeed, control, other }

    /// The class of every scalar below U+0800 (one- and two-byte UTF-8: Latin, Arabic, Persian).
    private static let smallClasses: [Class] = (0..<0x800).map { classify(UInt32($0)) }

    @inline(__always)
    private static func classify(_ value: UInt32) -> Class {
        switch value {
        case 0x20...0x7E: return .plain
        case 0x0A: return .lineFeed
        case 0x0D: return .carriageReturn
        case 0x00...0x1F, 0x7F...0x9F, 0xAD: return .control
        case 0xA0...0x2FF: return .plain
        case 0x300...0x36F: return .extend
        case 0x600...0x6FF: return arabic(value)
        case 0x750...0x77F: return .plain // Arabic Supplement letters
        case 0x200C: return .extend // ZERO WIDTH NON-JOINER
        case 0x200B, 0x200E, 0x200F, 0x2028...0x202E: return .control
        case 0x2010...0x2027, 0x2030...0x205E: return .plain // dashes, quotes, punctuation
        default: return .other
        }
    }

    /// The Arabic block (U+0600–U+06FF), Persian letters and digits included.
    @inline(__always)
    private static func arabic(_ value: UInt32) -> Class {
        switch value {
        case 0x600...0x605, 0x6DD: return .other // Prepend
        case 0x61C: return .control // ARABIC LETTER MARK
        case 0x610...0x61A, 0x64B...0x65F, 0x670, 0x6D6...0x6DC, 0x6DF...0x6E4, 0x6E7...0x6E8, 0x6EA...0x6ED:
            return .extend // harakat and Quranic marks
        default: return .plain
        }
    }
}
