/// Why a job request was refused; `description` is a sentence naming the field and what is accepted.
public enum JobSpecError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The body is not a JSON object.
    case malformedBody(String)
    /// A field the API does not know.
    case unknownField(String)
    /// A field given twice in the body.
    case duplicateField(String)
    /// A required field is absent.
    case missingField(String, kind: String?)
    /// A known field that the given kind does not take.
    case fieldNotAllowed(String, kind: String)
    /// `kind` is not delayed, interval or burst.
    case unknownKind(String)
    /// Fields that exclude each other were both given.
    case conflictingFields(String, String)
    /// A field's value is out of range or of the wrong type; `accepted` says what would do.
    case invalidValue(field: String, accepted: String)
    /// The maximum number of active jobs is reached.
    case tooManyActiveJobs(limit: Int)

    /// The request field the error is about, if any.
    public var field: String? {
        switch self {
        case .malformedBody, .tooManyActiveJobs: return nil
        case .unknownField(let name), .duplicateField(let name), .missingField(let name, _),
            .fieldNotAllowed(let name, _):
            return name
        case .unknownKind: return "kind"
        case .conflictingFields(let first, _): return first
        case .invalidValue(let field, _): return field
        }
    }

    public var description: String {
        switch self {
        case .malformedBody(let detail):
            return "The body must be a JSON object describing a job (\(detail))."
        case .unknownField(let name):
            return
                "Unknown field `\(name)`; accepted fields are kind, every, count, until, duration, delay, start_at and label."
        case .duplicateField(let name):
            return "`\(name)` is given twice; give each field once."
        case .missingField(let name, let kind?):
            return "`\(name)` is required for \(kind) jobs."
        case .missingField(let name, nil):
            return "`\(name)` is required."
        case .fieldNotAllowed(let name, let kind):
            return "`\(name)` does not apply to \(kind) jobs."
        case .unknownKind(let kind):
            return "Unknown `kind` \"\(kind)\"; accepted kinds are delayed, interval and burst."
        case .conflictingFields(let first, let second):
            return
                "`\(first)` and `\(second)` cannot both be given; an interval job ends by one of count, until or duration."
        case .invalidValue(let field, let accepted):
            return "`\(field)` must be \(accepted)."
        case .tooManyActiveJobs(let limit):
            return
                "Too many active jobs: at most \(limit) may be scheduled or running at once; cancel one first."
        }
    }
}
