import Testing

@testable import ShutterCamera

@Suite struct V4LConverterTests {
    @Test func knownFormatsGetTheirUsualNames() {
        #expect(V4LConverter.formatName(FourCC.code("RGB3")!) == "rgb24")
        #expect(V4LConverter.formatName(FourCC.code("BGR3")!) == "bgr24")
    }

    @Test func otherFormatsAreTheirFourCCInLowerCase() {
        #expect(V4LConverter.formatName(FourCC.code("BA81")!) == "ba81")
        // Fourccs shorter than four characters are padded with spaces, as `Y8  ` could be.
        #expect(V4LConverter.formatName(FourCC.code("Y8  ")!) == "y8")
    }
}
