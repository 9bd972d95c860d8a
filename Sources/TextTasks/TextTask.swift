/// The text tasks a client can ask for (`task` in the request body).
package enum TextTask: String, CaseIterable, Sendable {
    case summarize
    case rewrite
    case keyPoints = "key-points"
    case titles

    /// The task instruction of the system prompt: four lines (docs/prompts.md).
    var instructionLines: [String] {
        PromptText.instructions[rawValue] ?? []
    }

    /// Titles are creative; everything else stays close to the text.
    package var temperature: Double {
        self == .titles ? 0.7 : 0.2
    }

    /// The variable that overrides `DARVAREH_MODEL_ID` for this task.
    package var modelVariable: String {
        switch self {
        case .summarize: return "SUMMARY_MODEL_ID"
        case .rewrite: return "REWRITE_MODEL_ID"
        case .keyPoints: return "EXTRACTION_MODEL_ID"
        case .titles: return "CREATIVE_MODEL_ID"
        }
    }
}

/// The optional tone (`tone` in the request body); each adds one line to the instruction.
package enum Tone: String, CaseIterable, Sendable {
    case formal, friendly, academic, short, promotional, social

    var instructionLine: String {
        switch self {
        case .formal: return "لحن متن خروجی رسمی و مؤدبانه باشد."
        case .friendly: return "لحن متن خروجی دوستانه و صمیمی باشد."
        case .academic: return "لحن متن خروجی علمی و دانشگاهی باشد."
        case .short: return "پاسخ تا حد امکان کوتاه و فشرده باشد."
        case .promotional: return "لحن متن خروجی تبلیغاتی و ترغیب‌کننده باشد."
        case .social: return "لحن متن خروجی مناسب شبکه‌های اجتماعی باشد."
        }
    }
}
