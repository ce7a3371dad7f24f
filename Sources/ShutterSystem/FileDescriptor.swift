#if canImport(Glibc)
    import Glibc
#endif

/// `close(2)` without retrying on EINTR: on Linux the descriptor is released even then,
/// and a retry could close a descriptor another thread has just been given.
@discardableResult
public func closeDescriptor(_ descriptor: Int32) -> Int32 {
    Glibc.close(descriptor)
}
