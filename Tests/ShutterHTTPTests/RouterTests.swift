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

@Suite struct RouterEndpointTests {
    @Test func endpointsListEveryRouteInOrder() {
        var router = Router()
        let ok = RouteHandler.immediate { _, _ in HTTPResponse() }
        router.add(.post, "/snap", ok)
        router.add(.get, "/media/{id}.jpg", ok)
        #expect(router.endpoints == ["POST /snap", "GET /media/{id}.jpg"])
    }
}
