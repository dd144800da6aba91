/** A horizontal bar chart of requests per second, as an SVG document. */
export function barChart (title: string, rows: { label: string, value: number, colour: string }[]): string {
  const width = 900
  const barHeight = 18
  const gap = 6
  const left = 330
  const top = 40
  const max = Math.max(...rows.map(row => row.value), 1)
  const height = top + rows.length * (barHeight + gap) + 20
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;')
  const bars = rows.map((row, i) => {
    const y = top + i * (barHeight + gap)
    const w = Math.max(1, Math.round((row.value / max) * (width - left - 90)))
    return `<text x="${left - 8}" y="${y + 13}" text-anchor="end">${escape(row.label)}</text>` +
      `<rect x="${left}" y="${y}" width="${w}" height="${barHeight}" fill="${row.colour}"/>` +
      `<text x="${left + w + 6}" y="${y + 13}">${Math.round(row.value)}</text>`
  }).join('\n')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="22" font-size="15" font-weight="bold">${escape(title)}</text>
${bars}
</svg>
`
}
