/// Comparisons whose running time does not depend on where two secrets differ.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes.
    ///
    /// For inputs of equal length it reads every byte of both and folds their differences
    /// into one accumulator (XOR, then OR), deciding only at the end, so the time taken says
    /// nothing about how long a common prefix is. Inputs of different lengths are unequal
    /// straight away, without looking at their content: the length of a digest is public.
    @inline(never)
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices {
            difference |= a[index] ^ b[index]
        }
        return difference == 0
    }
}
