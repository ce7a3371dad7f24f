import CFuzzerDriver

#if canImport(Glibc)
    import Glibc
#endif

/// Hands the process to libFuzzer: it reads its flags from the command line and calls
/// `testOneInput` with each input until told to stop, then this exits with its status.
///
/// SwiftPM links an executable target with `main` bound to the target's own top-level code, so
/// libFuzzer's `main` never runs; the top-level code calls this instead.
public func runLibFuzzer(_ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
}

/// Copies libFuzzer's input into an array (an empty input may come with a nil pointer).
public func fuzzInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> [UInt8] {
    guard let start, count > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: start, count: count))
}

/// Stops the run with a message libFuzzer reports as a crash, keeping the input that broke `rule`.
public func invariant(_ condition: @autoclosure () -> Bool, _ rule: @autoclosure () -> String) {
    if !condition() { fatalError("invariant broken: \(rule())") }
}

/// A deterministic sequence of numbers from one input's bytes, so a rerun of a saved input takes
/// the same decisions (how to split it, which limits to use).
public struct InputDerivedRandom {
    private var state: UInt64

    /// Seeds from the bytes' FNV-1a hash; never zero, which xorshift cannot leave.
    public init(_ bytes: [UInt8]) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        state = hash == 0 ? 1 : hash
    }

    /// The next number of a xorshift64 sequence.
    public mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }

    /// A number in `range`.
    public mutating func next(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }
}
