/// One camera control (brightness, exposure, white balance...) as the driver describes it.
public struct CameraControl: Sendable, Equatable, Codable {
    /// The kind of value a control takes.
    public enum Kind: String, Sendable, Codable {
        /// A number from `minimum` to `maximum` in steps of `step`.
        case integer
        /// 0 or 1.
        case boolean
        /// The index of one of `menu`.
        case menu
        /// The index of one of `menu`, whose names are numbers.
        case integerMenu = "integer_menu"
        /// An action: setting any value performs it.
        case button
    }

    /// One choice of a menu control.
    public struct MenuItem: Sendable, Equatable, Codable {
        /// The value to set.
        public var index: Int
        /// What the driver calls it (the number, for an integer menu).
        public var name: String

        /// A menu choice.
        public init(index: Int, name: String) {
            self.index = index
            self.name = name
        }
    }

    /// The V4L2 control id (`V4L2_CID_*`).
    public var id: UInt32
    /// The name used in the API and configuration: the driver's name in snake case (`white_balance_automatic`).
    public var name: String
    /// The driver's name, such as `"White Balance, Automatic"`.
    public var label: String
    /// The kind of value.
    public var kind: Kind
    /// The lowest value.
    public var minimum: Int
    /// The highest value.
    public var maximum: Int
    /// The distance between accepted values (1 for menus and booleans).
    public var step: Int
    /// The driver's default.
    public var defaultValue: Int
    /// The value now, or nil if it cannot be read (buttons, write-only or disabled controls).
    public var value: Int?
    /// The choices of a menu control, without the indexes the driver skips.
    public var menu: [MenuItem]
    /// Permanently unavailable on this device (`V4L2_CTRL_FLAG_DISABLED`).
    public var isDisabled: Bool
    /// Cannot be set (`V4L2_CTRL_FLAG_READ_ONLY`).
    public var isReadOnly: Bool
    /// Has no effect now because of another control, such as manual exposure while exposure is automatic
    /// (`V4L2_CTRL_FLAG_INACTIVE`); it can still be set.
    public var isInactive: Bool

    /// A control with every field given.
    public init(
        id: UInt32, name: String, label: String, kind: Kind, minimum: Int, maximum: Int, step: Int,
        defaultValue: Int, value: Int?, menu: [MenuItem] = [], isDisabled: Bool = false,
        isReadOnly: Bool = false, isInactive: Bool = false
    ) {
        self.id = id
        self.name = name
        self.label = label
        self.kind = kind
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.defaultValue = defaultValue
        self.value = value
        self.menu = menu
        self.isDisabled = isDisabled
        self.isReadOnly = isReadOnly
        self.isInactive = isInactive
    }

    /// A driver's control name in lowercase snake case, the way `v4l2-ctl` spells it:
    /// `"White Balance, Automatic"` becomes `white_balance_automatic`. ASCII letters and digits
    /// are kept; every run of anything else becomes one underscore, none at either end.
    public static func normalizedName(_ label: String) -> String {
        var result = ""
        var pendingSeparator = false
        for scalar in label.unicodeScalars {
            let isWordCharacter =
                scalar.isASCII
                && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                    || ("0"..."9").contains(scalar))
            guard isWordCharacter else {
                pendingSeparator = !result.isEmpty
                continue
            }
            if pendingSeparator { result.append("_") }
            pendingSeparator = false
            result.unicodeScalars.append(Unicode.Scalar(UInt8(scalar.value)).lowercasedASCII)
        }
        return result
    }

    /// Names for a list of driver labels, made unique: the second `"Exposure"` becomes `exposure_2`.
    static func uniqueNames(for labels: [String]) -> [String] {
        var used = Set<String>()
        return labels.map { label in
            let base = normalizedName(label).isEmpty ? "control" : normalizedName(label)
            var name = base
            var suffix = 2
            while !used.insert(name).inserted {
                name = "\(base)_\(suffix)"
                suffix += 1
            }
            return name
        }
    }

    /// Why `value` cannot be set on this control, or nil if it can.
    public func problem(setting value: Int) -> String? {
        if isDisabled { return "\(name) is disabled on this camera" }
        if isReadOnly { return "\(name) is read-only" }
        switch kind {
        case .button:
            return nil
        case .boolean:
            return value == 0 || value == 1 ? nil : "\(name) takes 0 or 1, not \(value)"
        case .menu, .integerMenu:
            guard menu.contains(where: { $0.index == value }) else {
                let choices = menu.map { "\($0.index) (\($0.name))" }.joined(separator: ", ")
                return "\(name) takes one of \(choices), not \(value)"
            }
            return nil
        case .integer:
            guard (minimum...maximum).contains(value) else {
                return "\(name) takes \(minimum)...\(maximum), not \(value)"
            }
            if step > 1 && (value - minimum) % step != 0 {
                return "\(name) takes \(minimum)...\(maximum) in steps of \(step), not \(value)"
            }
            return nil
        }
    }

    /// The controls to set for `requests` (name to value), in the order to set them, after checking
    /// every one; throws `CameraError.invalidControl` naming the first bad name or value.
    ///
    /// Automatic-mode controls (names containing `auto`) go first, so that switching exposure or
    /// white balance to manual happens before the manual value is written; the rest follow by name.
    public static func plan(_ requests: [String: Int], for controls: [CameraControl]) throws -> [(
        control: CameraControl, value: Int
    )] {
        let byName = Dictionary(controls.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let ordered = requests.sorted { a, b in
            let aAuto = a.key.contains("auto")
            let bAuto = b.key.contains("auto")
            return aAuto != bAuto ? aAuto : a.key < b.key
        }
        return try ordered.map { name, value in
            guard let control = byName[name] else {
                let known = controls.map(\.name).sorted().joined(separator: ", ")
                throw CameraError.invalidControl(
                    "unknown control \"\(name)\"; this camera has: \(known.isEmpty ? "none" : known)")
            }
            if let problem = control.problem(setting: value) { throw CameraError.invalidControl(problem) }
            return (control, value)
        }
    }
}

extension Unicode.Scalar {
    /// The lowercase form of an ASCII letter; any other scalar unchanged.
    fileprivate var lowercasedASCII: Unicode.Scalar {
        ("A"..."Z").contains(self) ? Unicode.Scalar(UInt8(value + 32)) : self
    }
}
