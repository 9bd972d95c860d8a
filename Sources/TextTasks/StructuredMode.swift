/// How an upstream is asked for `format: json` output (`UPSTREAM_<NAME>_STRUCTURED`).
package enum StructuredMode: String, Sendable, Equatable {
    /// `response_format` with the task's JSON schema, strict (the default).
    case jsonSchema = "json_schema"
    /// `response_format: {"type": "json_object"}`, the shape described in the prompt.
    case jsonObject = "json_object"
    /// No `response_format`: the shape described in the prompt only.
    case prompt
}
