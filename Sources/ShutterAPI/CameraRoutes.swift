import FoundationEssentials
import ShutterCamera
import ShutterCapture
import ShutterHTTP

/// `/cameras` and `/camera/controls`: the V4L2 devices there are, and the camera's controls.
struct CameraRoutes: Sendable {
    let capture: CaptureService
    /// Opens device nodes off the cooperative pool.
    let discovery: DeviceDiscovery
    /// The device in use, or nil for the test pattern.
    let cameraPath: String?

    func register(in router: inout Router) {
        router.add(.get, "/cameras", scope: .view, .task { request, _ in try await cameras(request) })
        router.add(
            .get, "/camera/controls", scope: .view, .task { request, _ in try await controls(request) })
        router.add(
            .patch, "/camera/controls", scope: .admin, .task { request, _ in try await setControls(request) })
    }

    /// `GET /cameras`: every V4L2 capture device with its formats, sizes and rates, and which is in use.
    func cameras(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        let devices = try await discovery.captureDevices()
        struct Listing: Encodable {
            struct Camera: Encodable {
                let description: CameraDescription
                let inUse: Bool
                func encode(to encoder: any Encoder) throws {
                    try description.encode(to: encoder)
                    var container = encoder.container(keyedBy: Key.self)
                    try container.encode(inUse, forKey: .inUse)
                }
                enum Key: String, CodingKey { case inUse }
            }
            let cameras: [Camera]
            let inUse: String
        }
        let listing = Listing(
            cameras: devices.map { Listing.Camera(description: $0, inUse: $0.path == cameraPath) },
            inUse: cameraPath ?? "test-pattern")
        return try .json(.ok, Self.encode(listing), headers: ["Cache-Control": "no-store"])
    }

    /// `GET /camera/controls`: the camera's controls with range, step, default and current value.
    func controls(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        let controls = try await capture.withCamera { camera in
            try (camera as? any ControllableCamera)?.controls() ?? []
        }
        return try .json(.ok, Self.encode(["controls": controls]), headers: ["Cache-Control": "no-store"])
    }

    /// `PATCH /camera/controls` with `{"brightness": 10, ...}`: sets them, answers with every control.
    func setControls(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        let values = try Self.decodeControlValues(request.body)
        let controls = try await capture.withCamera { camera in
            guard let controllable = camera as? any ControllableCamera else {
                let names = values.keys.sorted().joined(separator: ", ")
                throw CameraError.invalidControl(
                    "unknown control \(names): the \(camera.name) camera has no controls")
            }
            try controllable.setControls(values)
            return try controllable.controls()
        }
        return try .json(.ok, Self.encode(["controls": controls]), headers: ["Cache-Control": "no-store"])
    }

    /// Parses `{"name": integer-or-boolean, ...}`; anything else is a 400 saying what is expected.
    static func decodeControlValues(_ body: [UInt8]) throws -> [String: Int] {
        let expected = #"send a JSON object of control names and whole numbers, e.g. {"brightness": 10}"#
        try requireUniqueKeys(body)
        guard !body.isEmpty,
            let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(body)),
            !object.isEmpty
        else {
            throw HTTPError(.badRequest, "invalid body", detail: expected)
        }
        var values: [String: Int] = [:]
        for (name, value) in object {
            guard let number = value.integer else {
                throw HTTPError(.badRequest, "invalid control", detail: "\(name): \(expected)")
            }
            values[name] = number
        }
        return values
    }

    private static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
