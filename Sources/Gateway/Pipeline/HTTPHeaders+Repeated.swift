import HTTP1

extension HTTPHeaders {
    /// How many field lines have this name.
    func count(of name: String) -> Int {
        values(name).count
    }

    /// Every line of a list field, in order, joined with ", " (RFC 9110 §5.3); nil when none.
    func combinedValue(_ name: String) -> String? {
        let all = values(name)
        if all.count <= 1 { return all.first }
        return all.joined(separator: ", ")
    }
}
