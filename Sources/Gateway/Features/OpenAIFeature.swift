/// The OpenAI-compatible routes, `GET /v1/models` and `POST /v1/chat/completions`, which take
/// an SDK's placeholder key as a guest on an open gateway.
struct OpenAIFeature: GatewayFeature {
    let parts: GatewayParts
    let admission: CallerFront
    let idempotency: IdempotencyFeature

    var routes: [Route] {
        let configuration = parts.configuration
        let caller: [any Middleware] = [
            admission.caller(required: configuration.requiresTokens, placeholderGuests: true)
        ]
        let chat = admission.limits(
            .chat(maximumMessages: configuration.maxMessages, maximumChoices: configuration.maxChoices))
        return [
            Route(
                method: .GET, path: "/v1/models", middleware: caller + admission.limits(.none),
                handler: ModelsRoute(aliases: configuration.effectiveModelAliases)),
            Route(
                method: .POST, path: "/v1/chat/completions",
                middleware: caller + chat + [ContentEncodingMiddleware(), idempotency.middleware(.chat)],
                handler: ChatCompletionsRoute(
                    pool: parts.pool, configuration: configuration, streams: parts.streams, logger: parts.logger
                )),
        ]
    }
}
