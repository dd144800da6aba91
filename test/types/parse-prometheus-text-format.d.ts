// The package ships no types; its output is prom2json's: values as strings.
declare module 'parse-prometheus-text-format' {
  export interface Sample {
    labels?: Record<string, string>
    value?: string
    /** Histograms: the cumulative count of each bucket, by its upper bound (`le`). */
    buckets?: Record<string, string>
    count?: string
    sum?: string
  }
  export interface MetricFamily {
    name: string
    help: string
    type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED'
    metrics: Sample[]
  }
  export default function parsePrometheusTextFormat (text: string): MetricFamily[]
}
