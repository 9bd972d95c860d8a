/// How long a text for a task may be, in characters (grapheme clusters) after trimming
/// (``TextTrim``, counted by ``CharacterCount``): shorter says too little to work on, longer
/// is a job's (`POST /api/jobs`).
package enum TextLimits {
    package static let minimumCharacters = 20
    package static let maximumCharacters = 12_000
}
