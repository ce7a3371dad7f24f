import CV4L2
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

extension V4L2Device {
    /// A control as `VIDIOC_QUERY_EXT_CTRL` or `VIDIOC_QUERYCTRL` describes it, before menus and values.
    struct ControlQuery: Equatable {
        /// The control id.
        var id: UInt32
        /// `V4L2_CTRL_TYPE_*`.
        var type: UInt32
        /// The driver's name.
        var label: String
        /// The lowest value.
        var minimum: Int64
        /// The highest value.
        var maximum: Int64
        /// The distance between values.
        var step: UInt64
        /// The default value.
        var defaultValue: Int64
        /// `V4L2_CTRL_FLAG_*` flags.
        var flags: UInt32
        /// Array dimensions (0 for a single value).
        var dimensions: UInt32
    }

    /// Every control of the kinds `CameraControl` covers, with menus and current values.
    ///
    /// Controls that hold 64-bit numbers, strings, bitmasks, arrays or compound data are left
    /// out (they need `VIDIOC_S_EXT_CTRLS` payloads and no webcam setting uses them), and so are
    /// the control-class headings.
    public func controls() throws -> [CameraControl] {
        let queries = try queryControls().filter { query in
            query.dimensions == 0 && query.flags & UInt32(V4L2_CTRL_FLAG_HAS_PAYLOAD) == 0
                && Self.kind(ofType: query.type) != nil
        }
        let names = CameraControl.uniqueNames(for: queries.map(\.label))
        return try zip(queries, names).map { query, name in
            let kind = Self.kind(ofType: query.type)!
            let flags = query.flags
            let isDisabled = flags & UInt32(V4L2_CTRL_FLAG_DISABLED) != 0
            let isWriteOnly = flags & UInt32(V4L2_CTRL_FLAG_WRITE_ONLY) != 0
            var value: Int?
            if !isDisabled && !isWriteOnly && kind != .button {
                value = try controlValue(id: query.id).map(Int.init)
            }
            return CameraControl(
                id: query.id, name: name, label: query.label, kind: kind,
                minimum: Int(clamping: query.minimum), maximum: Int(clamping: query.maximum),
                step: Int(clamping: query.step), defaultValue: Int(clamping: query.defaultValue),
                value: value,
                menu: kind == .menu || kind == .integerMenu ? try menuItems(for: query, kind: kind) : [],
                isDisabled: isDisabled, isReadOnly: flags & UInt32(V4L2_CTRL_FLAG_READ_ONLY) != 0,
                isInactive: flags & UInt32(V4L2_CTRL_FLAG_INACTIVE) != 0)
        }
    }

    /// The current value of control `id` (`VIDIOC_G_CTRL`), or nil when the driver will not say.
    ///
    /// uvcvideo answers EIO or EACCES for controls the camera cannot read at the moment, which is
    /// not a reason to fail a whole listing; an unplugged camera still throws.
    public func controlValue(id: UInt32) throws -> Int32? {
        var control = v4l2_control(id: id, value: 0)
        do {
            try ioctl("VIDIOC_G_CTRL", cv4l2_vidioc_g_ctrl(), &control)
        } catch CameraError.device {
            return nil
        }
        return control.value
    }

    /// Sets control `id` to `value` (`VIDIOC_S_CTRL`).
    ///
    /// A refusal (vidioc-g-ctrl.rst: ERANGE out of range, EBUSY grabbed or another process holds it,
    /// EACCES read-only or inactive on some drivers, EINVAL, EIO from the camera) becomes
    /// `CameraError.invalidControl` naming the control.
    public func setControlValue(id: UInt32, name: String, value: Int32) throws {
        var control = v4l2_control(id: id, value: value)
        do {
            _ = try syscall("VIDIOC_S_CTRL") {
                withUnsafeMutableBytes(of: &control) {
                    Glibc.ioctl(descriptor, cv4l2_vidioc_s_ctrl(), $0.baseAddress!)
                }
            }
        } catch let error as SystemError {
            if [ERANGE, EBUSY, EACCES, EINVAL, EIO, EPERM].contains(error.errno) {
                throw CameraError.invalidControl("the camera refused \(name) = \(value): \(error.reason)")
            }
            throw CameraError.classifying(error, path: path)
        }
    }

