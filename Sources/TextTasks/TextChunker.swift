/// Tokens estimated from characters, with no tokenizer at hand. Persian words are short, and
/// the byte-pair tokenizers of GPT-4-era models cut Persian into pieces of about two to three
/// characters; the estimate sizes chunks, while what is charged is the provider's `usage`.
package enum TokenEstimate {
    static let charactersPerToken: Double = 2.5

    /// The tokens of `characters` characters, rounded up.
    static func tokens(characters: Int) -> Int {
        guard characters > 0 else { return 0 }
        return Int((Double(characters) / charactersPerToken).rounded(.up))
    }

    /// The characters that `tokens` tokens hold, rounded down.
    package static func characters(tokens: Int) -> Int {
        guard tokens > 0 else { return 0 }
        return Int((Double(tokens) * charactersPerToken).rounded(.down))
    }
}

/// A piece of a cleaned text. Offsets count `Character`s (grapheme clusters) of the cleaned
/// text: `start..<end` is the chunk's own part (the own parts of a text's chunks partition
/// it), `overlapStart..<start` repeats the end of the previous chunk for context, and
/// `text` is the cleaned text's `overlapStart..<end`.
package struct TextChunk: Equatable, Sendable {
    package var text: String
    package var start: Int
    package var end: Int
    var overlapStart: Int
}

