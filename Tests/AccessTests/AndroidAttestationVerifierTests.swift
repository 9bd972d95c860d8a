import AccessTestSupport
import Crypto
import TestSupport
import Testing

@testable import Access

/// The verifier alone, over real chains (each as its fixture says, then with one thing
/// changed) and over synthetic chains under a test root (every refusal).
@Suite("Android Key Attestation verifier")
struct AndroidAttestationVerifierTests {
    static func verify(
        _ fixture: AndroidChainFixture, policy: AndroidAttestationPolicy? = nil, challenge: [UInt8]? = nil,
        at time: Int64? = nil, revocations: AndroidRevocationList = .empty
    ) -> Result<VerifiedAndroidKey, AndroidAttestationFailure> {
        let verifier = AndroidAttestationVerifier(policy: policy ?? fixture.referencePolicy)
        return Result { () throws(AndroidAttestationFailure) in
            try verifier.verify(
                chain: fixture.chain, challenge: challenge ?? fixture.challenge, at: time ?? fixture.verifyAt,
                revocations: revocations)
        }
    }

    static func reason(_ result: Result<VerifiedAndroidKey, AndroidAttestationFailure>) -> AndroidAttestationFailure
        .Reason?
    {
        if case .failure(let failure) = result { return failure.reason }
        return nil
    }

    @Test(
        "each real chain is accepted or refused as its fixture says, for its reason",
        arguments: AndroidChainFixture.names)
    func realChain(name: String) throws {
        let fixture = try AndroidChainFixture.load(name)
        let result = Self.verify(fixture)
        if fixture.verdict == "accept" {
            let key = try result.get()
            #expect(key.keyID == SHA256.hash(key.subjectPublicKeyInfo))
            #expect(fixture.packages.contains(key.package))
            #expect(fixture.digests.contains(key.signingDigest))
            #expect(key.securityLevel >= .trustedEnvironment)
            #expect(key.bootState == .verified && key.deviceLocked)
            #expect(key.provisioning.rawValue == (fixture.provisioning == "rkp" ? "remote" : "factory"))
            #expect(AndroidChainFixture.refusals[name] == nil)
        } else {
            #expect(fixture.verdict == "reject")
            #expect(Self.reason(result) == AndroidChainFixture.refusals[name]?.reference)
        }
    }

    @Test(
        "with the boot rule relaxed, unlocked phones register and the others are refused as before",
        arguments: AndroidChainFixture.names)
    func relaxedBoot(name: String) throws {
        let fixture = try AndroidChainFixture.load(name)
        var policy = fixture.referencePolicy
        policy.requireLockedBootloader = false
        let result = Self.verify(fixture, policy: policy)
        if let refusal = AndroidChainFixture.refusals[name], let relaxed = refusal.relaxed {
            #expect(Self.reason(result) == relaxed)
        } else {
            let key = try result.get()
            #expect(fixture.packages.contains(key.package))
        }
    }

