public import Foundation

/// The gateway's answer to ``TextGatewayClient/submitJob(_:text:tone:format:idempotencyKey:)``.
public struct JobSubmission: Sendable, Hashable, Decodable {
    /// The job's id, for ``TextGatewayClient/job(id:)`` and ``TextGatewayClient/jobEvents(id:)``.
    public var jobId: String
    /// `queued`.
    public var status: JobStatus
}

/// Where a job is in its life.
public enum JobStatus: String, Sendable, Hashable, CaseIterable, Decodable {
    /// Waiting for a worker.
    case queued
    /// Its chunks are being processed.
    case running
    /// Done; ``Job/result`` holds the answer.
    case succeeded
    /// Ended in an error; ``Job/error`` says which.
    case failed
    /// Cancelled by ``TextGatewayClient/cancelJob(id:)``.
    case cancelled

    /// Whether the job has ended (succeeded, failed or cancelled).
    public var isFinished: Bool { self == .succeeded || self == .failed || self == .cancelled }
}

/// A job's steps: chunks answered and all the calls it needs.
public struct JobProgress: Sendable, Hashable, Decodable {
    /// Steps done.
    public var done: Int
    /// Steps in all (grows while the job plans its combining rounds).
    public var total: Int
}

/// Why a job failed.
public struct JobFailure: Sendable, Hashable, Decodable {
    /// The stable error code (as in ``TextGatewayError/code``).
    public var code: String
    /// The human message.
    public var message: String
}

/// A long text's job, from `GET /api/jobs/{id}`.
public struct Job: Sendable, Hashable {
    /// The job's id.
    public var jobId: String
    /// Where it is.
    public var status: JobStatus
    /// Its task.
    public var task: TextTask
    /// Steps done and in all.
    public var progress: JobProgress
    /// The answer, once ``status`` is ``JobStatus/succeeded``.
    public var result: String?
    /// The typed answer, when submitted with ``OutputFormat/json``.
    public var data: StructuredData?
    /// Tokens used so far.
    public var usage: Usage?
    /// What its answers cost so far, in millionths of the currency's unit; nil when not known.
    public var costMicros: Int?
    /// Why it failed, when ``status`` is ``JobStatus/failed``.
    public var error: JobFailure?
    /// When it was submitted.
    public var createdAt: Date?
    /// When it last changed.
    public var updatedAt: Date?
}

extension Job: Decodable {
    private enum CodingKeys: String, CodingKey {
        case jobId, status, task, progress, result, data, usage, costMicros, error, createdAt, updatedAt
    }

    /// Decodes the gateway's job JSON; `data` is read by the job's task.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        jobId = try container.decode(String.self, forKey: .jobId)
        status = try container.decode(JobStatus.self, forKey: .status)
        task = try container.decode(TextTask.self, forKey: .task)
        progress = try container.decodeIfPresent(JobProgress.self, forKey: .progress) ?? JobProgress(done: 0, total: 0)
        result = try container.decodeIfPresent(String.self, forKey: .result)
        data = try container.decodeIfPresent(StructuredDataWire.self, forKey: .data)?.value(for: task)
        usage = try container.decodeIfPresent(Usage.self, forKey: .usage)
        costMicros = try container.decodeIfPresent(Int.self, forKey: .costMicros)
        error = try container.decodeIfPresent(JobFailure.self, forKey: .error)
        createdAt = try container.decodeIfPresent(Date.self, forKey: .createdAt)
        updatedAt = try container.decodeIfPresent(Date.self, forKey: .updatedAt)
    }
}

/// One event of ``TextGatewayClient/jobEvents(id:)``.
public enum JobEvent: Sendable, Hashable {
    /// The job's steps changed.
    case progress(done: Int, total: Int)
    /// The job succeeded: the last event.
    case done(Job)
}

/// One event of ``TextGatewayClient/stream(_:text:tone:format:idempotencyKey:)``: `start`, any number of
/// `delta`, then `done`. A failure after `start` is thrown as ``TextGatewayError``.
public enum StreamEvent: Sendable, Hashable {
    /// The gateway took the request; its id.
    case start(requestId: String)
    /// A new piece of the answer, and all of the answer so far.
    case delta(String, text: String)
    /// The whole answer: the last event.
    case done(ProcessResult)
}
