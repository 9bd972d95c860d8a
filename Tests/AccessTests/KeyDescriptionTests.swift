import AccessTestSupport
import Testing

@testable import Access

/// The hand-written reader of the Key Attestation extension: what real TEEs emit is taken,
/// structural damage is refused.
@Suite("Key Attestation extension reader")
struct KeyDescriptionTests {
    typealias DER = SyntheticAndroidAttestation.DER

    static func description(
        software: [UInt8] = [], hardware: [UInt8] = [], challenge: [UInt8] = [1, 2, 3], levels: (Int64, Int64) = (1, 1)
    ) -> [UInt8] {
        DER.sequence(
            DER.integer(3) + DER.enumerated(levels.0) + DER.integer(4) + DER.enumerated(levels.1)
                + DER.octetString(challenge) + DER.octetString([]) + DER.sequence(software) + DER.sequence(hardware))
    }

    static func rootOfTrust(locked: [UInt8] = [0xFF], state: Int64 = 0, hash: Bool = true) -> [UInt8] {
        DER.explicit(
            704,
            DER.sequence(
                DER.octetString([0xAA]) + DER.tlv([0x01], locked) + DER.enumerated(state)
                    + (hash ? DER.octetString([0xBB]) : [])))
    }

    @Test("reads the fields the gateway decides on")
    func reads() throws {
        let applicationID = DER.sequence(
            DER.set(
                DER.sequence(DER.octetString(Array("com.b".utf8)) + DER.integer(7))
                    + DER.sequence(DER.octetString(Array("com.a".utf8)) + DER.integer(-1)))
                + DER.set(DER.octetString([2, 2]) + DER.octetString([1])))
        let parsed = try KeyDescription.parse(
            Self.description(
                software: DER.explicit(709, DER.octetString(applicationID)),
                hardware: DER.explicit(2, DER.integer(3)) + DER.explicit(10, DER.integer(1))
                    + DER.explicit(702, DER.integer(0)) + Self.rootOfTrust() + DER.explicit(706, DER.integer(202_401)),
                levels: (2, 1)))
        #expect(parsed.attestationVersion == 3 && parsed.keyMintVersion == 4)
        #expect(parsed.attestationSecurityLevel == .strongBox && parsed.keyMintSecurityLevel == .trustedEnvironment)
        #expect(parsed.challenge == [1, 2, 3])
        #expect(parsed.hardwareEnforced.algorithm == 3 && parsed.hardwareEnforced.ecCurve == 1)
        #expect(parsed.hardwareEnforced.origin == 0 && parsed.hardwareEnforced.osPatchLevel == 202_401)
        #expect(parsed.hardwareEnforced.rootOfTrust == .init(deviceLocked: true, verifiedBootState: .verified))
        // SET OF out of DER order, as some phones write them: kept as written.
        let application = try #require(parsed.softwareEnforced.applicationID)
        #expect(application.packages.map(\.name) == ["com.b", "com.a"])
        #expect(application.packages.map(\.version) == [7, -1])
        #expect(application.signatureDigests == [[2, 2], [1]])
    }

    @Test("takes BOOLEAN 0x01, tags out of order, unknown tags and a three-element root of trust")
    func tolerant() throws {
        let parsed = try KeyDescription.parse(
            Self.description(
                hardware: DER.explicit(706, DER.integer(202_401)) + DER.explicit(724, DER.octetString([1]))
                    + DER.explicit(2, DER.integer(3)) + Self.rootOfTrust(locked: [0x01], state: 2, hash: false)
                    + DER.explicit(9999, DER.sequence(DER.integer(1)))))
        #expect(parsed.hardwareEnforced.rootOfTrust == .init(deviceLocked: true, verifiedBootState: .unverified))
        #expect(parsed.hardwareEnforced.algorithm == 3)
        let unlocked = try KeyDescription.parse(Self.description(hardware: Self.rootOfTrust(locked: [0x00])))
        #expect(unlocked.hardwareEnforced.rootOfTrust?.deviceLocked == false)
    }

    @Test(
        "refuses structural damage",
        arguments: [
            // Bytes after the structure.
            description() + [0],
            // A repeated tag.
            description(hardware: DER.explicit(2, DER.integer(3)) + DER.explicit(2, DER.integer(3))),
            // Two elements in one EXPLICIT tag.
            description(hardware: DER.explicit(2, DER.integer(3) + DER.integer(3))),
            // A wrong universal type where an INTEGER is read.
            description(hardware: DER.explicit(706, DER.octetString([1]))),
            // A universal element where a context tag belongs.
            description(hardware: DER.integer(1)),
            // A primitive context tag.
            description(hardware: DER.tlv([0x82], [0x01])),
            // An unknown security level, a boot state past Failed, a BOOLEAN of two bytes.
            description(levels: (3, 1)),
            description(hardware: rootOfTrust(state: 4)),
            description(hardware: rootOfTrust(locked: [0xFF, 0xFF])),
            // Seven fields, nine fields.
            DER.sequence(
                DER.integer(3) + DER.enumerated(1) + DER.integer(4) + DER.enumerated(1) + DER.octetString([])
                    + DER.octetString([]) + DER.sequence([])),
            DER.sequence(Array(description().dropFirst(2)) + DER.integer(1)),
            // An indefinite length; a length past its container; a five-byte length; a four-byte tag number.
            [0x30, 0x80, 0x00, 0x00],
            [0x30, 0x05, 0x02, 0x01],
            [0x30, 0x85, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00],
            description(hardware: [0xBF, 0x81, 0x80, 0x80, 0x00, 0x02, 0x02, 0x01, 0x00]),
            // An INTEGER of ten bytes; an empty INTEGER.
            description(hardware: DER.explicit(706, DER.tlv([0x02], [UInt8](repeating: 1, count: 10)))),
            description(hardware: DER.explicit(706, DER.tlv([0x02], []))),
            // An application id that is not a SEQUENCE of two SETs.
            description(software: DER.explicit(709, DER.octetString(DER.sequence(DER.set([]))))),
        ])
    func refuses(der: [UInt8]) {
        #expect(throws: AttestationDER.Malformed.self) { try KeyDescription.parse(der) }
    }

    @Test("integers are read as two's complement up to 64 bits")
    func integers() throws {
        for value: Int64 in [0, 1, 127, 128, 255, 256, -1, -128, -129, .max, .min, 202_510, 20_250_305] {
            var reader = AttestationDER(DER.integer(value))
            let element = try reader.required(universal: AttestationDER.Universal.integer)
            #expect(try reader.integer(element) == value)
        }
        // A redundant leading zero (BER) still reads.
        var reader = AttestationDER([0x02, 0x03, 0x00, 0x00, 0x7F])
        let element = try reader.required()
        #expect(try reader.integer(element) == 127)
    }
}
