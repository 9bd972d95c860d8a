/// Why `GATEWAY_TOKENS` or the file named by `GATEWAY_TOKENS_FILE` could not be parsed.
///
/// An error names where the problem is (the 1-based position of the comma-separated entry,
/// or the 1-based line of the file) and what is wrong with it. It never carries any part of
/// the entry: a misplaced field could be a token pasted where its hash belongs, and this
/// error ends up in logs.
///
/// ```
/// entry 3: the token hash is not 64 hexadecimal digits
/// line 7: expected 3 fields (hash, user id, plan), found 2
/// ```
package struct TokenConfigError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Where in the configuration the problem is.
    package enum Location: Hashable, Sendable, CustomStringConvertible {
        /// The n-th comma-separated entry of `GATEWAY_TOKENS` (1-based, empty ones counted).
        case entry(Int)
        /// The n-th line of a tokens file (1-based).
        case line(Int)

        package var description: String {
            switch self {
            case .entry(let position): "entry \(position)"
            case .line(let number): "line \(number)"
            }
        }
    }

    /// What is wrong with the entry.
    package enum Problem: Hashable, Sendable {
        /// The entry does not have exactly three fields.
        case wrongFieldCount(found: Int)
        /// The first field is not 64 hexadecimal digits.
        case invalidHash
        /// The user id is not 1–128 of `[A-Za-z0-9._@+-]`.
        case invalidUserID
        /// The plan name is not 1–64 of `[A-Za-z0-9._-]`.
        case invalidPlanName
        /// The same token hash was already configured at `first`.
        case duplicateToken(first: Location)
    }

    package let location: Location
    package let problem: Problem

    package init(_ problem: Problem, at location: Location) {
        self.problem = problem
        self.location = location
    }

    /// What went wrong, without the location.
    package var reason: String {
        switch problem {
        case .wrongFieldCount(let found): "expected 3 fields (hash, user id, plan), found \(found)"
        case .invalidHash: "the token hash is not 64 hexadecimal digits"
        case .invalidUserID: "the user id is not 1-\(CallerToken.maximumUserIDLength) of [A-Za-z0-9._@+-]"
        case .invalidPlanName: "the plan name is not 1-\(Plan.maximumNameLength) of [A-Za-z0-9._-]"
        case .duplicateToken(let first): "the same token hash as \(first)"
        }
    }

    /// `entry 3: the token hash is not 64 hexadecimal digits`.
    package var description: String { "\(location): \(reason)" }
}
