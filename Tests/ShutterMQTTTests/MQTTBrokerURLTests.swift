import ShutterMQTT
import Testing

@Suite struct MQTTBrokerURLTests {
    @Test func credentialsHostAndPortAreRead() throws {
        let url = try MQTTBrokerURL("mqtt://shutter:s3cret@broker.lan:1884")
        #expect(
            url == MQTTBrokerURL.expected(secure: false, host: "broker.lan", port: 1884, "shutter", "s3cret"))
    }

    @Test func defaultPortsFollowTheScheme() throws {
        #expect(try MQTTBrokerURL("mqtt://broker").port == 1883)
        let secure = try MQTTBrokerURL("mqtts://broker/")
        #expect(secure.secure && secure.port == 8883 && secure.username == nil && secure.password == nil)
    }

    @Test func aPasswordMayHoldAtSignsAndEscapes() throws {
        let url = try MQTTBrokerURL("mqtt://me:p@ss%3Aw%2Fd@127.0.0.1:1883")
        #expect(url.username == "me" && url.password == "p@ss:w/d" && url.host == "127.0.0.1")
    }

    @Test func ipv6HostsAreBracketed() throws {
        let url = try MQTTBrokerURL("mqtt://[::1]:1999")
        #expect(url.host == "::1" && url.port == 1999)
        #expect(url.description == "mqtt://[::1]:1999")
    }

    @Test func theDescriptionNeverShowsThePassword() throws {
        let url = try MQTTBrokerURL("mqtts://shutter:hunter2@broker:8883")
        #expect(url.description == "mqtts://shutter:***@broker:8883")
        #expect(!"\(url)".contains("hunter2"))
    }

    @Test(arguments: [
        "http://broker", "mqtt://", "mqtt://broker:0", "mqtt://broker:99999", "mqtt://broker:port",
        "mqtt://broker/topic", "mqtt://broker?x=1", "mqtt://[::1", "mqtt://user:bad%zzpass@broker",
    ])
    func malformedURLsAreRefused(_ text: String) {
        #expect(throws: MQTTConfigurationError.self) { try MQTTBrokerURL(text) }
    }

    @Test func aRefusalDoesNotRepeatThePassword() {
        do {
            _ = try MQTTBrokerURL("mqtt://user:topsecret%zz@broker")
            Issue.record("accepted")
        } catch {
            #expect(!error.description.contains("topsecret"))
            #expect(error.description.contains("password"))
        }
    }
}

extension MQTTBrokerURL {
    fileprivate static func expected(
        secure: Bool, host: String, port: Int, _ username: String?, _ password: String?
    ) -> MQTTBrokerURL {
        var url = try! MQTTBrokerURL(secure ? "mqtts://x" : "mqtt://x")
        url.host = host
        url.port = port
        url.username = username
        url.password = password
        return url
    }
}