    /// Every control the driver lists, by the newest enumeration it supports.
    ///
    /// vidioc-queryctrl.rst: `VIDIOC_QUERY_EXT_CTRL` with V4L2_CTRL_FLAG_NEXT_CTRL walks all controls
    /// in id order; drivers without it (ENOTTY) still take the same walk with `VIDIOC_QUERYCTRL`;
    /// drivers that know neither walk are asked id by id over the user and camera classes, then
    /// from V4L2_CID_PRIVATE_BASE until EINVAL, as the page describes for old drivers.
    func queryControls() throws -> [ControlQuery] {
        if let controls = try walkExtendedControls() { return controls }
        if let controls = try walkControls() { return controls }
        var controls: [ControlQuery] = []
        let ranges = [
            cv4l2_cid_base()..<cv4l2_cid_lastp1(),
            cv4l2_cid_camera_class_base()..<(cv4l2_cid_camera_class_base() + 64),
        ]
        for id in ranges.joined() {
            if let query = try queryControl(id: id) { controls.append(query) }
        }
        var id = cv4l2_cid_private_base()
        while controls.count < 1024, let query = try queryControl(id: id) {
            controls.append(query)
            id += 1
        }
        return controls
    }

    /// The `VIDIOC_QUERY_EXT_CTRL` walk, or nil if the driver does not support it.
    private func walkExtendedControls() throws -> [ControlQuery]? {
        var controls: [ControlQuery] = []
        var id: UInt32 = 0
        while controls.count < 1024 {
            var query = v4l2_query_ext_ctrl()
            query.id = id | UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
            do {
                try ioctl("VIDIOC_QUERY_EXT_CTRL", cv4l2_vidioc_query_ext_ctrl(), &query)
            } catch CameraError.device(let error) where error.errno == ENOTTY {
                return nil
            } catch CameraError.device(let error) where error.errno == EINVAL {
                break
            }
            controls.append(
                ControlQuery(
                    id: query.id, type: query.type, label: cString(query.name), minimum: query.minimum,
                    maximum: query.maximum, step: query.step, defaultValue: query.default_value,
                    flags: query.flags,
                    dimensions: query.nr_of_dims))
            id = query.id
        }
        return controls
    }

    /// The `VIDIOC_QUERYCTRL` walk with V4L2_CTRL_FLAG_NEXT_CTRL, or nil if the driver does not support it.
    private func walkControls() throws -> [ControlQuery]? {
        var controls: [ControlQuery] = []
        var id: UInt32 = 0
        while controls.count < 1024 {
            var query = v4l2_queryctrl()
            query.id = id | UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
            do {
                try ioctl("VIDIOC_QUERYCTRL", cv4l2_vidioc_queryctrl(), &query)
            } catch CameraError.device(let error) where error.errno == EINVAL || error.errno == ENOTTY {
                // EINVAL on the very first step means the flag is not understood.
                if controls.isEmpty { return nil }
                break
            }
            controls.append(ControlQuery(query))
            id = query.id
        }
        return controls
    }

    /// `VIDIOC_QUERYCTRL` for one id, or nil if there is no such control.
    private func queryControl(id: UInt32) throws -> ControlQuery? {
        var query = v4l2_queryctrl()
        query.id = id
        guard try enumerate("VIDIOC_QUERYCTRL", cv4l2_vidioc_queryctrl(), &query) else { return nil }
        return ControlQuery(query)
    }

    /// The items of a menu control (`VIDIOC_QUERYMENU` for each index from minimum to maximum;
    /// EINVAL marks an index the driver skips).
    private func menuItems(for query: ControlQuery, kind: CameraControl.Kind) throws -> [CameraControl
        .MenuItem]
    {
        guard query.minimum >= 0, query.maximum >= query.minimum, query.maximum - query.minimum < 256 else {
            return []
        }
        var items: [CameraControl.MenuItem] = []
        for index in query.minimum...query.maximum {
            var item = v4l2_querymenu()
            item.id = query.id
            item.index = UInt32(index)
            guard try enumerate("VIDIOC_QUERYMENU", cv4l2_vidioc_querymenu(), &item) else { continue }
            let name = kind == .integerMenu ? String(item.value) : cString(item.name)
            items.append(CameraControl.MenuItem(index: Int(index), name: name))
        }
        return items
    }

    /// The `CameraControl.Kind` of a `V4L2_CTRL_TYPE_*`, or nil for the types Shutter leaves out.
    static func kind(ofType type: UInt32) -> CameraControl.Kind? {
        switch type {
        case V4L2_CTRL_TYPE_INTEGER.rawValue: .integer
        case V4L2_CTRL_TYPE_BOOLEAN.rawValue: .boolean
        case V4L2_CTRL_TYPE_MENU.rawValue: .menu
        case V4L2_CTRL_TYPE_INTEGER_MENU.rawValue: .integerMenu
        case V4L2_CTRL_TYPE_BUTTON.rawValue: .button
        default: nil
        }
    }
}

extension V4L2Device.ControlQuery {
    /// The fields of a `struct v4l2_queryctrl`.
    init(_ query: v4l2_queryctrl) {
        self.init(
            id: query.id, type: query.type, label: cString(query.name), minimum: Int64(query.minimum),
            maximum: Int64(query.maximum), step: UInt64(max(query.step, 0)),
            defaultValue: Int64(query.default_value),
            flags: query.flags, dimensions: 0)
    }
}
