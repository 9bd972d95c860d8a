package import Store
package import Telemetry

/// The jobs' metrics: jobs by status and the queue's depth (read from the store every few
/// seconds, so every instance on one store reports the same), and this instance's items and
/// finished jobs.
package struct JobMetrics: Sendable {
    /// Items answered by this instance, by kind (`map`, `reduce`, `final`).
    let items: CounterFamily
    /// Items that ended without an answer, by why (`failed`, `lost_lease`, `cancelled`, `stopped`).
    let abandoned: CounterFamily
    /// Jobs this instance finished, by how they ended.
    let finished: CounterFamily
    /// From submission to the end, of the jobs this instance finished.
    let duration: Histogram
    /// Upstream calls for jobs in flight on this instance now.
    let inFlight: Gauge

    package init(registry: MetricsRegistry) {
        items = registry.counter(
            "textgateway_job_items_total",
            help: "Job items (chunks, reduce rounds, final passes) answered by this instance.", labels: ["kind"])
        abandoned = registry.counter(
            "textgateway_job_items_abandoned_total",
            help: "Job items this instance started and left without a stored answer, by why.", labels: ["reason"]
        )
        finished = registry.counter(
            "textgateway_jobs_finished_total", help: "Jobs this instance finished, by status.", labels: ["status"])
        duration = registry.histogram(
            "textgateway_job_duration_seconds", help: "Time from a job's submission to its end.",
            buckets: [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600]
        ).labels()
        inFlight = registry.gauge(
            "textgateway_job_items_in_flight", help: "Upstream calls for jobs in flight on this instance."
        ).labels()
        let jobs = registry.gauge(
            "textgateway_jobs", help: "Jobs in the store by status (finished ones until their retention ends).",
            labels: ["status"])
        // Children made now, so every status is exposed from the start.
        let byStatus = JobStatus.allCases.map { ($0, jobs.labels($0.rawValue)) }
        let depth = registry.gauge(
            "textgateway_job_queue_depth", help: "Items of queued and running jobs not answered yet (every instance's)."
        ).labels()
        self.publish = { snapshot in
            for (status, gauge) in byStatus { gauge.set(Double(snapshot.jobs[status] ?? 0)) }
            depth.set(Double(snapshot.pendingItems))
        }
    }

    /// Shows what the store counted.
    package let publish: @Sendable (JobStatistics) -> Void
}
