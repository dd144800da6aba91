import t from 'tap'
/* eslint-disable no-control-regex -- a terminal's line is redrawn with control characters, which these tests read */
import { Progress } from '../../scripts/progress.js'

/** A stand-in for standard error: what was written, and whether it is a terminal. */
const output = (isTTY: boolean) => {
  const written: string[] = []
  return { written, stream: { isTTY, write: (text: string) => written.push(text) } as unknown as NodeJS.WriteStream }
}

t.test('on a terminal: one line redrawn, a bar, rows, rate and time left', async t => {
  const { written, stream } = output(true)
  const progress = new Progress('importing a.csv', 1000, stream)
  await new Promise(resolve => setTimeout(resolve, 20))
  progress.update(250)
  progress.update(500)
  progress.note('sent')
  progress.finish('answered 200')
  t.equal(written.length, 4, 'every update drawn')
  t.match(written[0], /^\r\x1b\[Kimporting a\.csv █{6} {18} 25% 250 rows · [\d,]+ rows\/s · \d+:\d\d left$/)
  t.match(written[1], / 50% 500 rows/)
  t.equal(written[2], '\r\x1b[Kimporting a.csv: sent')
  t.match(written[3], /^\r\x1b\[Kimporting a\.csv: answered 200 in 0:00\n$/)
})

t.test('elsewhere: a plain line at most every two seconds; no total, no bar nor time left', async t => {
  const { written, stream } = output(false)
  const progress = new Progress('exporting students', undefined, stream)
  progress.update(10)
  progress.update(20)
  t.same(written.length, 1, 'the second, too soon, is not written')
  t.match(written[0], /^exporting students: 10 rows, [\d,]+ rows\/s\n$/)
})

t.test('the cases between: a terminal with no total, a plain line with one, an hour left', async t => {
  const terminal = output(true)
  new Progress('exporting students', undefined, terminal.stream).update(5)
  t.match(terminal.written[0], /^\r\x1b\[Kexporting students 5 rows · [\d,]+ rows\/s$/, 'no bar, no time left')
  const plain = output(false)
  const progress = new Progress('importing big.csv', 10_000_000, plain.stream)
  await new Promise(resolve => setTimeout(resolve, 20))
  progress.update(1, 1)
  t.match(plain.written[0], /^importing big\.csv: 0%, 1 rows, [\d,]+ rows\/s, \d+:\d\d:\d\d left\n$/, 'hours')
  const none = output(false)
  new Progress('importing empty.csv', 0, none.stream).update(0)
  t.match(none.written[0], /^importing empty\.csv: 0%, 0 rows, 0 rows\/s\n$/, 'an empty file: no time left to tell')
})
