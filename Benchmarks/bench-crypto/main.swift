import Crypto

// bench-crypto: what the gateway's cryptography costs an operation, through the Crypto
// module as the gateway calls it. `make bench-crypto` runs it.
//
//   bench-crypto [jwt] [--runs N] [--milliseconds M]
//   bench-crypto mint --users N --directory DIR
//   bench-crypto attest [--runs N] [--milliseconds M]
//
// `jwt` prints only what one JWT verification costs (signature checked, and cached); `mint`
// writes the callers `make bench-jwt` uses (see JWTBench.swift); `attest` prints what one App
// Attest registration and one session cost to verify (AttestBench.swift).
//
// Each figure is the best of N runs (default 5), each repeating the operation for at least M
// milliseconds (default 200), after one such run as warm-up; times come from the monotonic
// ContinuousClock. The pure-Swift SHA-256 that libcrypto replaced is measured beside it.
#if canImport(Glibc)
    import Glibc // libm, for rounding
#endif

var runs = 5
var milliseconds = 200
var arguments = CommandLine.arguments.dropFirst()
let mode = arguments.first.flatMap { $0.hasPrefix("--") ? nil : arguments.popFirst() } ?? "all"
if mode == "mint" {
    var users = 100
    var directory = "."
    while let flag = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fatalError("\(flag) needs a value") }
        switch flag {
        case "--users": users = Int(value) ?? 0
        case "--directory": directory = value
        default: fatalError("unknown option \(flag)")
        }
    }
    guard users > 0 else { fatalError("--users needs a positive number") }
    try JWTBench.mint(users: users, directory: directory)
    exit(0)
}
guard ["all", "jwt", "attest"].contains(mode) else { fatalError("unknown mode \(mode): jwt, attest or mint") }
while let flag = arguments.popFirst() {
    guard let value = arguments.popFirst().flatMap({ Int($0) }), value > 0 else {
        fatalError("\(flag) needs a positive number")
    }
    switch flag {
    case "--runs": runs = value
    case "--milliseconds": milliseconds = value
    default: fatalError("unknown option \(flag)")
    }
}

/// Keeps a result alive, so the optimiser cannot drop the work that made it.
@inline(never) @_optimize(none)
func blackHole(_ value: UInt8) {}

/// Nanoseconds per call of `operation`: the best of `runs` runs after one warm-up run, each
/// calling it `batch` times between clock readings until `milliseconds` have passed.
@MainActor
func nanosecondsPerOperation(batch: Int, _ operation: () -> UInt8) -> Double {
    let clock = ContinuousClock()
    var best = Double.infinity
    for run in 0...runs {
        var count = 0
        var sink: UInt8 = 0
        let start = clock.now
        var elapsed = Duration.zero
        repeat {
            for _ in 0..<batch { sink ^= operation() }
            count += batch
            elapsed = clock.now - start
        } while elapsed < .milliseconds(milliseconds)
        blackHole(sink)
        let (seconds, attoseconds) = elapsed.components
        let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        if run > 0 { best = min(best, nanoseconds / Double(count)) }
    }
    return best
}

func bytes(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) }
}

/// A row of the table: ns per operation, and MB/s where the input's size matters.
func row(_ operation: String, _ input: String, size: Int?, nanoseconds: Double) {
    let rate = size.map { String(Int((Double($0) / nanoseconds * 1000).rounded())) } ?? "–"
    let time = nanoseconds < 100 ? String((nanoseconds * 10).rounded() / 10) : String(Int(nanoseconds.rounded()))
    print("| \(operation) | \(input) | \(time) | \(rate) |")
}

func ratio(_ before: Double, _ after: Double) -> String {
    String((before / after * 10).rounded() / 10) + "×"
}

print("best of \(runs) runs of \(milliseconds) ms each, after one warm-up run")
print()
if mode == "jwt" {
    try JWTBench.run()
    exit(0)
}
if mode == "attest" {
    try AttestBench.run()
    exit(0)
}
print("| operation | input | ns/op | MB/s |")
print("|---|---|---:|---:|")

let sizes: [(name: String, count: Int, batch: Int)] = [("48 B", 48, 64), ("1 KiB", 1024, 16), ("1 MiB", 1 << 20, 1)]
var speedUps: [String] = []
for size in sizes {
    let input = bytes(size.count)
    precondition(ReplacedSHA256.hash(input) == SHA256.hash(input), "the two SHA-256s disagree")
    let before = nanosecondsPerOperation(batch: size.batch) { ReplacedSHA256.hash(input)[0] }
    let after = nanosecondsPerOperation(batch: size.batch) { SHA256.hash(input)[0] }
    row("SHA-256, pure Swift (before)", size.name, size: size.count, nanoseconds: before)
    row("SHA-256, libcrypto (after)", size.name, size: size.count, nanoseconds: after)
    speedUps.append("\(size.name) \(ratio(before, after))")
}

let key = bytes(32)
let kilobyte = bytes(1024)
row(
    "HMAC-SHA-256", "1 KiB", size: 1024,
    nanoseconds: nanosecondsPerOperation(batch: 16) { HMAC.sha256(key: key, message: kilobyte)[0] })

let message = bytes(600)
let verifications: [(name: String, key: PrivateKey, algorithm: SignatureAlgorithm)] = [
    ("RS256 verify (RSA-2048)", try PrivateKey.generateRSA(bits: 2048), .rsaPKCS1v15SHA256),
    ("ES256 verify (P-256)", try PrivateKey.generateP256(), .ecdsaP256SHA256),
]
for verification in verifications {
    let signature = try verification.key.signature(for: message, algorithm: verification.algorithm)
    let publicKey = verification.key.publicKey
    precondition(
        publicKey.isValidSignature(signature, for: message, algorithm: verification.algorithm),
        "a valid signature is refused")
    let nanoseconds = nanosecondsPerOperation(batch: 1) {
        publicKey.isValidSignature(signature, for: message, algorithm: verification.algorithm) ? 1 : 0
    }
    row(verification.name, "600 B", size: nil, nanoseconds: nanoseconds)
}
print()
print("SHA-256, libcrypto against pure Swift: " + speedUps.joined(separator: ", "))
print()
try JWTBench.run()
