import Testing

@testable import ShutterCamera

@Suite struct CameraControlTests {
    @Test(arguments: [
        ("Brightness", "brightness"),
        ("White Balance, Automatic", "white_balance_automatic"),
        ("Exposure, Auto", "exposure_auto"),
        ("Exposure Time, Absolute", "exposure_time_absolute"),
        ("Exposure (Absolute)", "exposure_absolute"),
        ("White Balance Temperature, Auto", "white_balance_temperature_auto"),
        ("Power Line Frequency", "power_line_frequency"),
        ("  Gain  ", "gain"),
        ("LED1 Mode", "led1_mode"),
        ("Pan/Tilt Reset", "pan_tilt_reset"),
        ("Focus, Automatic Continuous", "focus_automatic_continuous"),
        ("Größe", "gr_e"),
        ("", ""),
    ])
    func namesAreSnakeCase(label: String, name: String) {
        #expect(CameraControl.normalizedName(label) == name)
    }

    @Test func duplicateNamesGetANumber() {
        #expect(
            CameraControl.uniqueNames(for: ["Exposure", "exposure", "Exposure", "", "!!"]) == [
                "exposure", "exposure_2", "exposure_3", "control", "control_2",
            ])
    }

    static let brightness = CameraControl(
        id: 0x0098_0900, name: "brightness", label: "Brightness", kind: .integer, minimum: -64, maximum: 64,
        step: 1, defaultValue: 0, value: 10)
    static let gain = CameraControl(
        id: 0x0098_0913, name: "gain", label: "Gain", kind: .integer, minimum: 0, maximum: 100, step: 10,
        defaultValue: 0, value: 0)
    static let autoWhiteBalance = CameraControl(
        id: 0x0098_090C, name: "white_balance_automatic", label: "White Balance, Automatic", kind: .boolean,
        minimum: 0, maximum: 1, step: 1, defaultValue: 1, value: 1)
    static let exposureAuto = CameraControl(
        id: 0x009A_0901, name: "auto_exposure", label: "Auto Exposure", kind: .menu, minimum: 0, maximum: 3,
        step: 1, defaultValue: 3, value: 3,
        menu: [
            CameraControl.MenuItem(index: 1, name: "Manual Mode"),
            CameraControl.MenuItem(index: 3, name: "Aperture Priority Mode"),
        ])
    static let exposureTime = CameraControl(
        id: 0x009A_0902, name: "exposure_time_absolute", label: "Exposure Time, Absolute", kind: .integer,
        minimum: 3, maximum: 2047, step: 1, defaultValue: 250, value: 250, isInactive: true)
    static let pixelRate = CameraControl(
        id: 0x009F_0902, name: "pixel_rate", label: "Pixel Rate", kind: .integer, minimum: 0, maximum: 100,
        step: 1, defaultValue: 0, value: 0, isReadOnly: true)
    static let all = [brightness, gain, autoWhiteBalance, exposureAuto, exposureTime, pixelRate]

    static func refusal(_ requests: [String: Int]) -> String? {
        do {
            _ = try CameraControl.plan(requests, for: all)
            return nil
        } catch CameraError.invalidControl(let message) {
            return message
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test func unknownNamesAreRefusedByName() {
        let message = Self.refusal(["brightnes": 3])
        #expect(message?.contains("unknown control \"brightnes\"") == true)
        #expect(message?.contains("brightness, exposure_time_absolute, gain") == true)
    }

    @Test func outOfRangeValuesNameTheControlAndItsRange() {
        #expect(Self.refusal(["brightness": 65]) == "brightness takes -64...64, not 65")
        #expect(Self.refusal(["gain": 15]) == "gain takes 0...100 in steps of 10, not 15")
        #expect(Self.refusal(["white_balance_automatic": 2]) == "white_balance_automatic takes 0 or 1, not 2")
        #expect(
            Self.refusal(["auto_exposure": 2])
                == "auto_exposure takes one of 1 (Manual Mode), 3 (Aperture Priority Mode), not 2")
        #expect(Self.refusal(["pixel_rate": 1]) == "pixel_rate is read-only")
    }

    @Test func validRequestsAreOrderedWithAutomaticModesFirst() throws {
        let plan = try CameraControl.plan(
            ["exposure_time_absolute": 100, "brightness": -64, "auto_exposure": 1, "gain": 30], for: Self.all)
        #expect(
            plan.map(\.control.name) == ["auto_exposure", "brightness", "exposure_time_absolute", "gain"])
        #expect(plan.map(\.value) == [1, -64, 100, 30])
        #expect(try CameraControl.plan([:], for: Self.all).isEmpty)
    }

    @Test func buttonsTakeAnyValueAndDisabledControlsNone() {
        var button = Self.brightness
        button.kind = .button
        #expect(button.problem(setting: 12345) == nil)
        var disabled = Self.brightness
        disabled.isDisabled = true
        #expect(disabled.problem(setting: 0) == "brightness is disabled on this camera")
    }
}
