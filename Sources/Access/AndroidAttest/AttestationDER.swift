/// A bounded reader of the DER (and the little BER) inside an Android attestation extension:
/// one tag-length-value at a time over a byte array, never recursing by itself, so the work
/// and the memory of a read are bounded by the input's length whatever it holds.
///
/// It takes what real TEEs emit beside DER: long-form lengths that are not minimal and
/// integers with a redundant leading byte. It refuses what would make a structure ambiguous:
/// an indefinite length, a length past its container, a tag number of more than three bytes,
/// and a long-form length of more than four bytes.
package struct AttestationDER {
    /// The class of a tag: the two high bits of its first byte.
    enum TagClass: UInt8 {
        case universal = 0
        case application = 1
        case contextSpecific = 2
        case `private` = 3
    }

    /// One element: its tag and where its content lies in the reader's bytes.
    struct Element {
        var tagClass: TagClass
        var constructed: Bool
        var number: UInt32
        var content: Range<Int>

        func isUniversal(_ number: UInt32, constructed: Bool = false) -> Bool {
            tagClass == .universal && self.number == number && self.constructed == constructed
        }
    }

    /// Universal tag numbers met here.
    enum Universal {
        static let boolean: UInt32 = 1
        static let integer: UInt32 = 2
        static let octetString: UInt32 = 4
        static let enumerated: UInt32 = 10
        static let sequence: UInt32 = 16
        static let set: UInt32 = 17
    }

    package struct Malformed: Error, Equatable { package init() {} }

    let bytes: [UInt8]
    private var offset: Int
    private let end: Int

    /// A reader of `bytes[range]` (all of `bytes` by default).
    init(_ bytes: [UInt8], range: Range<Int>? = nil) {
        self.bytes = bytes
        let range = range ?? 0..<bytes.count
        offset = range.lowerBound
        end = range.upperBound
    }

    /// A reader of an element's content.
    func reader(of element: Element) -> AttestationDER { AttestationDER(bytes, range: element.content) }

    var isAtEnd: Bool { offset == end }

    /// The next element, or nil at the end.
    mutating func next() throws(Malformed) -> Element? {
        guard offset < end else { return nil }
        var cursor = offset
        let first = bytes[cursor]
        cursor += 1
        var number = UInt32(first & 0x1F)
        if number == 0x1F {
            // High tag number: base 128, at most three bytes (up to 2^21 - 1), no leading 0x80.
            number = 0
            var count = 0
            while true {
                guard cursor < end, count < 3 else { throw Malformed() }
                let byte = bytes[cursor]
                if count == 0, byte == 0x80 { throw Malformed() }
                number = number << 7 | UInt32(byte & 0x7F)
                cursor += 1
                count += 1
                if byte & 0x80 == 0 { break }
            }
        }
        guard cursor < end else { throw Malformed() }
        var length = Int(bytes[cursor])
        cursor += 1
        if length & 0x80 != 0 {
            let count = length & 0x7F
            // 0x80 is BER's indefinite length: never in a certificate.
            guard count >= 1, count <= 4, end - cursor >= count else { throw Malformed() }
            length = 0
            for _ in 0..<count {
                length = length << 8 | Int(bytes[cursor])
                cursor += 1
            }
        }
        guard length <= end - cursor else { throw Malformed() }
        offset = cursor + length
        return Element(
            tagClass: TagClass(rawValue: first >> 6)!, constructed: first & 0x20 != 0, number: number,
            content: cursor..<cursor + length)
    }

    /// The next element, which must exist.
    mutating func required() throws(Malformed) -> Element {
        guard let element = try next() else { throw Malformed() }
        return element
    }

    /// The next element when it is the universal `number` of that form.
    mutating func required(universal number: UInt32, constructed: Bool = false) throws(Malformed) -> Element {
        let element = try required()
        guard element.isUniversal(number, constructed: constructed) else { throw Malformed() }
        return element
    }

    /// Throws unless every byte was read.
    func finish() throws(Malformed) {
        guard isAtEnd else { throw Malformed() }
    }

    /// The content of an element as bytes.
    func content(_ element: Element) -> [UInt8] { Array(bytes[element.content]) }

    /// An INTEGER's or ENUMERATED's content as a two's-complement number that fits 64 bits
    /// (a redundant leading 0x00 or 0xFF is taken).
    func integer(_ element: Element) throws(Malformed) -> Int64 {
        let content = bytes[element.content]
        guard !content.isEmpty, content.count <= 9 else { throw Malformed() }
        var value: Int64 = content.first! & 0x80 != 0 ? -1 : 0
        if content.count == 9 {
            // Nine bytes fit only when the first is a sign extension of the second.
            let sign: UInt8 = content[content.startIndex + 1] & 0x80 != 0 ? 0xFF : 0x00
            guard content.first! == sign else { throw Malformed() }
        }
        for byte in content { value = value << 8 | Int64(byte) }
        return value
    }

    /// A BOOLEAN's content: one byte, any non-zero one true (DER wants 0xFF; TEEs write 0x01).
    func boolean(_ element: Element) throws(Malformed) -> Bool {
        guard element.content.count == 1 else { throw Malformed() }
        return bytes[element.content.lowerBound] != 0
    }
}
