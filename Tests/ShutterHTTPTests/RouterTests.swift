import ShutterHTTP
import Testing

@Suite struct RouterTests {
    private func router() -> Router {
        var router = Router()
        let ok = RouteHandler.immediate { _, _ in HTTPResponse() }
        router.add(.get, "/library", ok)
        router.add(.get, "/library/{id}", ok)
        router.add(.delete, "/library/{id}", ok)
        router.add(.get, "/media/{id}.jpg", ok)
        router.add(.post, "/snap", ok)
        return router
    }

    private func parameters(_ resolution: Router.Resolution) -> RouteParameters? {
        if case .handler(_, let parameters, _, _) = resolution { return parameters }
        return nil
    }

    @Test func literalAndParameterRoutes() {
        let router = router()
        #expect(parameters(router.resolve(method: .get, path: "/library")) == RouteParameters())
        #expect(
            parameters(router.resolve(method: .get, path: "/library/42")) == RouteParameters(["id": "42"]))
        #expect(
            parameters(router.resolve(method: .delete, path: "/library/7")) == RouteParameters(["id": "7"]))
    }

    @Test func parameterWithSuffix() {
        let router = router()
        #expect(
            parameters(router.resolve(method: .get, path: "/media/12.jpg")) == RouteParameters(["id": "12"]))
        // The suffix alone, or another suffix, is not a match.
        guard case .notFound = router.resolve(method: .get, path: "/media/.jpg") else {
            Issue.record("empty parameter matched")
            return
        }
        guard case .notFound = router.resolve(method: .get, path: "/media/12.png") else {
            Issue.record("wrong suffix matched")
            return
        }
    }

    @Test func headUsesGetRoutes() {
        #expect(
            parameters(router().resolve(method: .head, path: "/library/3")) == RouteParameters(["id": "3"]))
    }

    @Test func wrongMethodListsAllowed() {
        guard case .methodNotAllowed(let allowed) = router().resolve(method: .put, path: "/library/3") else {
            Issue.record("expected 405")
            return
        }
        #expect(Set(allowed) == [.get, .head, .delete])
        guard case .methodNotAllowed(let snapAllowed) = router().resolve(method: .get, path: "/snap") else {
            Issue.record("expected 405")
            return
        }
        #expect(snapAllowed == [.post])
    }

    @Test func unknownPathsAndTrailingSlashes() {
        for path in ["/", "/nothing", "/library/", "/library/1/2", "/media", "/snap/"] {
            guard case .notFound = router().resolve(method: .get, path: path) else {
                Issue.record("\(path) should be 404")
                continue
            }
        }
    }
}

@Suite struct RouterCandidateTests {
    /// Routes are looked up by their first segment; a pattern that starts with a parameter, and
    /// the root, must still be found, and the first route added still wins.
    @Test func rootParameterFirstAndOrderAreKept() {
        var router = Router()
        let ok = RouteHandler.immediate { _, _ in HTTPResponse() }
        router.add(.get, "/", scope: .view, ok)
        router.add(.get, "/{name}.txt", scope: .snap, ok)
        router.add(.get, "/library", scope: .view, ok)
        router.add(.post, "/{name}", scope: .admin, ok)
        router.add(.get, "/{name}", scope: .view, ok)
        func resolved(_ method: HTTPMethod, _ path: String) -> (String, RouteParameters)? {
            guard case .handler(_, let parameters, _, let route) = router.resolve(method: method, path: path)
            else { return nil }
            return (route, parameters)
        }
        #expect(resolved(.get, "/")?.0 == "/")
        #expect(resolved(.get, "/notes.txt")?.0 == "/{name}.txt")
        #expect(resolved(.get, "/notes.txt")?.1 == RouteParameters(["name": "notes"]))
        // "/library" is listed under its literal and also matches "/{name}": the earlier wins.
        #expect(resolved(.get, "/library")?.0 == "/library")
        #expect(resolved(.post, "/library")?.0 == "/{name}")
        #expect(resolved(.get, "/other")?.0 == "/{name}")
        guard case .methodNotAllowed(let allowed) = router.resolve(method: .delete, path: "/library") else {
            Issue.record("expected 405")
            return
        }
        #expect(Set(allowed) == [.get, .head, .post])
    }
}

@Suite struct RouterEndpointTests {
    @Test func endpointsListEveryRouteInOrder() {
        var router = Router()
        let ok = RouteHandler.immediate { _, _ in HTTPResponse() }
        router.add(.post, "/snap", ok)
        router.add(.get, "/media/{id}.jpg", ok)
        #expect(router.endpoints == ["POST /snap", "GET /media/{id}.jpg"])
    }
}
