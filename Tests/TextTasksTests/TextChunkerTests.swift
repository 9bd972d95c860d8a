import TestSupport
import Testing

@testable import TextTasks

@Suite("Chunking long texts")
struct TextChunkerTests {
    static let persian = """
        امروز جلسه¦ی شورای شهر برگزار شد. در این جلسه دربارهٔ بودجهٔ سال ۱۴۰۳ گفت¦وگو شد؛ اعضا با افزایش ۱۲ درصدی \
        موافقت کردند. آیا این افزایش کافی است؟ کارشناسان می¦گویند نه!

        شهردار گفت: «پروژهٔ مترو تا پایان سال تمام می¦شود.» او افزود که ۳۵۰ میلیارد تومان برای آن کنار گذاشته شده \
        است… اما منتقدان تردید دارند.
        خط دوم این پاراگراف بدون نقطه پایان می¦یابد
        و این خط سوم است.

        پاراگراف آخر کوتاه است.
        """.replacingOccurrences(of: "¦", with: "\u{200C}")

    static let mixed = """
        The API returned 3.14 seconds on average. خانواده 👨‍👩‍👧‍👦 و دست 👍🏽 و پرچم 🇮🇷🇺🇸 در متن آمده¦اند! \
        بِسْمِ اللَّهِ الرَّحْمَٰنِ الرَّحِيمِ؛ و این یک جملهٔ عربی با اعراب است. Version 2.0.1 is out?
        Yes: see https://example.com/a.b?c=d… and then 👩🏾‍💻👩🏾‍💻👩🏾‍💻👩🏾‍💻👩🏾‍💻👩🏾‍💻👩🏾‍💻👩🏾‍💻👩🏾‍💻👩🏾‍💻 without spaces.

        کلمه¦ای‌بسیار‌بلند‌بدون‌فاصله‌که‌فقط‌با‌نیم‌فاصله‌به‌هم‌چسبیده‌است‌و‌هیچ‌جای‌بریدن‌ندارد و بعد.
        """.replacingOccurrences(of: "¦", with: "\u{200C}")

    /// One sentence far longer than the budgets below, with spaces to cut at.
    static let longSentence =
        String(repeating: "این عبارت بلند هیچ نقطه¦ای ندارد و ادامه می¦یابد ", count: 30)
        .replacingOccurrences(of: "¦", with: "\u{200C}") + "تا اینجا."

    /// Texts with no whitespace at all for long stretches: cuts fall at the budget.
    static let unbroken =
        String(repeating: "👨‍👩‍👧‍👦", count: 50) + String(repeating: "مِ", count: 60) + "."
        + String(repeating: "🇮🇷", count: 30)

    static let texts = [
        persian, mixed, longSentence, unbroken, "کوتاه.", "a", persian + "\n\n" + mixed + "\n\n" + longSentence,
    ]
    static let settings: [(budget: Int, overlap: Int)] = [
        (1, 0), (2, 1), (7, 0), (7, 3), (16, 0), (16, 8), (40, 0), (40, 15), (100, 0), (100, 30), (120, 60), (200, 100),
        (300, 60), (10_000, 200),
    ]

    /// What a chunking did, so a table can show that it exercised overlaps and cuts.
    struct Exercised {
        var overlaps = 0
        var cuts = 0
        static func += (left: inout Exercised, right: Exercised) {
            left.overlaps += right.overlaps
            left.cuts += right.cuts
        }
    }

