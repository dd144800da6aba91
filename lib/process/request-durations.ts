import type { Metric } from 'prom-client'

interface Series {
  labels: { method: string, route: string, status_code: number }
  /** Observations per bucket, not cumulative; the last counts what is past every bound. */
  counts: Float64Array
  sum: number
  count: number
}

/**
 * A Prometheus histogram of request durations by method, route template and status, kept for
 * the hot path: prom-client's Histogram validates and hashes its labels on every observation,
 * four times the CPU of an observation here, which finds its series by one string key
 * (docs/performance.md, "Libraries").
 * It answers prom-client's registry as its own metrics do (`get()`, the same names and labels,
 * `_bucket`, `_sum` and `_count`), so that the registry writes it and, under WORKERS,
 * prom-client's AggregatorRegistry sums it with the others.
 */
export class RequestDurations {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  readonly #series = new Map<string, Series>()

  readonly name: string
  readonly help: string
  private readonly bounds: readonly number[]

  constructor (name: string, help: string, bounds: readonly number[]) {
    this.name = name
    this.help = help
    this.bounds = bounds
  }

  observe (method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`
    let series = this.#series.get(key)
    if (series === undefined) {
      series = { labels: { method, route, status_code: status }, counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 }
      this.#series.set(key, series)
    }
    let bucket = 0
    while (bucket < this.bounds.length && seconds > this.bounds[bucket]!) bucket++
    series.counts[bucket]!++
    series.sum += seconds
    series.count++
  }

  async get () {
    const values = []
    for (const { labels, counts, sum, count } of this.#series.values()) {
      let cumulative = 0
      for (const [i, le] of this.bounds.entries()) {
        cumulative += counts[i]!
        values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le }, value: cumulative })
      }
      values.push(
        { metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: count },
        { metricName: `${this.name}_sum`, labels, value: sum },
        { metricName: `${this.name}_count`, labels, value: count }
      )
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }

  /** As the registry takes it: its types list prom-client's own classes only, though it asks no more than the above. */
  asMetric (): Metric {
    return this as unknown as Metric
  }
}