    @Test("a wrong challenge refuses every chain that would pass", arguments: AndroidChainFixture.names)
    func wrongChallenge(name: String) throws {
        let fixture = try AndroidChainFixture.load(name)
        var policy = fixture.referencePolicy
        policy.requireLockedBootloader = false
        guard AndroidChainFixture.refusals[name]?.relaxed == nil else { return }
        #expect(Self.reason(Self.verify(fixture, policy: policy, challenge: fixture.challenge + [0])) == .challenge)
        #expect(
            Self.reason(Self.verify(fixture, policy: policy, challenge: Array(fixture.challenge.reversed())))
                == .challenge)
    }

    @Test("on 2026-12-15 remotely provisioned chains have expired intermediates; factory chains still verify")
    func clockAfterExpiry() throws {
        let later: Int64 = 1_797_292_800 // 2026-12-15T00:00:00Z
        for fixture in try AndroidChainFixture.all() where AndroidChainFixture.refusals[fixture.name]?.relaxed == nil {
            var policy = fixture.referencePolicy
            policy.requireLockedBootloader = false
            let result = Self.verify(fixture, policy: policy, at: later)
            if fixture.provisioning == "rkp" {
                #expect(Self.reason(result) == .validity, "\(fixture.name)")
            } else {
                #expect(throws: Never.self, "\(fixture.name)") { try result.get() }
            }
            // Before the intermediates were issued, no chain verifies.
            #expect(
                Self.reason(Self.verify(fixture, policy: policy, at: 1_000_000_000)) == .validity, "\(fixture.name)")
        }
    }

    @Test("a serial on the revocation list refuses the chain, whichever certificate it names")
    func revoked() throws {
        let fixture = try AndroidChainFixture.load("pixel6-a13-tee-ec-rkp")
        for serial in fixture.serials {
            let list = try AndroidRevocationList(
                json: Array(
                    #"{"entries":{"\#(serial.uppercased())":{"status":"SUSPENDED","reason":"SOFTWARE_FLAW"}}}"#.utf8))
            #expect(Self.reason(Self.verify(fixture, revocations: list)) == .revoked, "\(serial)")
        }
        let example = try AndroidRevocationList(
            json: Array(
                try RepositoryFile.text(
                    "Tests/GatewayTests/Fixtures/android-key-attestation/revocation-format-example.json"
                ).utf8))
        #expect(example.serials == ["2c8cdddfd5e03bfc", "c8966fcb2fbb0d7a"])
        #expect(throws: Never.self) { try Self.verify(fixture, revocations: example).get() }
    }

    @Test("a package or a signing digest not listed refuses the chain")
    func appNotListed() throws {
        let fixture = try AndroidChainFixture.load("pixel9pro-a16-tee-ec-rkp")
        let package = try #require(fixture.packages.first)
        let digest = try #require(fixture.digests.first)
        for apps in [[package: [SHA256.hash([1])]], ["com.example.other": [digest]], [:]] {
            #expect(Self.reason(Self.verify(fixture, policy: AndroidAttestationPolicy(apps: apps))) == .app)
        }
        // Several digests for one package: any one of them is enough.
        let several = AndroidAttestationPolicy(apps: [package: [SHA256.hash([1]), digest]])
        #expect(try Self.verify(fixture, policy: several).get().signingDigest == digest)
    }

    @Test("a minimum patch level refuses an older phone; StrongBox required refuses a TEE key")
    func patchLevelAndStrongBox() throws {
        let fixture = try AndroidChainFixture.load("pixel6-a13-tee-ec-rkp") // osPatchLevel 202303
        var policy = fixture.referencePolicy
        policy.minimumPatchLevel = 202_304
        #expect(Self.reason(Self.verify(fixture, policy: policy)) == .patchLevel)
        policy.minimumPatchLevel = 202_303
        #expect(try Self.verify(fixture, policy: policy).get().osPatchLevel == 202_303)
        policy.requireStrongBox = true
        #expect(Self.reason(Self.verify(fixture, policy: policy)) == .securityLevel)
    }

    @Test("the revocation list reads Google's format and refuses what is not")
    func revocationListFormat() throws {
        let list = try AndroidRevocationList(
            json: Array(#"{"entries":{"00AB":{"status":"REVOKED"},"0":{"status":"X"}}}"#.utf8))
        #expect(list.refuses(serialHex: "ab") && list.refuses(serialHex: "0") && !list.refuses(serialHex: "abc"))
        for bad in [
            "[]", "{}", #"{"entries":[]}"#, #"{"entries":{"ab":{}}}"#, #"{"entries":{"ab":{"status":1}}}"#, "nope",
        ] {
            #expect(throws: RevocationListError.self, "\(bad)") { try AndroidRevocationList(json: Array(bad.utf8)) }
        }
    }

    // MARK: Synthetic chains under a test root

    static let now: Int64 = 1_780_000_000

    static func synthetic(
        _ changes: SyntheticAndroidAttestation.Changes = .init(), policy: AndroidAttestationPolicy? = nil,
        rsa: Bool = false, trusted: Bool = true
    ) throws -> Result<VerifiedAndroidKey, AndroidAttestationFailure> {
        let authority = try SyntheticAndroidAttestation(notBefore: now - 86_400)
        let device = try SyntheticAndroidAttestation.Device(rsa: rsa)
        let challenge = SecureRandom.bytes(32)
        let chain = try authority.chain(device, challenge: challenge, changes: changes)
        let verifier = AndroidAttestationVerifier(
            policy: policy
                ?? AndroidAttestationPolicy(apps: [
                    SyntheticAndroidAttestation.package: [SyntheticAndroidAttestation.signingDigest]
                ]),
            extraRoots: trusted ? [authority.root.certificate] : [])
        return Result { () throws(AndroidAttestationFailure) in
            try verifier.verify(chain: chain, challenge: challenge, at: now, revocations: .empty)
        }
    }

    @Test("a synthetic chain under the test root verifies, and only when that root is trusted")
    func syntheticAccepted() throws {
        let key = try Self.synthetic().get()
        #expect(key.package == SyntheticAndroidAttestation.package)
        #expect(key.provisioning == .remote && key.securityLevel == .trustedEnvironment && key.osPatchLevel == 202_510)
        #expect(try Self.synthetic(rsa: true).get().package == SyntheticAndroidAttestation.package)
        #expect(Self.reason(try Self.synthetic(trusted: false)) == .root)
    }

    @Test("each change to a synthetic attestation is refused for its own reason")
    func syntheticRefusals() throws {
        var changes = SyntheticAndroidAttestation.Changes()
        changes.otherAuthority = try SyntheticAndroidAttestation(notBefore: Self.now - 86_400, name: "Another Root")
        #expect(Self.reason(try Self.synthetic(changes)) == .root)

        changes = .init()
        changes.attestationSecurityLevel = 0
        #expect(Self.reason(try Self.synthetic(changes)) == .securityLevel)
        changes = .init()
        changes.keyMintSecurityLevel = 0
        #expect(Self.reason(try Self.synthetic(changes)) == .securityLevel)
        changes = .init()
        changes.origin = 2
        #expect(Self.reason(try Self.synthetic(changes)) == .origin)
        changes = .init()
        changes.packages = ["com.example.other"]
        #expect(Self.reason(try Self.synthetic(changes)) == .app)
        changes = .init()
        changes.digests = [SHA256.hash([9])]
        #expect(Self.reason(try Self.synthetic(changes)) == .app)
        changes = .init()
        changes.rootOfTrustInSoftware = true
        #expect(Self.reason(try Self.synthetic(changes)) == .boot)
        changes = .init()
        changes.bootState = 3
        var relaxed = AndroidAttestationPolicy(apps: [
            SyntheticAndroidAttestation.package: [SyntheticAndroidAttestation.signingDigest]
        ])
        relaxed.requireLockedBootloader = false
        #expect(Self.reason(try Self.synthetic(changes, policy: relaxed)) == .boot)
        changes.bootState = 2
        changes.deviceLocked = false
        #expect(Self.reason(try Self.synthetic(changes)) == .boot)
        #expect(try Self.synthetic(changes, policy: relaxed).get().bootState == .unverified)
        changes = .init()
        changes.extensionInIntermediate = true
        #expect(Self.reason(try Self.synthetic(changes)) == .chain)
        changes = .init()
        changes.rawExtension = [0x30, 0x03, 0x02, 0x01]
        #expect(Self.reason(try Self.synthetic(changes)) == .extension)
    }

    @Test("a chain extended past the leaf by the attested key is refused")
    func extendedChain() throws {
        let authority = try SyntheticAndroidAttestation(notBefore: Self.now - 86_400)
        let device = try SyntheticAndroidAttestation.Device()
        let challenge = SecureRandom.bytes(32)
        let chain = try authority.extended(
            authority.chain(device, challenge: challenge), by: device, challenge: challenge)
        let verifier = AndroidAttestationVerifier(
            policy: AndroidAttestationPolicy(apps: [
                SyntheticAndroidAttestation.package: [SyntheticAndroidAttestation.signingDigest]
            ]),
            extraRoots: [authority.root.certificate])
        #expect(throws: AndroidAttestationFailure(.chain)) {
            try verifier.verify(chain: chain, challenge: challenge, at: Self.now, revocations: .empty)
        }
    }

    @Test("malformed and oversized chains are refused as malformed, never trapped on")
    func malformed() throws {
        let authority = try SyntheticAndroidAttestation(notBefore: Self.now - 86_400)
        let device = try SyntheticAndroidAttestation.Device()
        let challenge = SecureRandom.bytes(32)
        let chain = try authority.chain(device, challenge: challenge)
        let verifier = AndroidAttestationVerifier(
            policy: AndroidAttestationPolicy(apps: [
                SyntheticAndroidAttestation.package: [SyntheticAndroidAttestation.signingDigest]
            ]),
            extraRoots: [authority.root.certificate])
        func reason(_ chain: [[UInt8]]) -> AndroidAttestationFailure.Reason? {
            do {
                _ = try verifier.verify(chain: chain, challenge: challenge, at: Self.now, revocations: .empty)
                return nil
            } catch { return error.reason }
        }
        #expect(reason(chain) == nil)
        #expect(reason(Array(chain.prefix(2))) == .malformed)
        #expect(reason(Array(repeating: chain[0], count: 9)) == .malformed)
        #expect(reason([chain[0] + [0]] + chain.dropFirst()) == .malformed)
        #expect(reason([Array(chain[0].dropLast())] + chain.dropFirst()) == .malformed)
        #expect(reason([[UInt8](repeating: 0x30, count: 16_385)] + chain.dropFirst()) == .malformed)
        #expect(reason([[]] + chain.dropFirst()) == .malformed)
        // Out of order: the links no longer name each other.
        #expect(reason([chain[1], chain[0]] + chain.dropFirst(2)) == .chain)
    }

    @Test("a session signature verifies with the attested key only, over its own challenge")
    func sessionSignature() throws {
        let device = try SyntheticAndroidAttestation.Device()
        let other = try SyntheticAndroidAttestation.Device()
        let spki = device.key.publicKey.derSubjectPublicKeyInfo
        let signature = try device.sessionSignature(challenge: "abc")
        #expect(
            AndroidAttestationVerifier.isValidSession(
                signature: signature, challenge: "abc", subjectPublicKeyInfo: spki))
        #expect(
            !AndroidAttestationVerifier.isValidSession(
                signature: signature, challenge: "abd", subjectPublicKeyInfo: spki))
        #expect(
            !AndroidAttestationVerifier.isValidSession(
                signature: try other.sessionSignature(challenge: "abc"), challenge: "abc", subjectPublicKeyInfo: spki))
        let rsa = try SyntheticAndroidAttestation.Device(rsa: true)
        #expect(
            AndroidAttestationVerifier.isValidSession(
                signature: try rsa.sessionSignature(challenge: "abc"), challenge: "abc",
                subjectPublicKeyInfo: rsa.key.publicKey.derSubjectPublicKeyInfo))
    }
}
