/// What a request may do; each scope includes the ones before it.
///
/// Every route names the scope it needs (`Router.add`); an `HTTPRequestPolicy` decides what
/// scope a request has. The server itself grants nothing and checks nothing without a policy.
public enum AccessScope: Int, Comparable, Sendable, CaseIterable, CustomStringConvertible {
    /// Nothing beyond what needs no scope (`/healthz`).
    case none = 0
    /// Watch and read: the page, the preview, the library, the media, status, jobs' state.
    case view
    /// Also take pictures and create jobs.
    case snap
    /// Also delete, change pictures and the camera's controls, cancel jobs, make signed links.
    case admin

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The scope's name as written in token files and configuration: `none`, `view`, `snap`, `admin`.
    public var description: String {
        switch self {
        case .none: "none"
        case .view: "view"
        case .snap: "snap"
        case .admin: "admin"
        }
    }

    /// The scope called `name`, or nil.
    public init?(name: some StringProtocol) {
        guard let scope = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = scope
    }
}
