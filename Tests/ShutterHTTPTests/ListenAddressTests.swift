import ShutterHTTP
import Testing

@Suite struct ListenAddressTests {
    @Test func tcpAndUnixAddressesParse() {
        #expect(ListenAddress("127.0.0.1:8080") == .tcp(host: "127.0.0.1", port: 8080))
        #expect(ListenAddress("[::1]:0") == .tcp(host: "[::1]", port: 0))
        #expect(ListenAddress("unix:/run/shutterd.sock") == .unix(path: "/run/shutterd.sock"))
        for bad in [
            "", "8080", ":8080", "host:99999", "unix:relative.sock",
            "unix:/" + String(repeating: "a", count: 120),
        ] {
            #expect(ListenAddress(bad) == nil, "\(bad)")
        }
    }

    @Test func onlyLoopbackAndUnixSocketsStayOnThisMachine() {
        #expect(ListenAddress("127.0.0.1:1")!.isLoopback)
        #expect(ListenAddress("127.8.9.10:1")!.isLoopback)
        #expect(ListenAddress("[::1]:1")!.isLoopback)
        #expect(ListenAddress("unix:/tmp/s")!.isLoopback)
        #expect(!ListenAddress("0.0.0.0:1")!.isLoopback)
        #expect(!ListenAddress("[::]:1")!.isLoopback)
        #expect(!ListenAddress("192.168.1.2:1")!.isLoopback)
    }
}
