/// The values bound to a statement's `?` parameters, in order.
///
/// Written as an array literal of mixed types: `[id, "camera", nil, jobID]`.
public struct StatementArguments: Equatable, ExpressibleByArrayLiteral, Sendable {
    /// The values, one per parameter.
    public var values: [DatabaseValue]

    public init(_ values: [DatabaseValue]) {
        self.values = values
    }

    public init(arrayLiteral elements: (any DatabaseValueConvertible)?...) {
        self.values = elements.map { $0?.databaseValue ?? .null }
    }

    /// Whether there are no values.
    public var isEmpty: Bool { values.isEmpty }
}
