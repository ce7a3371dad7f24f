import ShutterHTTP

extension RouteHandler {
    /// The same handler, showing `observe` every error it throws before the server answers it.
    func observingErrors(_ observe: @escaping @Sendable (any Error) -> Void) -> RouteHandler {
        switch self {
        case .immediate(let handler):
            return .immediate { request, parameters in
                do { return try handler(request, parameters) } catch {
                    observe(error)
                    throw error
                }
            }
        case .task(let handler):
            return .task { request, parameters in
                do { return try await handler(request, parameters) } catch {
                    observe(error)
                    throw error
                }
            }
        case .immediateOrTask(let immediate, let task):
            return .immediateOrTask(
                immediate: { request, parameters in
                    do { return try immediate(request, parameters) } catch {
                        observe(error)
                        throw error
                    }
                },
                task: { request, parameters in
                    do { return try await task(request, parameters) } catch {
                        observe(error)
                        throw error
                    }
                })
        }
    }
}
