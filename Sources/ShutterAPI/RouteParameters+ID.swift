import ShutterHTTP

extension RouteParameters {
    /// The `{id}` segment as a resource id: a positive decimal number without sign or leading
    /// zero, else 404 (there is no such `resource`), so `/library/007` is not `/library/7`.
    func positiveID(of resource: String) throws -> Int64 {
        guard let text = self["id"], let id = Int64(text), id > 0, text.first != "+", text.first != "0"
        else {
            throw HTTPError(
                .notFound,
                detail: "no \(resource) with id '\(self["id"] ?? "")'; ids are positive whole numbers")
        }
        return id
    }
}
