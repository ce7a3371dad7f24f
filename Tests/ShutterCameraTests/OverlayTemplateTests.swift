import Testing

@testable import ShutterCamera

/// The overlay text's fields, expanded for one frame.
struct OverlayTemplateTests {
    static let fields = OverlayTemplate.Fields(
        wallMilliseconds: 1_700_000_000_042, camera: "cam 1", label: "a {frame} label", frame: 77, job: 5,
        width: 640, height: 480)

    @Test func strftimeMillisecondsAndFieldsAreFilledInUTC() throws {
        let template = try #require(
            OverlayTemplate(
                #"%Y-%m-%d %H:%M:%S.%f %Z\n{camera} #{frame} job {job} {width}x{height} {label} {nope} 100%%"#
            ))
        #expect(
            template.expand(Self.fields, utc: true) == [
                "2023-11-14 22:13:20.042 GMT",
                "cam 1 #77 job 5 640x480 a {frame} label {nope} 100%",
            ])
        #expect(template.usesPictureFields)
    }

    @Test func missingFieldsAreEmptyAndPlainTextIsKept() throws {
        var fields = Self.fields
        fields.label = nil
        fields.job = nil
        let template = try #require(OverlayTemplate("[{label}][{job}] {unclosed"))
        #expect(template.expand(fields, utc: true) == ["[][] {unclosed"])
        #expect(OverlayTemplate("") == nil)
        #expect(OverlayTemplate("%H:%M")?.usesPictureFields == false)
    }

    @Test func millisecondsArePaddedAndPercentSignsLeftToStrftime() {
        #expect(OverlayTemplate.millisecondsFilled("%f|%%f|%", 7) == "007|%%f|%")
    }
}
