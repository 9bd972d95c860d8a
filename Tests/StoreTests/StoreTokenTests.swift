import EventLoop
import Testing

@testable import Store

extension StoreBackends {
    @Suite("store: tokens")
    struct TokenTests {
        static func token(_ id: String, digestByte: UInt8, user: String = "alice", at milliseconds: Int64 = 1_000)
            -> StoredToken
        {
            StoredToken(
                id: id, digest: [UInt8](repeating: digestByte, count: 32), userID: user, plan: "pro", label: "laptop",
                createdAtMilliseconds: milliseconds
            )
        }

        @Test(
            "tokens are listed oldest first, revoked ones too; the active ones leave the revoked out",
            arguments: Backend.allCases)
        func listAndRevoke(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let first = Self.token("t1", digestByte: 1, at: 1_000)
                var second = Self.token("t2", digestByte: 2, user: "bob", at: 2_000)
                second.label = nil
                try await store.insertToken(second)
                try await store.insertToken(first)
                #expect(try await store.tokens() == [first, second])
                #expect(try await store.revokeToken(id: "t1", atMilliseconds: 5_000))
                #expect(try await store.revokeToken(id: "t1", atMilliseconds: 6_000) == false)
                #expect(try await store.revokeToken(id: "nope", atMilliseconds: 6_000) == false)
                var revoked = first
                revoked.revokedAtMilliseconds = 5_000
                #expect(try await store.tokens() == [revoked, second])
                #expect(try await store.activeTokens() == [second])
            }
        }

        @Test(
            "a taken id, a taken digest or a digest of the wrong length is a constraint error that shows no value",
            arguments: Backend.allCases)
        func constraints(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                try await store.insertToken(Self.token("secret-id-1", digestByte: 1))
                let sameID = await storeError { () throws(StoreError) in
                    try await store.insertToken(Self.token("secret-id-1", digestByte: 2))
                }
                #expect(sameID?.code == .constraint)
                #expect(sameID?.message.hasPrefix(fixture.name) == true)
                #expect(sameID?.message.contains("INSERT INTO tokens") == true)
                #expect(sameID?.message.contains("secret-id-1") == false)
                let sameDigest = await storeErrorCode { () throws(StoreError) in
                    try await store.insertToken(Self.token("t2", digestByte: 1))
                }
                #expect(sameDigest == .constraint)
                var short = Self.token("t3", digestByte: 3)
                short.digest.removeLast()
                #expect(
                    await storeErrorCode { () throws(StoreError) in try await store.insertToken(short) } == .constraint)
                #expect(try await store.tokens().map(\.id) == ["secret-id-1"])
            }
        }

        @Test(
            "the generation moves when a token is added or revoked, not when the ledger records its use",
            arguments: Backend.allCases)
        func generation(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let start = try await store.tokenGeneration()
                try await store.insertToken(Self.token("t1", digestByte: 1))
                let added = try await store.tokenGeneration()
                #expect(added > start)

                try await append([ledgerRow("r1", user: "alice", at: 9_000, token: "t1")], to: store)
                // An older use does not move the last use back.
                try await append([ledgerRow("r2", user: "alice", at: 4_000, token: "t1")], to: store)
                #expect(try await store.tokens().first?.lastUsedAtMilliseconds == 9_000)
                #expect(try await store.tokenGeneration() == added)

                #expect(try await store.revokeToken(id: "t1", atMilliseconds: 10_000))
                let revoked = try await store.tokenGeneration()
                #expect(revoked > added)
                #expect(try await store.revokeToken(id: "t1", atMilliseconds: 11_000) == false)
                #expect(try await store.tokenGeneration() == revoked)
            }
        }

        @Test("another store on the same file sees the generation move", arguments: Backend.allCases)
        func generationAcrossConnections(_ backend: Backend) async throws {
            try await withStore(on: backend) { store, fixture in
                let (other, closeOther) = try await fixture.openAnother()
                let before = try await other.tokenGeneration()
                try await store.insertToken(Self.token("t1", digestByte: 1))
                let added = try await other.tokenGeneration()
                #expect(added != before)
                #expect(try await other.revokeToken(id: "t1", atMilliseconds: 2_000))
                #expect(try await store.tokenGeneration() != added)
                #expect(try await store.activeTokens().isEmpty)
                await closeOther()
            }
        }
    }
}
