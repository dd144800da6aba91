import type { Test } from 'tap'
import parsePrometheusTextFormat, { type MetricFamily, type Sample } from 'parse-prometheus-text-format'

export interface Scrape {
  /** The metric families, as the parser makes them. */
  families: Map<string, MetricFamily>
  /** Every sample under its own name (`…_bucket`, `…_count`, `…_sum` of a histogram too), with its labels. */
  samples: Map<string, Sample[]>
}

/**
 * Scrapes a metrics listener over HTTP and parses the text. The parser merges a
 * histogram's samples into one object per family and, for a histogram with labels, loses
 * them all; read as untyped, each of its series comes under its own name with its labels.
 */
export async function scrape (t: Test, url: string): Promise<Scrape> {
  const res = await fetch(url)
  t.equal(res.status, 200, 'the scrape is answered')
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/, 'in the Prometheus text format')
  const text = await res.text()
  const untyped = text.replace(/^# TYPE (\S+) (histogram|summary)$/gm, '# TYPE $1 untyped')
  // Series of one histogram follow each other: `…_bucket` comes again after each `…_count`.
  const samples = new Map<string, Sample[]>()
  for (const { name, metrics } of parsePrometheusTextFormat(untyped)) samples.set(name, [...samples.get(name) ?? [], ...metrics])
  return { families: new Map(parsePrometheusTextFormat(text).map(family => [family.name, family])), samples }
}

/** The samples of `name` whose labels include `labels`. */
export const series = ({ samples }: Scrape, name: string, labels: Record<string, string> = {}): Sample[] =>
  (samples.get(name) ?? []).filter(sample => Object.entries(labels).every(([label, value]) => sample.labels?.[label] === value))
/** The value of the one sample of `name` with `labels`; NaN if there is none. */
export const value = (scrape: Scrape, name: string, labels: Record<string, string> = {}) => Number(series(scrape, name, labels)[0]?.value)
