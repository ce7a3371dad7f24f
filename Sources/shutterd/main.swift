import ShutterDaemon
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

// OpenSSL's state lives until the process ends: `exit` must not free it under a thread that is
// still hashing or writing TLS (OpenSSLProcess says why). Its first call into libcrypto decides.
OpenSSLProcess.keepStateUntilExit()

// Block termination signals before anything else starts a thread, so every thread
// inherits the mask and SIGTERM arrives only through the event loop's signalfd.
let signalDescriptor: Int32
do {
    signalDescriptor = try TerminationSignals.blockAndOpenDescriptor()
} catch {
    StandardErrorSink.shared.write("shutterd: \(error)")
    StandardErrorSink.shared.flush()
    exit(1)
}

var environment: [String: String] = [:]
var entry = environ
while let pointer = entry.pointee {
    let text = String(cString: pointer)
    if let equals = text.firstIndex(of: "=") {
        environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
    }
    entry += 1
}

do {
    switch try ConfigurationLoader.load(
        arguments: Array(CommandLine.arguments.dropFirst()), environment: environment)
    {
    case .help(let text):
        print(text, terminator: "")
        exit(0)
    case .version:
        print("shutterd \(ShutterDaemon.version)")
        exit(0)
    case .run(let configuration):
        let status = ShutterDaemon(
            configuration: configuration, signalDescriptor: signalDescriptor, environment: environment
        )
        .run()
        // Log lines go out from a thread of their own: let the last ones ("stopped") reach
        // stderr, but never wait more than a second for a stderr nobody reads.
        StandardErrorSink.shared.flush()
        exit(status)
    }
} catch {
    StandardErrorSink.shared.write("shutterd: \(error)")
    StandardErrorSink.shared.flush()
    exit(2)
}
