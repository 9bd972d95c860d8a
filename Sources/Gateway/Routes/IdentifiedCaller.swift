import Access

extension RequestContext {
    /// The caller of a route that serves only identified callers (their own rows): `401`
    /// for a guest.
    func identifiedCaller() throws(GatewayError) -> Caller {
        guard let caller else { throw .unauthorized }
        return caller
    }
}