/// Splits a long text into chunks a model can take, on paragraph and sentence boundaries.
///
/// A sentence ends after `.` `!` `?` `؟` `؛` or `…` (and any closing quotes or brackets right
/// after it) followed by whitespace or the end of the text, or at a line break; the
/// whitespace after it belongs to it. A paragraph ends where that whitespace holds a blank
/// line. Whole sentences are packed greedily; a chunk that must end goes back to its last
/// paragraph end if its own part stays at least half full there. Only a sentence longer than
/// the budget is cut: after the last whitespace that leaves the rest of it some text, or,
/// with none, at the budget. Everything works on `Character`s, so no cut splits one.
package struct TextChunker: Sendable {
    /// Characters a chunk holds at most, own part and overlap together.
    let budget: Int
    /// Characters of overlap at most; 0 makes the chunks an exact partition.
    let overlap: Int

    /// A budget under 1 counts as 1, and an overlap is kept under the budget, so every
    /// chunk has an own part of at least one character.
    package init(budget: Int, overlap: Int = 0) {
        self.budget = max(1, budget)
        self.overlap = min(max(0, overlap), self.budget - 1)
    }

    /// `text` with `\n` line endings, no spaces or tabs at the end of a line, no more than
    /// one blank line in a row, and no whitespace at either end. Every other character stays
    /// (ZWNJ and the other joiners and marks that Persian needs among them).
    package static func clean(_ text: String) -> String {
        var cleaned = ""
        cleaned.reserveCapacity(text.utf8.count)
        var spaces = "" // a run of spaces and tabs, kept unless a line break follows it
        var lineBreaks = 0
        for character in text {
            switch character {
            case "\n", "\r\n", "\r":
                spaces.removeAll(keepingCapacity: true)
                lineBreaks += 1
                if lineBreaks <= 2 { cleaned.append("\n") }
            case " ", "\t":
                spaces.append(character)
            default:
                if !spaces.isEmpty {
                    cleaned += spaces
                    spaces.removeAll(keepingCapacity: true)
                }
                lineBreaks = 0
                cleaned.append(character)
            }
        }
        return TextTrim.trimmed(cleaned)
    }

    /// The chunks of `cleaned` (the output of ``clean(_:)``): none for an empty text, one for
    /// a text within the budget.
    ///
    /// Chunk k > 0 starts with the trailing whole sentences of chunk k-1's own part that
    /// come to at most ``overlap`` characters, fewer where the next sentence would not fit
    /// whole beside them; its own part gets what the overlap leaves of the budget.
    package func chunks(of cleaned: String) -> [TextChunk] {
        let characters = Array(cleaned)
        let sentences = Self.sentences(of: characters)
        var chunks: [TextChunk] = []
        var previousUnits: [Unit] = []
        var units: [Unit] = []
        var sentence = 0
        var position = 0 // where the next own part starts, inside `sentences[sentence]`
        while sentence < sentences.count {
            let overlapStart = overlapStart(
                before: position, units: previousUnits, next: sentences[sentence].end - position)
            let start = position
            let ownBudget = budget - (start - overlapStart)
            units.removeAll(keepingCapacity: true)
            var paragraphEnd: (units: Int, sentence: Int)?
            while sentence < sentences.count {
                let end = sentences[sentence].end
                if end - start <= ownBudget {
                    units.append(Unit(start: position, whole: position == sentences[sentence].start))
                    position = end
                    sentence += 1
                    if sentences[sentence - 1].endsParagraph, 2 * (position - start) >= ownBudget {
                        paragraphEnd = (units.count, sentence)
                    }
                    continue
                }
                if units.isEmpty {
                    units.append(Unit(start: position, whole: false))
                    position = Self.cut(
                        characters, from: position, limit: start + ownBudget, textEnd: sentences[sentence].textEnd)
                } else if let paragraphEnd, paragraphEnd.units < units.count {
                    units.removeSubrange(paragraphEnd.units...)
                    sentence = paragraphEnd.sentence
                    position = sentences[sentence].start
                }
                break
            }
            chunks.append(
                TextChunk(
                    text: String(characters[overlapStart..<position]), start: start, end: position,
                    overlapStart: overlapStart))
            swap(&previousUnits, &units)
        }
        return chunks
    }

    /// A sentence, or the part of one, in a chunk's own part; it runs to the next unit's start.
    private struct Unit {
        var start: Int
        /// Whether it is a whole sentence: only whole sentences are repeated as overlap.
        var whole: Bool
    }

    /// Where the overlap of a chunk whose own part starts at `position` starts: at the
    /// earliest of the previous chunk's trailing whole sentences (`units`, which end at
    /// `position`) that fit in ``overlap``, and late enough that `next` characters of the
    /// next sentence fit whole beside it when they fit the budget alone.
    private func overlapStart(before position: Int, units: [Unit], next: Int) -> Int {
        guard overlap > 0 else { return position }
        var taken = units.count
        while taken > 0, units[taken - 1].whole, position - units[taken - 1].start <= overlap { taken -= 1 }
        while taken < units.count, next <= budget, position - units[taken].start + next > budget { taken += 1 }
        return taken < units.count ? units[taken].start : position
    }

    struct Sentence: Equatable {
        var start: Int
        /// Where its trailing whitespace starts.
        var textEnd: Int
        var end: Int
        /// Whether a blank line, or the end of the text, follows it.
        var endsParagraph: Bool
    }

    /// The sentences of `characters`, back to back from the first to the last character.
    static func sentences(of characters: [Character]) -> [Sentence] {
        var sentences: [Sentence] = []
        var start = 0
        var index = 0
        while index < characters.count {
            let character = characters[index]
            index += 1
            var lineBreaks = 0
            if character.isNewline {
                lineBreaks = 1
            } else if isTerminator(character) {
                var next = index
                while next < characters.count, isCloser(characters[next]) { next += 1 }
                guard next == characters.count || characters[next].isWhitespace else { continue }
                index = next
            } else {
                continue
            }
            var textEnd = index - lineBreaks // before the line break, and the spaces before it
            while textEnd > start, characters[textEnd - 1].isWhitespace { textEnd -= 1 }
            while index < characters.count, characters[index].isWhitespace {
                if characters[index].isNewline { lineBreaks += 1 }
                index += 1
            }
            sentences.append(
                Sentence(
                    start: start, textEnd: textEnd, end: index,
                    endsParagraph: lineBreaks >= 2 || index == characters.count))
            start = index
        }
        if start < characters.count {
            var textEnd = characters.count
            while textEnd > start, characters[textEnd - 1].isWhitespace { textEnd -= 1 }
            sentences.append(Sentence(start: start, textEnd: textEnd, end: characters.count, endsParagraph: true))
        }
        return sentences
    }

    /// Where to cut a sentence too long for the chunk that starts it, in `start..<limit`:
    /// after the last whitespace before `limit` that leaves some of the sentence's text
    /// (which ends at `textEnd`) after it, so no later piece is whitespace alone; with none,
    /// at `limit`, or one character before the sentence's text ends when that comes first.
    private static func cut(_ characters: [Character], from start: Int, limit: Int, textEnd: Int) -> Int {
        var index = min(limit, textEnd) - 1
        while index > start {
            if characters[index].isWhitespace { return index + 1 }
            index -= 1
        }
        return textEnd - 1 > start ? min(limit, textEnd - 1) : limit
    }

    private static func isTerminator(_ character: Character) -> Bool {
        switch character {
        case ".", "!", "?", "؟", "؛", "…": return true
        default: return false
        }
    }

    /// What may close a quotation or an aside right after a sentence's last mark.
    private static func isCloser(_ character: Character) -> Bool {
        switch character {
        case "»", "\"", "'", ")", "]", "”", "’": return true
        default: return false
        }
    }
}