    /// Every property a chunking must have, checked for `text` cut with `chunker`.
    @discardableResult
    static func checkInvariants(
        _ text: String, _ chunker: TextChunker, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Exercised {
        let cleaned = TextChunker.clean(text)
        let characters = Array(cleaned)
        let chunks = chunker.chunks(of: cleaned)
        let label = "budget \(chunker.budget), overlap \(chunker.overlap), text of \(characters.count)"
        #expect(chunks.isEmpty == characters.isEmpty, "\(label)", sourceLocation: sourceLocation)
        var exercised = Exercised()
        guard !chunks.isEmpty else { return exercised }
        if characters.count <= chunker.budget {
            #expect(chunks.count == 1, "\(label)", sourceLocation: sourceLocation)
        }
        let sentences = TextChunker.sentences(of: characters)
        let sentenceStarts = Set(sentences.map(\.start))
        var own = ""
        var expectedStart = 0
        for (index, chunk) in chunks.enumerated() {
            #expect(chunk.start == expectedStart, "\(label), chunk \(index)", sourceLocation: sourceLocation)
            #expect(chunk.start < chunk.end, "\(label), chunk \(index) is empty", sourceLocation: sourceLocation)
            #expect(chunk.overlapStart <= chunk.start, "\(label), chunk \(index)", sourceLocation: sourceLocation)
            #expect(
                chunk.start - chunk.overlapStart <= chunker.overlap, "\(label), chunk \(index)",
                sourceLocation: sourceLocation)
            #expect(
                !chunk.text.isEmpty && chunk.text.count <= chunker.budget,
                "\(label), chunk \(index): \(chunk.text.count)", sourceLocation: sourceLocation)
            guard chunk.start < chunk.end, chunk.end <= characters.count, chunk.overlapStart >= 0 else {
                return exercised
            }
            if chunk.overlapStart < chunk.start { exercised.overlaps += 1 }
            // The text is the cleaned text's range, and re-segmented it has the same Characters:
            // no cluster was split.
            #expect(
                Array(chunk.text) == Array(characters[chunk.overlapStart..<chunk.end]), "\(label), chunk \(index)",
                sourceLocation: sourceLocation)
            if index > 0 {
                // The overlap is whole sentences from the previous chunk's own part.
                #expect(
                    chunk.overlapStart >= chunks[index - 1].start, "\(label), chunk \(index)",
                    sourceLocation: sourceLocation)
                #expect(
                    chunk.overlapStart == chunk.start || sentenceStarts.contains(chunk.overlapStart),
                    "\(label), chunk \(index)", sourceLocation: sourceLocation)
            } else {
                #expect(chunk.overlapStart == chunk.start, sourceLocation: sourceLocation)
            }
            if chunker.overlap == 0 { #expect(chunk.overlapStart == chunk.start, sourceLocation: sourceLocation) }
            // An end inside a sentence only for a sentence longer than the budget.
            if chunk.end < characters.count, !sentenceStarts.contains(chunk.end) {
                let cut = sentences.first { $0.start < chunk.end && chunk.end < $0.end }
                exercised.cuts += 1
                #expect(
                    cut.map { $0.end - $0.start > chunker.budget } == true,
                    "\(label), chunk \(index) ends inside a sentence", sourceLocation: sourceLocation)
            }
            own += String(characters[chunk.start..<chunk.end])
            expectedStart = chunk.end
        }
        #expect(expectedStart == characters.count, "\(label)", sourceLocation: sourceLocation)
        #expect(own == cleaned, "\(label)", sourceLocation: sourceLocation)
        return exercised
    }

    @Test("Persian and mixed texts through budgets and overlaps keep every invariant")
    func invariantsOnTable() {
        var exercised = Exercised()
        for text in Self.texts {
            for setting in Self.settings {
                exercised += Self.checkInvariants(text, TextChunker(budget: setting.budget, overlap: setting.overlap))
            }
        }
        #expect(
            exercised.overlaps >= 20 && exercised.cuts >= 100, "overlaps \(exercised.overlaps), cuts \(exercised.cuts)")
    }

    @Test("random mixes of words, marks, emoji and breaks keep every invariant")
    func invariantsOnRandomTexts() {
        let pieces = [
            "کتاب", "می\u{200C}خواند", "ها", " ", " ", " ", "  ", "\t", ".", "؟", "!", ". ", "؟ ", "! ", "؛ ", "?", "؛",
            "…", "»", "«", "\n", "\n\n",
            "\r\n", "\n \n", "3.5", "۱۴۰۳", "word", "👨‍👩‍👧‍👦", "👍🏽", "🇮🇷", "مِ", "\u{301}", "\u{200C}", "e\u{301}", "x",
        ]
        var generator = SeededGenerator(state: 0x9E37_79B9_7F4A_7C15)
        var exercised = Exercised()
        for _ in 0..<300 {
            var text = ""
            for _ in 0..<(1 + generator.next() % 120) { text += pieces[generator.next() % pieces.count] }
            let budget = 1 + generator.next() % 60
            exercised += Self.checkInvariants(
                text, TextChunker(budget: budget, overlap: generator.next() % (budget + 3)))
        }
        #expect(
            exercised.overlaps >= 100 && exercised.cuts >= 100, "overlaps \(exercised.overlaps), cuts \(exercised.cuts)"
        )
    }

    @Test("an empty text has no chunk, a text within the budget is one chunk")
    func emptyAndSmall() {
        #expect(TextChunker(budget: 10).chunks(of: "").isEmpty)
        let text = "سلام. خوبی؟"
        #expect(
            TextChunker(budget: text.count, overlap: 4).chunks(of: text) == [
                TextChunk(text: text, start: 0, end: text.count, overlapStart: 0)
            ])
    }

    @Test("sentences end after their marks and closing quotes, at line breaks, and keep the whitespace after them")
    func sentenceBoundaries() {
        func split(_ text: String) -> [String] {
            let characters = Array(text)
            return TextChunker.sentences(of: characters).map { String(characters[$0.start..<$0.end]) }
        }
        #expect(split("یک. دو؟ سه! four? پنج؛ شش… هفت") == ["یک. ", "دو؟ ", "سه! ", "four? ", "پنج؛ ", "شش… ", "هفت"])
        #expect(split("عدد 3.14 و نسخهٔ 2.0.1 یک جمله\u{200C}اند.") == ["عدد 3.14 و نسخهٔ 2.0.1 یک جمله\u{200C}اند."])
        #expect(split("او گفت: «تمام شد.» بعد رفت.") == ["او گفت: «تمام شد.» ", "بعد رفت."])
        #expect(split("خط اول\nخط دوم\n\nپاراگراف") == ["خط اول\n", "خط دوم\n\n", "پاراگراف"])
        let characters = Array("یک.\n\nدو. سه.")
        #expect(TextChunker.sentences(of: characters).map(\.endsParagraph) == [true, false, true])
    }

    @Test("a chunk that must end goes back to a paragraph end when it stays half full")
    func prefersParagraphEnds() {
        // 11 + 6 characters fit a budget of 20 and the next 7 do not: the chunk goes back to
        // the paragraph end after 11, at least half of 20.
        let chunker = TextChunker(budget: 20)
        #expect(chunker.chunks(of: "یک دو سه.\n\nچهار. پنج شش.").map(\.text) == ["یک دو سه.\n\n", "چهار. پنج شش."])
        // A paragraph end after 5 characters is under half: the chunk packs on past it.
        #expect(chunker.chunks(of: "یک.\n\nدو سه چهار. پنج شش.").map(\.text) == ["یک.\n\nدو سه چهار. ", "پنج شش."])
    }

    @Test("a sentence longer than the budget is cut after its last space within the budget")
    func cutsLongSentencesAtSpaces() {
        let chunks = TextChunker(budget: 12).chunks(of: "یک دو سه چهار پنج شش هفت هشت")
        #expect(chunks.map(\.text) == ["یک دو سه ", "چهار پنج شش ", "هفت هشت"])
        let unbroken = String(repeating: "👨‍👩‍👧‍👦", count: 10)
        #expect(TextChunker(budget: 4).chunks(of: unbroken).map { $0.text.count } == [4, 4, 2])
    }

    @Test("the overlap repeats the previous chunk's last whole sentences")
    func overlapRepeatsSentences() {
        let text = "یک. دو. سه. چهار. پنج. شش."
        let chunks = TextChunker(budget: 12, overlap: 5).chunks(of: text)
        // "چهار. " (6 characters) is longer than the overlap: the third chunk starts without one.
        #expect(chunks.map(\.text) == ["یک. دو. سه. ", "سه. چهار. ", "پنج. شش."])
        let wider = TextChunker(budget: 12, overlap: 6).chunks(of: text)
        #expect(wider.map(\.text) == ["یک. دو. سه. ", "سه. چهار. ", "چهار. پنج. ", "پنج. شش."])
        #expect(wider.map(\.start) == [0, 12, 18, 23])
        #expect(
            TextChunker(budget: 12, overlap: 0).chunks(of: text).map(\.text) == ["یک. دو. سه. ", "چهار. پنج. ", "شش."])
    }

    @Test("cleaning normalises line endings, trailing spaces and blank-line runs, and keeps ZWNJ")
    func cleaning() {
        #expect(TextChunker.clean("یک\r\nدو\rسه\n") == "یک\nدو\nسه")
        #expect(TextChunker.clean("  خط اول  \t\nخط دوم \n") == "خط اول\nخط دوم")
        #expect(TextChunker.clean("الف\n\n\n\nب\n \n\t\n\nپ\n\nت") == "الف\n\nب\n\nپ\n\nت")
        #expect(TextChunker.clean("می\u{200C}شود   و  نمی\u{200C}شود") == "می\u{200C}شود   و  نمی\u{200C}شود")
        #expect(TextChunker.clean("👨‍👩‍👧‍👦 \r\n\r\n\r\nمِ ") == "👨‍👩‍👧‍👦\n\nمِ")
        #expect(TextChunker.clean(" \n\t ").isEmpty)
    }

    @Test("a text of 200,000 characters is chunked in one pass")
    func longText() {
        let block = Self.persian + "\n\n" + Self.mixed + "\n\n"
        let text = String(repeating: block, count: 200_000 / block.count + 1)
        let cleaned = TextChunker.clean(text)
        let chunker = TextChunker(budget: TokenEstimate.characters(tokens: 3_000), overlap: 300)
        let chunks = chunker.chunks(of: cleaned)
        #expect(chunks.count > 20)
        #expect(chunks.last?.end == cleaned.count)
    }

    @Test("token estimates round up to tokens and down to characters")
    func tokenEstimate() {
        #expect(TokenEstimate.tokens(characters: 0) == 0)
        #expect(TokenEstimate.tokens(characters: 1) == 1)
        #expect(TokenEstimate.tokens(characters: 5) == 2)
        #expect(TokenEstimate.tokens(characters: 6) == 3)
        #expect(TokenEstimate.characters(tokens: 3) == 7)
        #expect(TokenEstimate.characters(tokens: 1_000) == 2_500)
    }
}
