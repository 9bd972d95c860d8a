import Testing

@testable import HTTP1

@Suite("ASCII character classes")
struct ASCIITests {
    @Test("tchar bit set matches RFC 9110 §5.6.2 for all 256 bytes")
    func tokenChars() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(ASCII.isTokenChar(byte) == tchar.contains(byte), "byte \(byte)")
        }
    }

    @Test("host bit set is unreserved, sub-delims, ':', '%', '[' and ']'")
    func hostChars() {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:%[]".utf8)
        for byte in UInt8.min...UInt8.max {
            #expect(ASCII.isHostChar(byte) == allowed.contains(byte), "byte \(byte)")
        }
    }

    @Test("hex digits, lower-casing and field-value bytes")
    func otherClasses() {
        #expect(ASCII.hexValue(UInt8(ascii: "0")) == 0)
        #expect(ASCII.hexValue(UInt8(ascii: "f")) == 15)
        #expect(ASCII.hexValue(UInt8(ascii: "F")) == 15)
        #expect(ASCII.hexValue(UInt8(ascii: "g")) == nil)
        #expect(ASCII.lower(UInt8(ascii: "Z")) == UInt8(ascii: "z"))
        #expect(ASCII.lower(UInt8(ascii: "[")) == UInt8(ascii: "["))
        #expect(ASCII.isFieldValueChar(0x09) && ASCII.isFieldValueChar(0x20) && ASCII.isFieldValueChar(0xFF))
        #expect(!ASCII.isFieldValueChar(0x00) && !ASCII.isFieldValueChar(0x7F) && !ASCII.isFieldValueChar(0x0A))
    }
}
