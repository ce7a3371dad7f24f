extension StringProtocol where SubSequence == Substring {
    /// The pieces between occurrences of the ASCII `separator`, as `split(separator:)` gives
    /// them, found by walking the UTF-8 bytes instead of the `Character`s.
    ///
    /// Paths, queries, header lists and host names are split on every request; splitting by
    /// `Character` runs grapheme breaking over each byte and cost a sixth of a media request.
    /// An ASCII byte never occurs inside a multi-byte scalar, so every piece starts and ends on
    /// a scalar boundary. Inlinable, so each module gets it specialized for `String` and
    /// `Substring` (called through the generic witness tables, it cost more than it saved).
    /// (Unlike the `Character` split, a separator followed by a combining
    /// mark still separates: the byte-wise reading protocols specify.)
    @inlinable
    public func splitASCII(
        _ separator: UInt8, maxSplits: Int = .max, omittingEmptySubsequences: Bool = true
    ) -> [Substring] {
        precondition(separator < 0x80, "the separator must be ASCII")
        var pieces: [Substring] = []
        let bytes = utf8
        var start = bytes.startIndex
        var index = start
        var splits = 0
        while index != bytes.endIndex {
            if splits < maxSplits && bytes[index] == separator {
                if !omittingEmptySubsequences || start != index {
                    pieces.append(self[start..<index])
                    splits += 1
                }
                index = bytes.index(after: index)
                start = index
            } else {
                index = bytes.index(after: index)
            }
        }
        if !omittingEmptySubsequences || start != bytes.endIndex {
            pieces.append(self[start..<bytes.endIndex])
        }
        return pieces
    }
}
